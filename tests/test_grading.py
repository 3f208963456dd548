"""End to end with stock nbgrader (generate_assignment, autograde, generate_feedback, export):
the reference gets full marks, the release gets 0 without breaking the run, answers written
differently get full marks, and each known mistake loses its points with its hint."""
import csv
import json

import pytest

from tests.conftest import A01, CLASS_01


def by_exercise(result):
    out = {}
    for cell in result.cells:
        got, total, hints = out.get(cell.exercise, (0.0, 0.0, []))
        out[cell.exercise] = (got + cell.score, total + cell.max_score, hints + ([cell.hint] if cell.hint else []))
    return out


def test_every_learner_was_graded(graded):
    assert graded["run"].returncode == 0, graded["run"].stderr[-2000:]
    assert set(graded["results"]) == set(CLASS_01)
    for result in graded["results"].values():
        assert not result.error and result.max_score == 12, (result.student, result.error)


@pytest.mark.parametrize("student", ["reference", "alternate", "loops", "noisy"])
def test_correct_answers_get_full_marks(graded, student):
    result = graded["results"][student]
    failing = [(c.grade_id, c.hint) for c in result.cells if c.score < c.max_score]
    assert result.score == result.max_score, failing


def test_release_scores_zero_with_stub_hints(graded):
    result = graded["results"]["blank"]
    assert result.score == 0
    assert all("not implemented yet" in c.hint for c in result.cells)


@pytest.mark.parametrize("student, exercise, phrase", [
    ("wrong_exponent", "accepted_pmf", "truncation"),
    ("wrong_exponent", "expected_tokens", "exponent K instead of K+1"),
    ("wrong_exponent", "simulate_tokens", "counts accepted drafts"),
    ("wrong_k_alpha", "expected_tokens", "K*alpha"),
    ("wrong_k_alpha", "simulate_tokens", "more than K+1"),
    ("wrong_accepted_only", "expected_tokens", "counts only the accepted drafts"),
])
def test_known_mistakes_lose_points_with_hint(graded, student, exercise, phrase):
    got, total, hints = by_exercise(graded["results"][student])[exercise]
    assert got < total
    assert any(phrase in h for h in hints), hints


def test_one_mistake_does_not_cost_unrelated_points(graded):
    scores = by_exercise(graded["results"]["wrong_accepted_only"])
    assert scores["accepted_pmf"][0] == scores["accepted_pmf"][1]
    assert scores["simulate_tokens"][0] == scores["simulate_tokens"][1]


def test_warnings_never_reach_a_graded_cell(graded):
    """nbgrader scores a cell with stderr output 0: the noisy learner's warnings must be dropped."""
    for student in ("reference", "alternate", "loops", "noisy"):
        nb = json.loads((graded["root"] / "autograded" / student / A01 / f"{A01}.ipynb").read_text())
        for cell in nb["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
                assert not [o for o in cell.get("outputs", []) if o.get("name") == "stderr"], cell["source"]


def test_feedback_and_export(graded):
    assert graded["feedback"].returncode == 0, graded["feedback"].stderr[-2000:]
    html = graded["root"] / "feedback" / "reference" / A01 / f"{A01}.html"
    assert html.exists()
    assert graded["export"].returncode == 0, graded["export"].stderr[-2000:]
    rows = list(csv.DictReader((graded["root"] / "grades.csv").open()))
    scores = {r["student_id"]: float(r["score"]) for r in rows}
    assert scores["reference"] == 12 and scores["blank"] == 0


def test_release_directory_is_course(graded):
    assert (graded["root"] / "course" / A01 / f"{A01}.ipynb").exists()
