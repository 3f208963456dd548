"""The hostile corpus of test_corpus.py, graded under the audit hook alone (the grading sandbox on
a machine with neither bubblewrap nor Landlock), in a module of its own so that pytest-xdist grades
it beside the other layers. Where a stronger layer works, only the learners whose outcome depends
on the layer (SANDBOX_CASES) are graded here, once; where none does, this module grades the whole
corpus, three times, as test_corpus.py does."""
import pytest

from coursekit.judge import sandbox
from tests.test_corpus import *  # noqa: F401,F403 - the same tests, collected here too
from tests.test_corpus import ALL_CASES, assert_score_and_explanation, graded_corpus, students_for

LAYER = sandbox.AUDIT
STUDENTS = students_for(LAYER)


@pytest.fixture(scope="module", params=[LAYER], ids=["fallback"])
def corpus(request, tmp_path_factory):
    yield from graded_corpus(request.param, tmp_path_factory, STUDENTS)


@pytest.mark.parametrize("student", STUDENTS)
def test_score_and_explanation(corpus, student):
    assert_score_and_explanation(corpus, student)


if STUDENTS != ALL_CASES:  # the layer plays no part in these: the strongest layer's module runs them
    del test_a_replaced_channel_fails_every_hidden_test_with_a_hint_that_says_so  # noqa: F821
    del test_grading_is_deterministic_serial_or_parallel  # noqa: F821 (the corpus graded again, serial and parallel)
