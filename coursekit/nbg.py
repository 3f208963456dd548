"""Grading with stock nbgrader: the one module that runs it, builds scratch course roots, reads
what it recorded and says what went wrong. `make check` (one learner, coursekit.check), `make
grade` (a cohort, coursekit.grade), the tests and the benchmarks all grade through it, so a
failure is described the same way to the learner and to the instructor.

A submission is graded in four steps:
1. `preflight`: the notebook is there under its expected name and parses as a notebook; its code
   is scanned for integrity flags (reaching for the reference solutions, the checkers or the
   gradebook; network; processes; exiting the kernel; input()). A flag asks a human to look; the
   sandbox (coursekit.judge.sandbox) is what stops the behaviour at run time.
2. `nbgrader autograde` (stock nbgrader, our configuration), under a wall-clock limit;
3. `read`: scores from the gradebook through nbgrader's API; the hint of every failing test cell
   and the errors of other cells from the autograded notebook through nbformat; what the sandbox
   refused from the folder's .sandbox-refusals.log;
4. classification: each problem becomes one plain sentence (`ERRORS`, `FAILURES`).

`grade_learner` is the one way the course grades (make check, make grade serial or on a
cluster); `grade_submission` keeps stock serial nbgrader for the benchmark's "before" and the
tests. `generate` (coursekit.batch) is the one way it generates.

What it leaves out: deciding who to grade and merging parallel results (coursekit.grade), and
printing (coursekit.check, coursekit.grade).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursekit import settings, threads
from coursekit.batch import generate, run_learner
from coursekit.judge import messages
from coursekit.registry import exercise_of
from coursekit.paths import GRADER_CONFIG, NBGRADER_CONFIG, SOURCE
from coursekit.reference import strip_markers

NBGRADER = [sys.executable, "-m", "nbgrader"]
CONFIGS = (NBGRADER_CONFIG, GRADER_CONFIG)

# (flag, pattern over the submission's code). A flag is a reason for a human to look, not a verdict.
INTEGRITY = [
    ("reaches for the reference solutions or checkers",
     re.compile(r"\bsolutions\b|checks\.a0|sys\.modules|__import__|importlib|\bverdict\b")),
    # rebinding a library's or the course helpers' attribute (torch.multinomial = ..., coursekit.judge.wire.serve = ...):
    # the learner's function runs among them in the kernel, so such a patch can change what it returns
    ("patches the course's helpers or libraries",
     re.compile(r"\b(specdec|coursekit|torch|np|numpy|scipy|math|random)(\.\w+)+\s*=(?!=)|setattr\(\s*(specdec|coursekit|torch|np|numpy)\b")),
    ("touches the gradebook", re.compile(r"gradebook")),
    ("opens a network connection", re.compile(r"\bsocket\b|urllib|http\.client|\bimport requests\b|\bfrom requests\b"
                                              r"|\brequests\.(get|post|put|patch|delete|head|request|Session)\b|httpx|ftplib|smtplib")),
    ("starts processes", re.compile(r"subprocess|os\.fork|os\.system|os\.spawn|os\.exec|os\.posix_spawn|multiprocessing|\bpty\b")),
    ("exits the kernel", re.compile(r"\bsys\.exit\b|\bos\._exit\b|(?<![\w.])(exit|quit)\(")),
    ("waits for keyboard input", re.compile(r"(?<![\w.])input\(")),
    ("reads or writes files by absolute or parent path", re.compile(r"""open\(\s*(f?["'](/|\.\.)|[^)]*\.\.)""")),
    ("calls native code directly", re.compile(r"\bctypes\b|\bcffi\b")),
]
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
    sandbox: str = ""  # the layer its grading kernel ran under, as the report says it (sandbox.describe)

    @property
    def error(self) -> str:
        """Why the notebook could not be graded; '' when it was."""
        return "" if self.graded else ("; ".join(self.flags) or "not graded")


def run(root: Path, *args: str, timeout: float | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`nbgrader ARGS` in course root `root`; a run past `timeout` seconds returns exit status -9.
    `env` adds to this process's environment (a value None removes that variable)."""
    env = settings.child_env(env, base={**threads.WAIT, **os.environ})  # OpenMP's passive wait unless told otherwise
    # Output goes to files, not pipes: a process that a learner's native code left running holds
    # nbgrader's stdout open, and reading a pipe to its end would wait for that process.
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.run([*NBGRADER, *args], cwd=root, stdout=out, stderr=err, text=True, env=env,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(exc.cmd, returncode=-9, stdout="", stderr=f"timed out after {timeout:.0f} s")
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())


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


def scan(nb: nbformat.NotebookNode, given: set[str] | frozenset = frozenset()) -> list[str]:
    """Integrity flags from the code of the code cells, leaving out a cell that is exactly one of
    the course's own (`given`: its text must not flag every learner, as 07's "requests per second")."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and c.source.strip() not in given)
    return [flag for flag, pattern in INTEGRITY if pattern.search(code)]


def given_code(source_nb: Path) -> frozenset:
    """The code cells a learner receives as they are (neither solution nor graded cells) of a source
    notebook: what `scan` leaves out when a submission holds them unchanged."""
    try:
        nb = nbformat.read(source_nb, as_version=4)
    except (OSError, ValueError):
        return frozenset()
    return frozenset(c.source.strip() for c in nb.cells if c.cell_type == "code" and not (
        c.metadata.get("nbgrader", {}).get("solution") or c.metadata.get("nbgrader", {}).get("grade")))


def preflight(folder: Path, notebook: str, given: frozenset = frozenset()) -> tuple[list[str], list[str]]:
    """(problems, integrity flags) of the notebook `notebook`.ipynb in a submission folder (`given`: scan's)."""
    expected = Path(folder) / f"{notebook}.ipynb"
    if not expected.exists():
        others = sorted(p.name for p in Path(folder).glob("*.ipynb"))
        return [f"no {expected.name} (found: {', '.join(others) or 'no notebook'})"], []
    if expected.stat().st_size == 0:
        return ["empty file"], []
    try:
        nb = nbformat.read(expected, as_version=4)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never fatal
        return [f"not a readable notebook ({type(exc).__name__})"], []
    return [], scan(nb, given)


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
    from coursekit.judge.sandbox import describe, mode

    result.sandbox = describe(mode())  # where it was graded: a cluster's workers may differ from this machine
    return result


def grade_learner(root: Path, student: str, work: list[str], timeout: float = 900, env: dict | None = None,
                  usage: dict | None = None, feedback: bool = True, flags: list[str] | None = None
                  ) -> dict[tuple[str, str], list[NotebookResult]]:
    """The one way the course grades: every submission of `student` in `work` (assignments), in
    course root `root`, by one nbgrader process (coursekit.batch: autograde, then feedback unless
    `feedback` is False, per assignment; each submission within `timeout` seconds of wall-clock
    time), preflighted before and read and classified after. `make check` (a scratch root of one
    learner), serial `make grade` (the course root) and each task of a cluster (a scratch root on
    the worker, coursekit.grade) all call it. `usage`: run_learner's CPU seconds; `flags`:
    nbgrader settings for the run (--JudgedExecute.run_measurements=True). The gradebook must know
    the assignments (`generate` first)."""
    checks = {a: preflights(root, a, student) for a in work}
    procs = run_learner(root, student, work, timeout, env, usage=usage, feedback=feedback, flags=flags)
    return {(student, a): classify(root, a, student, checks[a], *procs[a]) for a in work}


def grade_submission(root: Path, assignment: str, student: str, timeout: float = 900,
                     env: dict | None = None) -> list[NotebookResult]:
    """Stock serial nbgrader, kept for what it shows: preflight, `nbgrader autograde ASSIGNMENT
    --student STUDENT` (one process per submission, as the stock commands of docs/instructors.md run it), read.
    make bench-grade's "before" and the tests that show stock nbgrader grades the course use it;
    the course itself grades with `grade_learner`."""
    import time

    checks = preflights(root, assignment, student)
    t0 = time.perf_counter()
    proc = run(root, "autograde", assignment, "--student", student, "--force", timeout=timeout, env=env)
    return classify(root, assignment, student, checks, proc, time.perf_counter() - t0)


def preflights(root: Path, assignment: str, student: str) -> dict[str, tuple[list[str], list[str]]]:
    """`preflight` of each of the assignment's notebooks in root/submitted/<student>/<assignment>/."""
    folder = Path(root) / "submitted" / student / assignment
    source = Path(root) / "source" / assignment
    return {nb: preflight(folder, nb, given_code(source / f"{nb}.ipynb")) for nb in notebooks(root, assignment)}


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

    def grade(self, assignment: str, student: str, timeout: float = 900, feedback: bool = True
              ) -> list[NotebookResult]:
        """One learner's submission, graded and classified as `make grade` does it (grade_learner)."""
        return grade_learner(self.root, student, [assignment], timeout, self.env, feedback=feedback)[student, assignment]

    def results(self, assignment: str, students: list[str]) -> list[NotebookResult]:
        return [read(self.root, assignment, s, nb) for s in students for nb in notebooks(self.root, assignment)]


def answer_sources(path: Path) -> dict[str, str]:
    """{grade_id: source} of a notebook's answer cells (nbgrader solution cells), in notebook order."""
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(path, as_version=4).cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def with_reference_answers(release_nb: Path, source_nb: Path, dest: Path, only=None) -> Path:
    """The release notebook with the source's solution cells pasted in (markers removed), the way a
    learner who wrote the reference answers would hand it in; `only`: just these exercises (grade_ids)."""
    src = {gid: code for gid, code in answer_sources(source_nb).items() if only is None or gid in only}
    nb = nbformat.read(release_nb, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in src:
            cell.source = strip_markers(src[gid])
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest
