"""The fast tier's end-to-end run: one small class of notebook 01 through stock nbgrader
(generate_assignment, autograde, generate_feedback, export), checked as test_grading.py checks
every assignment, and the release it generated is the committed course/01 (test_sync.py checks
every assignment's in the slow tier). About 40 s of CPU; `make test` runs test_grading.py on all."""
import pytest

from coursekit import registry
from tests import answers_01 as a01
from tests.e2e import STUB_HINT, assert_hidden_tests_stay_hidden, by_exercise, grade_classes, outcomes
from tests.test_sync import assert_release_is_committed

A = "01_acceptance_chain"
CLASS = {
    "reference": None,
    "blank": {},
    # fails every hidden test cell of 01, each with its hint
    "wrong_exponent": {"accepted_pmf": a01.pmf_untruncated, "expected_tokens": a01.expected_exponent_K,
                       "simulate_tokens": a01.simulate_accepted_count},
}


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    return grade_classes(tmp_path_factory.mktemp("course-root-01"), {A: CLASS})


def test_class_of_01_is_graded_as_catalogued(one):
    g = one["by_assignment"][A]
    assert g["run"].returncode == 0 and g["feedback"].returncode == 0 and one["export"].returncode == 0
    results = g["results"]
    assert results["blank"].score == 0 and all(STUB_HINT in c.hint for c in results["blank"].cells)
    for student, learner in CLASS.items():
        result = results[student]
        assert not result.error and result.max_score == registry.read(A).max_score, (student, result.error)
        if learner == {}:
            continue
        scores = by_exercise(result)
        for exercise, phrases in outcomes(A, learner).items():
            got, total, hints = scores[exercise]
            assert (got == total) if not phrases else (got < total and all(any(p in h for h in hints) for p in phrases)), \
                (student, exercise, phrases, hints)
    hidden = {c.grade_id for c in registry.read(A).hidden}
    failed = {c.grade_id for c in results["wrong_exponent"].cells if c.score < c.max_score and c.hint}
    assert hidden <= failed, hidden - failed
    assert (one["root"] / "grades.csv").exists()
    assert_release_is_committed(one["root"] / "course" / A, A)
    assert_hidden_tests_stay_hidden(one["root"], A, CLASS)
