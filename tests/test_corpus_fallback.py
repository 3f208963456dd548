"""The hostile corpus of tests/support/corpus.py, graded under the audit hook alone (the grading sandbox on
a machine with neither bubblewrap nor Landlock), in a module of its own so that pytest-xdist grades
it beside the other layers. Where a stronger layer works, only the learners whose outcome this
layer decides differently (AUDIT_CASES) are graded here, once; where none does, this module grades
the whole corpus, three times, as test_corpus.py does."""
from coursekit.judge import layers
from tests.support.corpus import *  # noqa: F401,F403 - the same tests, collected here too
from tests.support.corpus import grade_under

grade_under(layers.AUDIT, globals())
