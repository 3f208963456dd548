"""The hostile corpus of tests/support/corpus.py, graded under Landlock with the audit hook (the grading
sandbox where bubblewrap cannot run: coursekit.judge.landlock), in a module of its own so that
pytest-xdist grades it beside the other layers. Skipped, with the reason, where this Linux kernel
has no Landlock (CI requires it: COURSE_SANDBOX_REQUIRE). Where bubblewrap works too, only the
learners whose outcome depends on the layer (SANDBOX_CASES) are graded here, once."""
from coursekit.judge import layers
from tests.support.corpus import *  # noqa: F401,F403 - the same tests, collected here too
from tests.support.corpus import grade_under

grade_under(layers.LANDLOCK, globals())
