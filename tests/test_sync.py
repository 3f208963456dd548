"""One source for everything: course/ and solutions/reference/ are regenerated from source/ and
must match what is committed; notebooks are committed without outputs."""
import json

import pytest

from coursekit import reference
from coursekit.paths import COURSE, REPO, SOURCE, assignments
from tests.support.e2e import assert_release_is_committed


def test_reference_modules_match_source_notebooks():
    assert reference.main(["--check"]) == 0, "solutions/reference/ drifted from source/: run `make sync`"


@pytest.mark.parametrize("assignment", assignments())
def test_course_release_matches_nbgrader_output(assignment, released):
    """What stock nbgrader generates from source/ (the session's `released` course root: every
    assignment, one process, as `make release`) is what course/ holds."""
    assert_release_is_committed(released / "course" / assignment, assignment)


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
