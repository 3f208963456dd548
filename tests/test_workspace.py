"""The learner's workspace: copied once, never overwriting the learner's changes, and
`make check` grading it."""
import pytest

from coursekit import workspace
from coursekit.check import grade_workspace, report
from coursekit.paths import COURSE, SOURCE
from tests.notebooks import with_reference_answers


def make_course(root, text):
    (root / "01_x").mkdir(parents=True, exist_ok=True)
    (root / "01_x" / "01_x.ipynb").write_text(text)
    return root


def test_first_sync_copies_everything(tmp_path):
    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    for src in COURSE.rglob("*.ipynb"):
        assert (ws / src.relative_to(COURSE)).read_bytes() == src.read_bytes()


def test_unchanged_file_is_updated_changed_file_is_kept(tmp_path):
    course = make_course(tmp_path / "course", "v1")
    ws = tmp_path / "ws"
    workspace.sync(course, ws)
    make_course(course, "v2")
    messages = workspace.sync(course, ws)
    assert (ws / "01_x" / "01_x.ipynb").read_text() == "v2"
    assert any(m.startswith("updated") for m in messages)

    (ws / "01_x" / "01_x.ipynb").write_text("my answers")
    assert workspace.sync(course, ws) == []  # course unchanged: nothing to say, nothing touched
    make_course(course, "v3")
    messages = workspace.sync(course, ws)
    assert (ws / "01_x" / "01_x.ipynb").read_text() == "my answers"
    assert (ws / "01_x" / "01_x.course-update.ipynb").read_text() == "v3"
    assert any("KEPT your 01_x/01_x.ipynb" in m and "01_x.course-update.ipynb" in m for m in messages)


def test_deleted_notebook_comes_back(tmp_path):
    course = make_course(tmp_path / "course", "v1")
    ws = tmp_path / "ws"
    workspace.sync(course, ws)
    (ws / "01_x" / "01_x.ipynb").unlink()
    workspace.sync(course, ws)
    assert (ws / "01_x" / "01_x.ipynb").read_text() == "v1"


A01 = "01_acceptance_chain"


@pytest.mark.slow  # grades a notebook in a kernel, as `make check` does
def test_check_untouched_workspace_scores_zero_with_hints(tmp_path):
    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    text = report(grade_workspace(ws, [A01]))
    assert "TOTAL 0/12" in text
    assert "not implemented yet" in text


@pytest.mark.slow  # grades a notebook in a kernel, as `make check` does
def test_check_workspace_with_reference_answers_scores_full(tmp_path):
    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    nb = ws / A01 / f"{A01}.ipynb"
    with_reference_answers(nb, SOURCE / A01 / f"{A01}.ipynb", nb)
    text = report(grade_workspace(ws, [A01]))
    assert "TOTAL 12/12" in text, text


@pytest.mark.slow  # grades a notebook in a kernel, as `make check` does
def test_check_describes_failures_as_make_grade_does(tmp_path):
    """`make check` and `make grade` share one classifier: a kernel that dies is reported to the
    learner in the instructor's words, with what the integrity scan saw."""
    import nbformat

    from coursekit.nbg import DEAD

    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    nb_path = ws / A01 / f"{A01}.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "accepted_pmf")
    cell.source = "import os\nos._exit(0)\n" + cell.source
    nbformat.write(nb, nb_path)
    text = report(grade_workspace(ws, [A01]))
    assert f"not graded: {DEAD}" in text, text
    assert "the instructor will see: exits the kernel" in text, text
