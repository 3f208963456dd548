"""The fast tier's end-to-end run: notebook 01's class through stock nbgrader (generate_assignment,
autograde, generate_feedback, export; the session's `graded_01`, which `make test` shares with
test_grading.py), checked for the reference, the release and the learner who fails every hidden
test, and nbgrader validate (the lab's Validate button) on the release and on the reference."""
import nbformat
import pytest

from coursekit import registry
from coursekit.reference import with_reference_answers
from tests.support.e2e import (STUB_HINT, assert_graded_as_catalogued, assert_hidden_tests_stay_hidden,
                                assert_release_is_committed, derived_class)

A = "01_acceptance_chain"
# of 01's derived class: the reference, the release, and the learner who fails every hidden test
CLASS = {s: learner for s, learner in derived_class(A).items() if s in ("reference", "blank", "wrong_first")}


@pytest.fixture(scope="module")
def one(graded_01):
    return graded_01


def test_class_of_01_is_graded_as_catalogued(one):
    assert one["run"].returncode == 0 and one["feedback"].returncode == 0 and one["export"].returncode == 0
    results = one["results"]
    assert results["blank"].score == 0 and all(STUB_HINT in c.hint for c in results["blank"].cells)
    for student, learner in CLASS.items():
        assert_graded_as_catalogued(results[student], A, learner)
    hidden = {c.grade_id for c in registry.read(A).hidden}
    failed = {c.grade_id for c in results["wrong_first"].cells if c.score < c.max_score and c.hint}
    assert hidden <= failed, hidden - failed
    assert (one["root"] / "grades.csv").exists()
    assert_release_is_committed(one["root"] / "course" / A, A)
    assert_hidden_tests_stay_hidden(one["root"], A, CLASS)


def test_validate_fails_a_blank_notebook_and_passes_the_reference(one):
    """What the lab's Validate button runs (nbgrader validate under the course's configuration):
    an untouched notebook fails, naming the missing implementation; the reference passes, also
    with a cell that writes a RuntimeWarning. The
    visible tests carry no points, so only c.Validator.validate_all makes their failures count."""
    release = one["root"] / "course" / A / f"{A}.ipynb"
    blank = one["course"].nbgrader("validate", str(release), check=False)
    assert "VALIDATION FAILED" in blank.stdout and "NotImplementedError" in blank.stdout, blank.stdout[-2000:]
    reference = with_reference_answers(release, one["root"] / "source" / A / f"{A}.ipynb",
                                       one["root"] / "tmp" / "validate" / f"{A}.ipynb")
    nb = nbformat.read(reference, as_version=4)  # a warning is not a failure (grading drops them too)
    nb.cells.append(nbformat.v4.new_code_cell("import numpy as np\nnp.where([True], np.ones(1) / np.zeros(1), 0.0)"))
    nbformat.write(nb, reference)
    done = one["course"].nbgrader("validate", str(reference), check=False)
    assert "Success! Your notebook passes all the tests." in done.stdout, done.stdout[-2000:]


@pytest.mark.slow
def test_make_grade_runs_the_left_out_cells_with_nbgraders_own_setting(tmp_path, released):
    """`make grade ARGS=--run-measurements` (grade(..., run_measurements=True)) passes nbgrader's
    --JudgedExecute.run_measurements=True to the learner's nbgrader process: the cells grading
    otherwise leaves out run, and the grade is the same."""
    import nbformat

    from coursekit.grading.cohort import grade_course as grade
    from coursekit.judge.messages import SKIPPED
    from tests.support.shared import copy_course

    A = "01_acceptance_chain"
    notes = {}
    for flag in (False, True):
        root = tmp_path / str(flag)
        course = copy_course(released, root)
        release = root / "course" / A / f"{A}.ipynb"
        course.submit("ada", A, with_reference_answers(release, root / "source" / A / f"{A}.ipynb",
                                                       root / "tmp" / f"{A}.ipynb"), f"{A}.ipynb")
        rows = grade(root, [A], jobs=1, run_measurements=flag)
        assert rows[0].score == rows[0].max_score
        out = nbformat.read(root / "autograded" / "ada" / A / f"{A}.ipynb", as_version=4)
        notes[flag] = sum(any(o.get("text") == SKIPPED for o in c.get("outputs", [])) for c in out.cells
                          if c.cell_type == "code")
    assert notes[False] > 0 and notes[True] == 0, notes
