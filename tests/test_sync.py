"""One source for everything: course/ and solutions/reference/ are regenerated from source/ and
must match what is committed; notebooks are committed without outputs."""
import filecmp
import json

import pytest

from coursekit import reference
from coursekit.grading.scratch import ScratchCourse
from coursekit.paths import COURSE, REPO, SOURCE, assignments


def test_reference_modules_match_source_notebooks():
    assert reference.main(["--check"]) == 0, "solutions/reference/ drifted from source/: run `make sync`"


def assert_release_is_committed(fresh, assignment):
    """`fresh` (a folder nbgrader generate_assignment just wrote) is what course/<assignment> holds."""
    committed = COURSE / assignment
    fresh_files = sorted(p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file())
    committed_files = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert fresh_files == committed_files, "course/ has different files: run `make release`"
    for rel in fresh_files:
        assert filecmp.cmp(fresh / rel, committed / rel, shallow=False), f"course/{assignment}/{rel} drifted: run `make release`"


@pytest.mark.slow  # one nbgrader run per assignment; the fast tier checks 01's release in test_grading_one.py
@pytest.mark.parametrize("assignment", assignments())
def test_course_release_matches_nbgrader_output(assignment, tmp_path):
    assert_release_is_committed(ScratchCourse(tmp_path).generate(assignment), assignment)


def test_every_assignment_is_released():
    assert sorted(p.name for p in COURSE.iterdir() if p.is_dir()) == assignments()


@pytest.mark.parametrize("path", sorted(SOURCE.rglob("*.ipynb")) + sorted(COURSE.rglob("*.ipynb")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_notebooks_are_stripped(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, cell["source"][:3]


def test_generate_works_run_by_the_environments_python_without_activating_it(tmp_path):
    """`.venv/bin/python -m coursekit.batch generate` with the environment's scripts off PATH (no make, no
    activation) and no gradebook yet: nbgrader's new gradebook runs `alembic` by name, which must be found."""
    import os
    import subprocess
    import sys

    from coursekit.grading.scratch import scratch_root

    scratch_root(tmp_path)
    assert not (tmp_path / "gradebook.db").exists()
    here = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != here)
    proc = subprocess.run([sys.executable, "-m", "coursekit.batch", "generate", "01_acceptance_chain"], cwd=tmp_path,
                          env={**os.environ, "PATH": path}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "course" / "01_acceptance_chain").is_dir()
