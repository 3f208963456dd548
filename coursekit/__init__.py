"""Course tooling (instructors and CI, not learners): the reference modules generated from the
source notebooks, the nbgrader pipeline in a scratch course root, the learner's workspace and
`make check`."""
