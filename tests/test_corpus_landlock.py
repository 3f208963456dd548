"""The hostile corpus of test_corpus.py, graded under Landlock with the audit hook (the grading
sandbox where bubblewrap cannot run: coursekit.judge.landlock), in a module of its own so that
pytest-xdist grades it beside the other layers. Skipped, with the reason, where this Linux kernel
has no Landlock (CI requires it: COURSE_SANDBOX_REQUIRE). Where bubblewrap works too, only the
learners whose outcome depends on the layer (SANDBOX_CASES) are graded here, once."""
import pytest

from coursekit.judge import sandbox
from tests.test_corpus import *  # noqa: F401,F403 - the same tests, collected here too
from tests.test_corpus import ALL_CASES, assert_score_and_explanation, graded_corpus, layer_param, students_for

LAYER = sandbox.LANDLOCK
STUDENTS = students_for(LAYER)


@pytest.fixture(scope="module", params=[layer_param(LAYER)], ids=["landlock"])
def corpus(request, tmp_path_factory):
    yield from graded_corpus(request.param, tmp_path_factory, STUDENTS)


@pytest.mark.parametrize("student", STUDENTS)
def test_score_and_explanation(corpus, student):
    assert_score_and_explanation(corpus, student)


if STUDENTS != ALL_CASES:  # the layer plays no part in these: the strongest layer's module runs them
    del test_a_replaced_channel_fails_every_hidden_test_with_a_hint_that_says_so  # noqa: F821
    del test_grading_is_deterministic_serial_or_parallel  # noqa: F821 (the corpus graded again, serial and parallel)
