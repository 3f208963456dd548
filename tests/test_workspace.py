"""The learner's workspace: copied once, never overwriting the learner's changes, and
`make check` grading it."""
import pytest

from coursekit import workspace
from coursekit.check import check, course_points, grade_workspace, not_started, resolve
from coursekit.grading.report import learner_report as report
from coursekit.paths import COURSE, SOURCE
from coursekit.reference import with_reference_answers


def make_course(root, text):
    (root / "01_x").mkdir(parents=True, exist_ok=True)
    (root / "01_x" / "01_x.ipynb").write_text(text)
    return root


def test_first_sync_copies_everything(tmp_path):
    """Every file, notebooks with the kernel's language_info (what JupyterLab would write into them) and
    nothing else changed."""
    import nbformat

    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    info = workspace.kernel_language_info()
    assert set(info) >= {"name", "version", "codemirror_mode", "pygments_lexer"}
    for src in COURSE.rglob("*"):
        if src.is_file() and src.suffix != ".ipynb":
            assert (ws / src.relative_to(COURSE)).read_bytes() == src.read_bytes()
    for src in COURSE.rglob("*.ipynb"):
        mine = nbformat.read(ws / src.relative_to(COURSE), as_version=4)
        theirs = nbformat.read(src, as_version=4)
        assert mine.metadata.pop("language_info") == info
        theirs.metadata.pop("language_info")
        assert mine == theirs


def test_a_new_python_updates_untouched_notebooks_silently(tmp_path):
    """Another kernel version (a rebuilt environment) rewrites the language_info of notebooks the learner never
    touched, without a word, and leaves a changed notebook alone: the course did not change."""
    import nbformat

    ws = tmp_path / "ws"
    old, new = {"name": "python", "version": "3.11.2"}, {"name": "python", "version": "3.11.9"}
    workspace.sync(COURSE, ws, language_info=old)
    mine = ws / "02_cost_and_speedup" / "02_cost_and_speedup.ipynb"
    mine.write_text(mine.read_text().replace("raise NotImplementedError()", "return 1.0", 1))
    assert workspace.sync(COURSE, ws, language_info=new) == []
    assert nbformat.read(ws / "01_acceptance_chain" / "01_acceptance_chain.ipynb", 4).metadata.language_info == new
    assert nbformat.read(mine, 4).metadata.language_info == old
    assert not list(ws.rglob("*.course-update.ipynb"))


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


def test_check_takes_notebooks_by_number_or_name():
    known = ["01_acceptance_chain", "02_cost_and_speedup", "10_later"]
    assert resolve(["01", "2", "10_later", "01_acceptance_chain"], known) == ["01_acceptance_chain", "02_cost_and_speedup", "10_later"]
    with pytest.raises(ValueError, match="give its number, one of 01, 02, 10"):
        resolve(["7"], known)


def test_untouched_notebooks_are_one_line_each_and_not_graded(tmp_path):
    """Nothing to grade in a notebook whose answer cells are as released: `make check` says so at once."""
    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    assert not_started(ws, A01) == 3
    lines = []
    assert check(ws, [A01, "02_cost_and_speedup"], out=lines.append) == (0.0, 0.0)
    assert lines == ["01_acceptance_chain: not started: 3 exercises", "02_cost_and_speedup: not started: 5 exercises",
                     f"TOTAL 0/0 over 0 notebooks graded, 0/{course_points():g} of the whole course; not started: 01, 02"]


def test_a_changed_answer_cell_starts_a_notebook_and_a_run_alone_does_not(tmp_path):
    import nbformat

    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    path = ws / A01 / f"{A01}.ipynb"
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # outputs and execution counts are not answers
        if cell.cell_type == "code":
            cell.execution_count = 1
            cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(nb, path)
    assert not_started(ws, A01) == 3
    next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "expected_tokens").source += "\n# mine"
    nbformat.write(nb, path)
    assert not_started(ws, A01) is None
    path.unlink()
    assert not_started(ws, A01) is None  # grading says what is missing


@pytest.mark.slow  # grades a notebook in a kernel, as `make check` does
def test_check_workspace_with_reference_answers_scores_full(tmp_path):
    ws = tmp_path / "ws"
    workspace.sync(COURSE, ws)
    nb = ws / A01 / f"{A01}.ipynb"
    with_reference_answers(nb, SOURCE / A01 / f"{A01}.ipynb", nb)
    lines = []
    check(ws, [A01, "02_cost_and_speedup"], out=lines.append)
    assert lines[0] == "01_acceptance_chain: grading ..."
    assert lines[-2] == "02_cost_and_speedup: not started: 5 exercises"
    assert lines[-1] == f"TOTAL 12/12 over 1 notebook graded, 12/{course_points():g} of the whole course; not started: 02", lines


@pytest.mark.slow  # grades a notebook in a kernel, as `make check` does
def test_check_describes_failures_as_make_grade_does(tmp_path):
    """`make check` and `make grade` share one classifier: a kernel that dies is reported to the
    learner in the instructor's words, with what the integrity scan saw."""
    import nbformat

    from coursekit.grading.results import DEAD

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
