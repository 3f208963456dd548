"""End to end with stock nbgrader (generate_assignment, autograde, generate_feedback, export) on
every assignment's class derived from its answer catalogue (tests/support/e2e.py:derived_class): the
reference gets full marks, the release gets 0 with stub hints without breaking the run, answers
written differently get full marks, and each wrong answer loses its exercise's points (and no
other exercise's) with its hint. Every catalogued answer is also checked in process by
tests/test_checkers.py; this file shows that the notebooks grade them the same way."""
import csv
import json

import pytest

from coursekit import registry
from tests.support.e2e import CLASSES, STUB_HINT, all_correct, assert_graded_as_catalogued, assert_hidden_tests_stay_hidden

LEARNERS = [(a, s) for a, learners in CLASSES.items() for s in learners]
FULL_MARKS = [(a, s) for a, s in LEARNERS if CLASSES[a][s] is None or all_correct(a, CLASSES[a][s])]


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_every_learner_was_graded(graded, assignment):
    g = graded[assignment]
    assert g["run"].returncode == 0, g["run"].stderr[-2000:]
    assert set(g["results"]) == set(CLASSES[assignment])
    max_score = registry.read(assignment).max_score
    for result in g["results"].values():
        assert not result.error and result.max_score == max_score, (result.student, result.error)


@pytest.mark.parametrize("assignment, student", LEARNERS)
def test_learner_is_graded_as_catalogued(graded, assignment, student):
    result = graded[assignment]["results"][student]
    assert_graded_as_catalogued(result, assignment, CLASSES[assignment][student])
    if (assignment, student) in FULL_MARKS:
        assert result.score == result.max_score


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_release_scores_zero_with_stub_hints(graded, assignment):
    result = graded[assignment]["results"]["blank"]
    assert result.score == 0
    assert all(STUB_HINT in c.hint for c in result.cells), [c.hint for c in result.cells]


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_wrong_learner_fails_every_hidden_test_with_a_hint(graded, assignment):
    """The learner made of each exercise's first wrong answer loses points in every exercise."""
    result = graded[assignment]["results"]["wrong_first"]
    failed = {c.exercise for c in result.cells if c.score < c.max_score and c.hint}
    assert failed == set(registry.read(assignment).exercises)


def test_some_learner_has_one_mistake_only():
    """So that test_learner_is_graded_as_catalogued shows a mistake costs no unrelated points."""
    from tests.support.e2e import outcomes
    mixed = [(a, s) for a, s in LEARNERS if CLASSES[a][s]
             and 0 < sum(bool(v) for v in outcomes(a, CLASSES[a][s]).values()) < len(registry.read(a).exercises)]
    assert len({a for a, _ in mixed}) >= 2, mixed


@pytest.mark.parametrize("assignment, student", FULL_MARKS)
def test_warnings_never_reach_a_graded_cell(graded, assignment, student):
    """nbgrader scores a cell with stderr output 0: e.g. the noisy learner's warnings must be dropped."""
    nb = json.loads((graded[assignment]["root"] / "autograded" / student / assignment / f"{assignment}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            assert not [o for o in cell.get("outputs", []) if o.get("name") == "stderr"], cell["source"]


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_feedback_generated(graded, assignment):
    g = graded[assignment]
    assert g["feedback"].returncode == 0, g["feedback"].stderr[-2000:]
    for student in CLASSES[assignment]:
        assert (g["root"] / "feedback" / student / assignment / f"{assignment}.html").exists()


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_export_csv(graded, assignment):
    g = graded[assignment]
    assert g["export"].returncode == 0, g["export"].stderr[-2000:]
    rows = list(csv.DictReader((g["root"] / "grades.csv").open()))
    scores = {r["student_id"]: float(r["score"]) for r in rows if r["assignment"] == assignment}
    assert scores == {s: r.score for s, r in g["results"].items()}
    assert scores["reference"] == registry.read(assignment).max_score and scores["blank"] == 0


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_release_directory_is_course(graded, assignment):
    assert (graded[assignment]["root"] / "course" / assignment / f"{assignment}.ipynb").exists()


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_hidden_tests_stay_hidden(graded, assignment):
    assert_hidden_tests_stay_hidden(graded[assignment]["root"], assignment, CLASSES[assignment])


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_reference_notebook_runs_without_an_error(graded, assignment):
    """While grading, the measurement and demo cells (and 02's explorer) are not run: every other
    cell of the reference's autograded notebook still runs without an error (no cell reads a
    skipped cell's results: a NameError would not cost points, so only this test would notice),
    and each skipped cell, every tagged cell here, shows the note instead."""
    from coursekit.judge.messages import SKIPPED

    nb = json.loads((graded[assignment]["root"] / "autograded" / "reference" / assignment / f"{assignment}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    errors = [c["source"][:80] for c in code if any(o["output_type"] == "error" for o in c.get("outputs", []))]
    assert not errors, errors
    for cell in code:
        skipped = bool({"measurement", "demo", "explorer"} & set(cell.get("metadata", {}).get("tags", [])))
        texts = ["".join(o.get("text", "")) for o in cell.get("outputs", [])]  # stored text: a list of lines
        assert (texts == [SKIPPED]) == skipped, (cell["source"][:80], texts)
