"""What nbgrader recorded for a graded notebook, read and classified: scores from the gradebook
through nbgrader's API; the hint of every failing test cell and the errors of other cells from the
autograded notebook through nbformat; what the sandbox refused from the folder's
.sandbox-refusals.log; each problem as one plain sentence (coursekit.judge.messages: `ERRORS`,
`FAILURES`). `make check` and `make grade` describe a failure the same way because both read it
here (coursekit.grading.driver.grade_learner)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursekit.judge import messages
from coursekit.registry import exercise_of

ERRORS, DEAD, FAILURES = messages.ERRORS, messages.DEAD, messages.FAILURES  # what to say (coursekit.judge.messages)


@dataclass
class CellResult:
    grade_id: str
    score: float
    max_score: float
    hint: str = ""

    @property
    def exercise(self) -> str:
        """test_accepted_pmf__reference -> accepted_pmf"""
        return exercise_of(self.grade_id)


@dataclass
class NotebookResult:
    """One learner's notebook of one assignment, as graded."""
    student: str
    assignment: str
    notebook: str
    cells: list[CellResult] = field(default_factory=list)
    score: float | None = None  # None: nbgrader recorded no grade
    max_score: float | None = None
    flags: list[str] = field(default_factory=list)  # why points were lost other than failing tests
    integrity: list[str] = field(default_factory=list)  # reasons for a human to look
    graded: bool = False  # nbgrader ran the whole notebook (scores may still be 0)
    seconds: float = 0.0
    sandbox: str = ""  # the layer its grading kernel ran under, as the report says it (coursekit.judge.layers.describe)

    @property
    def error(self) -> str:
        """Why the notebook could not be graded; '' when it was."""
        return "" if self.graded else ("; ".join(self.flags) or "not graded")


def failure_reason(proc: subprocess.CompletedProcess) -> str:
    """One sentence for an autograde run that gave up on a notebook."""
    text = proc.stdout + proc.stderr
    for needle, message in FAILURES:
        if needle in text:
            return message
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return "autograde failed: " + (lines[-1][:160] if lines else f"exit status {proc.returncode}")


def hint_of(ename: str, evalue: str) -> str:
    """The one-line message a failing test cell shows (the last line of its error)."""
    evalue = " ".join(evalue.split())
    if ename in ("CheckFailure", "AssertionError") and evalue:
        return evalue
    if ename == "NotImplementedError":
        return messages.NOT_IMPLEMENTED
    return f"{ename}: {evalue}" if evalue else ename


def autograded_folder(root: Path, student: str, assignment: str) -> Path:
    """Where nbgrader autogrades a submission (the grading kernel's working folder)."""
    return Path(root) / "autograded" / student / assignment


def _outputs(root: Path, student: str, assignment: str, notebook: str) -> tuple[dict[str, str], list[str]]:
    """({grade_id: hint} of failing test cells, [problems in other cells]) from the autograded notebook."""
    path = autograded_folder(root, student, assignment) / f"{notebook}.ipynb"
    if not path.exists():
        return {}, []
    hints, problems = {}, []
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.output_type == "error":
                if meta.get("grade"):
                    hints.setdefault(meta["grade_id"], hint_of(output.get("ename", ""), output.get("evalue", "")))
                message = ERRORS.get(output.get("ename"), f"{output.get('ename')} in a cell")
                if message and message not in problems:
                    problems.append(message)
            elif output.output_type == "stream" and output.get("name") == "stderr" and meta.get("grade"):
                hints.setdefault(meta["grade_id"], "the cell wrote to stderr, which nbgrader scores as 0")
    return hints, problems


def refusals(root: Path, student: str, assignment: str) -> list[str]:
    """What the sandbox refused while grading (the folder's .sandbox-refusals.log): seen at run time,
    so it catches what the code scan cannot (paths built at run time, a refusal the code caught)."""
    log = autograded_folder(root, student, assignment) / ".sandbox-refusals.log"
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()] if log.exists() else []
    kinds = sorted({ln.split(" (")[0] for ln in lines})  # what, not how often: counts depend on folder depth
    return [f"the sandbox refused: {', '.join(kinds)}"] if lines else []


def grade_ids(root: Path, assignment: str, notebook: str) -> list[str]:
    nb = nbformat.read(Path(root) / "source" / assignment / f"{notebook}.ipynb", as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]


def notebooks(root: Path, assignment: str) -> list[str]:
    return [p.stem for p in sorted((Path(root) / "source" / assignment).glob("*.ipynb"))]


def read(root: Path, assignment: str, student: str, notebook: str | None = None) -> NotebookResult:
    """What nbgrader recorded for one learner's notebook, with hints, problems and refusals."""
    from nbgrader.api import Gradebook, MissingEntry

    notebook = notebook or assignment
    result = NotebookResult(student, assignment, notebook)
    hints, problems = _outputs(root, student, assignment, notebook)
    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gb:
        try:
            sub = gb.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            result.flags.append("not graded (missing or unreadable notebook)")
            return result
        for grade in sub.grades:
            if grade.max_score and grade.name.startswith("test_"):
                score = grade.score if grade.score is not None else 0.0
                result.cells.append(CellResult(grade.name, float(score), float(grade.max_score),
                                               hints.get(grade.name, "")))
            if grade.max_score and grade.auto_score is None and grade.manual_score is None:
                result.flags.append(f"{grade.name} not scored")
        result.score, result.max_score = float(sub.score or 0.0), float(sub.max_score or 0.0)
    order = {gid: i for i, gid in enumerate(grade_ids(root, assignment, notebook))}
    result.cells.sort(key=lambda c: order.get(c.grade_id, len(order)))
    result.graded = (autograded_folder(root, student, assignment) / f"{notebook}.ipynb").exists()
    result.flags += [p for p in problems if p not in result.flags]
    result.integrity += refusals(root, student, assignment)
    result.sandbox = layer_of(root)  # where it was graded: a cluster's workers may differ from this machine
    return result


def classify(root: Path, assignment: str, student: str, checks: dict, proc: subprocess.CompletedProcess,
             seconds: float) -> list[NotebookResult]:
    """One result per notebook from an autograde run (`proc`: its exit status and output) and the
    preflight `checks` made before it: what was graded, and why not where it was not."""
    out = []
    for nb, (problems, integrity) in checks.items():
        result = read(root, assignment, student, nb)
        result.seconds = seconds
        if problems or proc.returncode != 0 or not result.graded:
            # the reason nbgrader could not grade it replaces "not graded" and "... not scored"
            result.graded = False
            result.flags = (problems or [failure_reason(proc)]) + [
                f for f in result.flags if not (f.startswith("not graded") or f.endswith(" not scored"))]
        result.integrity = integrity + result.integrity
        out.append(result)
    return out


def layer_of(root: Path) -> str:
    """The sandbox layer grading kernels in course root `root` run under on this machine, as the
    report says it: SandboxKernelManager.layer of the root's configuration (grader_config.py), or
    COURSE_SANDBOX where it is set (coursekit.judge.limits: which wins)."""
    from coursekit.grading.config import course_config
    from coursekit.judge.layers import describe, mode
    from coursekit.judge.sandbox import configured

    return describe(mode(configured(course_config(root)).layer))
