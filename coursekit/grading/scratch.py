"""Scratch course roots: a course root built elsewhere (`scratch_root`) so that nbgrader runs there
exactly as in the repository root, and `ScratchCourse`, one to generate, submit, grade and read
in (`make check`, the tests, the benchmarks)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from coursekit.batch import generate
from coursekit.grading.driver import CONFIGS, grade_learner, run
from coursekit.grading.results import NotebookResult, notebooks, read
from coursekit.paths import SOURCE


def scratch_root(dest: Path, source: Path = SOURCE, configs=CONFIGS, assignments=None, gradebook: Path | None = None,
                 submissions: dict[tuple[str, str], Path] | None = None) -> Path:
    """A course root at `dest` (created if needed): the configuration files (unchanged, so nbgrader runs there exactly
    as in the repository root), `source/` (all or `assignments`), a copy of `gradebook` if given, and
    `submissions` {(student, assignment): folder} copied to submitted/<student>/<assignment>/."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for config in configs:
        if Path(config).exists():
            shutil.copy(config, dest / Path(config).name)
    for assignment in assignments or sorted(p.name for p in Path(source).iterdir() if p.is_dir()):
        shutil.copytree(Path(source) / assignment, dest / "source" / assignment, dirs_exist_ok=True)
    if gradebook is not None:
        shutil.copy(gradebook, dest / "gradebook.db")
    for (student, assignment), folder in (submissions or {}).items():
        shutil.copytree(folder, dest / "submitted" / student / assignment, dirs_exist_ok=True)
    return dest


class ScratchCourse:
    """A temporary course root for the tests and `make check`: generate, submit, autograde, read."""

    def __init__(self, root: Path, env: dict | None = None):
        self.root = Path(root)
        self.env = env  # extra environment of every nbgrader run (and so of its kernels)
        scratch_root(self.root)

    def nbgrader(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = run(self.root, *args, env=self.env)
        if check and proc.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def generate(self, assignment: str) -> Path:
        """generate_assignment (records the grade cells in the gradebook); returns the release dir."""
        proc = generate(self.root, [assignment], self.env)
        if proc.returncode != 0:
            raise RuntimeError(f"generate_assignment {assignment} failed:\n{proc.stdout}\n{proc.stderr}")
        return self.root / "course" / assignment

    def submit(self, student: str, assignment: str, notebook: Path, name: str | None = None) -> None:
        dest = self.root / "submitted" / student / assignment
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, dest / (name or Path(notebook).name))

    def autograde(self, assignment: str) -> subprocess.CompletedProcess:
        """Every submission of `assignment` in one nbgrader run (the tests' fast path)."""
        return self.nbgrader("autograde", assignment, "--force", check=False)

    def grade_submission(self, assignment: str, student: str, timeout: float | None = None, feedback: bool = True
                         ) -> list[NotebookResult]:
        """One learner's submission, graded and classified as `make grade` does it (grade_learner)."""
        return grade_learner(self.root, student, [assignment], timeout, self.env, feedback=feedback)[student, assignment]

    def results(self, assignment: str, students: list[str]) -> list[NotebookResult]:
        return [read(self.root, assignment, s, nb) for s in students for nb in notebooks(self.root, assignment)]
