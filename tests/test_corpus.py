"""The hostile corpus (tests/support/corpus.py: the cases, the rules and the tests) graded under
bubblewrap, the strongest sandbox layer: the whole corpus, where bubblewrap works (skipped, with the
reason, where it does not; CI requires it: COURSE_SANDBOX_REQUIRE)."""
from coursekit.judge import layers
from tests.support.corpus import *  # noqa: F401,F403 - the tests, collected here
from tests.support.corpus import grade_under

grade_under(layers.BWRAP, globals())
