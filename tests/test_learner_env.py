"""A cohort's learner environment holds no answers (issue 14): built from `learner/` as
`make learner-env` builds it, a kernel there can neither import nor find the reference
solutions, the checkers or the grading tools, and every released notebook runs in it up to its
first exercise.

Nothing is downloaded: the third-party packages are this environment's own, linked one by one
into the new one (this course's own installation left out), and the learner package is built
from a copy of `learner/` with pip, offline, as `make learner-env` installs it (tests/support/learner_env.py).
"""
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from coursekit.paths import REPO, assignments
from tests.support import learner_env

ANSWERS = ("solutions", "solutions.reference", "solutions.checks", "coursekit")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return learner_env.build(tmp_path_factory.mktemp("learner-env"))


def _run(env, nb, cwd: Path, timeout: int = 120):
    km = KernelManager(kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(env["kernels"])]), kernel_name="learner")
    NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


PROBE = """
import importlib.util, json, os, sys
found = {}
for name in %r:
    try:
        found[name] = importlib.util.find_spec(name) is not None
    except ImportError:  # the parent package is missing
        found[name] = False
leaks = []
for entry in sys.path:
    if not entry or not os.path.isdir(entry):
        continue
    for name in os.listdir(entry):  # the environment's own files: installed packages, .pth files, finders
        if any(k in name.lower() for k in ("solutions", "coursekit", "__editable__", "specdec_course")):
            leaks.append(os.path.join(entry, name))
        path = os.path.join(entry, name)
        if name.endswith((".pth", ".py")) and os.path.isfile(path) and %r in open(path, errors="replace").read():
            leaks.append(path)
import specdec
print(json.dumps({"found": found, "leaks": leaks, "specdec": specdec.__file__, "executable": sys.executable}))
"""


def test_a_learner_kernel_can_neither_import_nor_find_the_answers(env, tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE % (ANSWERS, str(REPO)))])
    out = _run(env, nb, tmp_path).cells[0].outputs
    result = json.loads(next(o["text"] for o in out if o.get("name") == "stdout"))
    assert result["executable"].startswith(str(env["dest"])), result
    assert not any(result["found"].values()), result["found"]
    assert not result["leaks"], result["leaks"]
    assert Path(result["specdec"]).resolve().is_relative_to(env["site"].resolve()), result["specdec"]
    record = next(env["site"].glob("specdec_learner-*.dist-info")) / "RECORD"
    assert all(line.startswith(("specdec/", "specdec_learner-")) for line in record.read_text().splitlines()), \
        record.read_text()


@pytest.mark.parametrize("assignment", assignments())
def test_a_released_notebook_runs_in_it_up_to_its_first_exercise(env, tmp_path, assignment):
    folder = tmp_path / assignment
    shutil.copytree(REPO / "course" / assignment, folder)
    nb = nbformat.read(folder / f"{assignment}.ipynb", as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution"))
    assert any(c.cell_type == "code" for c in nb.cells[:first]), "nothing runs before the first exercise"
    nb.cells = nb.cells[:first]
    _run(env, nb, folder)  # raises CellExecutionError on the first cell that fails
