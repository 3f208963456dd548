"""Grading with stock nbgrader, grouped by what each part does. `make check` (one learner,
coursekit.check) and `make grade` (a cohort, coursekit.grade) are command lines over it; the tests
and the benchmarks grade through it too, so a failure is described the same way to the learner
and to the instructor.

- config.py: a course root's nbgrader configuration, read as nbgrader reads it.
- driver.py: running nbgrader (`run`), and `grade_learner`, the one way the course grades a
  learner (preflight, one nbgrader process for their submissions: coursekit.batch, read,
  classify); `autograde_stock`, stock serial nbgrader, for the benchmark's "before".
- forkserver.py: each learner's driver forked from a warm process of its environment (Linux;
  SubmissionRunner.fork), instead of paying nbgrader's and the checkers' imports cold.
- scratch.py: scratch course roots (`scratch_root`) and `ScratchCourse` (generate, submit, grade, read).
- integrity.py: the preflight and the integrity scan of a submission's code.
- results.py: what nbgrader recorded (`CellResult`, `NotebookResult`), read and classified.
- bundle.py: what travels to the machine that grades a learner, and that learner's task.
- cohort.py: `grade_course`, a cohort serially or one task per learner on a Dask cluster.
- cluster.py: `LoopbackCluster`, a Dask cluster on 127.0.0.1 started as by hand (tests, benchmarks).
- gradebook.py and merge.py: recording graded learners in the course gradebook, in batches.
- report.py: what `make check` and `make grade` print.

The cell and kernel limits belong to the judge (coursekit.judge: JudgedExecute, SandboxKernelManager);
a submission's wall-clock limit to coursekit.batch.SubmissionRunner; all are set in grader_config.py.
This file imports nothing, so importing one part loads only what that part needs.
"""
