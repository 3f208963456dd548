"""Stock nbgrader, run in a scratch course root so that grading never touches the repository.

The scratch root holds copies of source/, nbgrader_config.py and grader_config.py, its own
gradebook, and submitted/<student>/<assignment>/ folders. The same
code serves `make check` (one learner: the workspace) and the test suite (many fake learners).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursekit.paths import GRADER_CONFIG, NBGRADER_CONFIG, SOURCE
from coursekit.reference import strip_markers

NBGRADER = [sys.executable, "-m", "nbgrader"]


@dataclass
class CellResult:
    grade_id: str
    score: float
    max_score: float
    hint: str = ""

    @property
    def exercise(self) -> str:
        """test_accepted_pmf__reference -> accepted_pmf"""
        name = self.grade_id.removeprefix("test_")
        return name.split("__")[0]


@dataclass
class NotebookResult:
    student: str
    assignment: str
    notebook: str
    cells: list[CellResult] = field(default_factory=list)
    error: str = ""  # set when nbgrader could not grade the notebook at all

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells)


class ScratchCourse:
    """A temporary nbgrader course root: generate, submit, autograde, read results."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(SOURCE, self.root / "source", dirs_exist_ok=True)
        # The repository's own configuration files, unchanged: nbgrader runs here exactly as it
        # runs from the repository root.
        for config in (NBGRADER_CONFIG, GRADER_CONFIG):
            shutil.copy(config, self.root / config.name)

    def nbgrader(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        # nbgrader shells out to `alembic`, so the environment's bin/ must be on PATH.
        env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        proc = subprocess.run([*NBGRADER, *args], cwd=self.root, capture_output=True, text=True, env=env)
        if check and proc.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def generate(self, assignment: str) -> Path:
        """Run generate_assignment (records the grade cells in the gradebook); returns the release dir."""
        self.nbgrader("generate_assignment", assignment, "--force")
        return self.root / "course" / assignment

    def submit(self, student: str, assignment: str, notebook: Path, name: str | None = None) -> None:
        dest = self.root / "submitted" / student / assignment
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, dest / (name or Path(notebook).name))

    def autograde(self, assignment: str) -> subprocess.CompletedProcess:
        return self.nbgrader("autograde", assignment, "--force", check=False)

    def results(self, assignment: str, students: list[str]) -> list[NotebookResult]:
        from nbgrader.api import Gradebook, MissingEntry

        out = []
        db_url = f"sqlite:///{self.root / 'gradebook.db'}"
        notebooks = [p.stem for p in sorted((self.root / "source" / assignment).glob("*.ipynb"))]
        with Gradebook(db_url) as gb:
            for student in students:
                for nb_name in notebooks:
                    result = NotebookResult(student, assignment, nb_name)
                    try:
                        sub = gb.find_submission_notebook(nb_name, assignment, student)
                    except MissingEntry:
                        result.error = "not graded (missing or unreadable notebook)"
                        out.append(result)
                        continue
                    hints = self._hints(student, assignment, nb_name)
                    for grade in sub.grades:
                        if grade.cell.max_score and grade.name.startswith("test_"):
                            score = grade.score if grade.score is not None else 0.0
                            result.cells.append(CellResult(grade.name, float(score), float(grade.max_score),
                                                           hints.get(grade.name, "")))
                    order = {gid: i for i, gid in enumerate(self._grade_ids(assignment, nb_name))}
                    result.cells.sort(key=lambda c: order.get(c.grade_id, len(order)))
                    out.append(result)
        return out

    def _grade_ids(self, assignment: str, nb_name: str) -> list[str]:
        nb = nbformat.read(self.root / "source" / assignment / f"{nb_name}.ipynb", as_version=4)
        return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]

    def _hints(self, student: str, assignment: str, nb_name: str) -> dict[str, str]:
        """The one-line message each failing test cell produced (the last line of its error)."""
        path = self.root / "autograded" / student / assignment / f"{nb_name}.ipynb"
        if not path.exists():
            return {}
        nb = json.loads(path.read_text())
        hints = {}
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if not meta.get("grade") or cell["cell_type"] != "code":
                continue
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    hints[meta["grade_id"]] = _one_line(output.get("ename", ""), output.get("evalue", ""))
                elif output.get("output_type") == "stream" and output.get("name") == "stderr":
                    hints.setdefault(meta["grade_id"], "the cell wrote to stderr, which nbgrader scores as 0")
        return hints


def _one_line(ename: str, evalue: str) -> str:
    evalue = " ".join(evalue.split())
    if ename in ("CheckFailure", "AssertionError") and evalue:
        return evalue
    if ename == "NotImplementedError":
        return "not implemented yet: replace `raise NotImplementedError()` with your code."
    return f"{ename}: {evalue}" if evalue else ename


def with_reference_answers(release_nb: Path, source_nb: Path, dest: Path) -> Path:
    """The release notebook with the source's solution cells pasted in (markers removed), the way a
    learner who wrote the reference answers would hand it in."""
    src = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(source_nb, as_version=4).cells
           if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(release_nb, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in src:
            cell.source = strip_markers(src[gid])
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest
