"""The hostile corpus of test_corpus.py, graded under the audit-hook fallback (the grading sandbox
on a machine without bubblewrap), in a module of its own so that pytest-xdist grades it beside
the bubblewrap run. Where bubblewrap works, only the learners whose outcome depends on the
sandbox layer (SANDBOX_CASES) are graded here, once; where it does not, test_corpus.py is
skipped and this module grades the whole corpus, three times, as test_corpus.py does."""
import pytest

from coursekit.judge import sandbox
from tests.test_corpus import *  # noqa: F401,F403 - the same tests, collected here too
from tests.test_corpus import ALL_CASES, SANDBOX_CASES, assert_score_and_explanation, graded_corpus, has_bubblewrap

STUDENTS = SANDBOX_CASES if has_bubblewrap() else ALL_CASES


@pytest.fixture(scope="module", params=[sandbox.AUDIT], ids=["fallback"])
def corpus(request, tmp_path_factory):
    yield from graded_corpus(request.param, tmp_path_factory, STUDENTS)


@pytest.mark.parametrize("student", STUDENTS)
def test_score_and_explanation(corpus, student):
    assert_score_and_explanation(corpus, student)


if STUDENTS != ALL_CASES:  # the layer plays no part in these: test_corpus.py runs them under bubblewrap
    del test_a_replaced_channel_fails_every_hidden_test_with_a_hint_that_says_so  # noqa: F821
    del test_grading_is_deterministic_serial_or_parallel  # noqa: F821 (the corpus graded again, serial and parallel)
