"""`make grade`: grade a whole cohort with stock nbgrader, in one command.

    python -m coursekit.grade [--root .] [ASSIGNMENT ...]

For every submitted/<student>/<assignment>/ under the course root (nbgrader's layout):

1. preflight: the notebook is there under its expected name and parses as a notebook; its code
   is scanned for integrity flags (reaching for the reference solutions, the checkers or the
   gradebook; network; processes; exiting the kernel; input());
2. `nbgrader autograde <assignment> --student <student> --force`, one submission per call and
   under a wall-clock limit, so a submission that hangs or crashes nbgrader costs only itself;
3. `nbgrader generate_feedback <assignment> --force` and `nbgrader export` (grades.csv);
4. a summary (who, what, score, flags) on stdout and in grading-report.md, with the integrity
   report below it: the code scan's flags and what the sandbox refused at run time.

A progress bar (tqdm) runs while it works. The stock nbgrader commands keep working as before.

Parallel grading (`--jobs N`, default: one per CPU core). nbgrader's gradebook is one SQLite
file, so concurrent autograde processes on one course root would contend for it. Instead each
learner is graded in a scratch course root of their own, .grading/<student>/ inside the course
root (a copy of the configuration, source/, the gradebook and that learner's submitted/
folder), up to N learners at a time: autograde, then feedback. When a learner is done, the main
process alone merges the result back: their autograded/ and feedback/ folders are copied over,
and the submission's scores and comments are copied into the course gradebook through
nbgrader's own API, keyed by name (assignment, notebook, cell, student), never by database row.
Scores are the same as with `--jobs 1`, which runs stock `nbgrader autograde` in the course root
itself; a test grades the hostile corpus both ways. Each grading kernel gets cores/N BLAS
threads, so N kernels do not oversubscribe the CPU, and the sandbox protects the course root's
grading data and the other learners' scratch roots as well as its own.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from tqdm import tqdm

from coursekit.sandbox import SCRATCH_ROOTS as SCRATCH  # per-learner roots, inside the course root

# (flag, pattern over the submission's code). A flag is a reason for a human to look, not a
# verdict: the sandbox (coursekit.sandbox) is what stops the behaviour at run time.
INTEGRITY = [
    ("reaches for the reference solutions or checkers",
     re.compile(r"\bsolutions\b|checks\.a0|sys\.modules|__import__|importlib")),
    ("touches the gradebook", re.compile(r"gradebook")),
    ("opens a network connection", re.compile(r"\bsocket\b|urllib|http\.client|\brequests\b|httpx|ftplib|smtplib")),
    ("starts processes", re.compile(r"subprocess|os\.fork|os\.system|os\.spawn|os\.exec|os\.posix_spawn|multiprocessing|\bpty\b")),
    ("exits the kernel", re.compile(r"\bsys\.exit\b|\bos\._exit\b|(?<![\w.])(exit|quit)\(")),
    ("waits for keyboard input", re.compile(r"(?<![\w.])input\(")),
    ("reads or writes files by absolute or parent path", re.compile(r"""open\(\s*(f?["'](/|\.\.)|[^)]*\.\.)""")),
    ("calls native code directly", re.compile(r"\bctypes\b|\bcffi\b")),
]


@dataclass
class Row:
    student: str
    assignment: str
    score: float | None = None
    max_score: float | None = None
    flags: list[str] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    seconds: float = 0.0


def scan(nb: nbformat.NotebookNode) -> list[str]:
    """Integrity flags from the code the learner wrote or changed (every code cell)."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return [flag for flag, pattern in INTEGRITY if pattern.search(code)]


def preflight(path: Path, assignment: str) -> tuple[list[str], list[str]]:
    """(problems, integrity flags) of one submission folder's notebook."""
    expected = path / f"{assignment}.ipynb"
    if not expected.exists():
        others = sorted(p.name for p in path.glob("*.ipynb"))
        return ([f"no {expected.name} (found: {', '.join(others) or 'no notebook'})"], [])
    if expected.stat().st_size == 0:
        return (["empty file"], [])
    try:
        nb = nbformat.read(expected, as_version=4)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never fatal
        return ([f"not a readable notebook ({type(exc).__name__})"], [])
    return ([], scan(nb))


def nbgrader(root: Path, *args: str, timeout: float | None = None,
             env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env or {}))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    try:
        return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, capture_output=True, text=True,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, returncode=-9, stdout="", stderr=f"timed out after {timeout:.0f} s")


def scores(root: Path, rows: list[Row]) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for row in rows:
            try:
                sub = gb.find_submission(row.assignment, row.student)
            except MissingEntry:
                continue
            row.score, row.max_score = float(sub.score or 0.0), float(sub.max_score or 0.0)
            if row.flags:
                continue  # the reason is already there
            for nb in sub.notebooks:
                for grade in nb.grades:
                    if grade.auto_score is None and grade.manual_score is None and grade.max_score:
                        row.flags.append(f"{grade.name} not scored")


ERRORS = {  # exception in a cell of the autograded notebook -> what the summary says
    "CellTimeoutError": "a cell ran past the time limit and was interrupted",
    "KeyboardInterrupt": None,  # the interrupt that follows a timeout: already said
    "MemoryError": "MemoryError in a cell (the sandbox's memory limit)",
    "PermissionError": "PermissionError in a cell (refused by the grading sandbox)",
    "StdinNotImplementedError": "input() in a cell: there is no keyboard while grading",
    "SystemExit": "exit() or sys.exit() in a cell",
    "NameError": None,  # the usual consequence of an earlier failing cell
}
FAILURES = [  # text in nbgrader's output when autograde gave up on a notebook -> what to say
    ("Kernel died", "the kernel died (e.g. os._exit, a crash, or a limit): the notebook could not be graded"),
    ("DeadKernelError", "the kernel died (e.g. os._exit, a crash, or a limit): the notebook could not be graded"),
    ("uplicate", "a graded cell appears twice (duplicated cell): nbgrader refuses the notebook"),
    ("CellTimeoutError", "the kernel stopped answering (it died, e.g. os._exit, or hung): the notebook could not be graded"),
]


def autograded(root: Path, row: Row) -> Path:
    """The folder nbgrader autogrades this submission into (the grading kernel's working folder)."""
    return root / "autograded" / row.student / row.assignment


def errors_in(root: Path, row: Row) -> list[str]:
    """What went wrong in cells of the autograded notebook, other than failed tests."""
    path = autograded(root, row) / f"{row.assignment}.ipynb"
    if not path.exists():
        return []
    out = []
    for cell in json.loads(path.read_text()).get("cells", []):
        for output in cell.get("outputs", []):
            ename = output.get("ename")
            if output.get("output_type") == "error" and ename not in ("AssertionError", "NotImplementedError"):
                message = ERRORS.get(ename, f"{ename} in a cell")
                if message and message not in out:
                    out.append(message)
    return out


def refusals(root: Path, row: Row) -> list[str]:
    """What the sandbox refused while grading this submission (its .sandbox-refusals.log): seen
    at run time, so it catches what the code scan cannot (paths built at run time, a refusal the
    learner's code caught and hid)."""
    log = autograded(root, row) / ".sandbox-refusals.log"
    if not log.exists():
        return []
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    kinds = sorted({ln.split(" (")[0] for ln in lines})  # what, not how often: counts depend on folder depth
    return [f"the sandbox refused: {', '.join(kinds)}"] if lines else []


def failure_reason(proc: subprocess.CompletedProcess) -> str:
    text = proc.stdout + proc.stderr
    for needle, message in FAILURES:
        if needle in text:
            return message
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return "autograde failed: " + (lines[-1][:160] if lines else f"exit status {proc.returncode}")


def _autograde(root: Path, row: Row, folder: Path, timeout: float, env: dict | None = None) -> None:
    """Preflight and autograde one submission in course root `root` (flags go on `row`)."""
    problems, row.integrity = preflight(folder, row.assignment)
    row.flags += problems
    t0 = time.perf_counter()
    proc = nbgrader(root, "autograde", row.assignment, "--student", row.student, "--force",
                    timeout=timeout, env=env)
    row.seconds = time.perf_counter() - t0
    if not problems and (proc.returncode != 0 or not (autograded(root, row) / f"{row.assignment}.ipynb").exists()):
        row.flags.append(failure_reason(proc))


def _scratch_root(root: Path, student: str, assignments: set[str]) -> Path:
    """A course root for one learner: configuration, source/, a copy of the gradebook, their submissions."""
    scratch = root / SCRATCH / student
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    for config in ("nbgrader_config.py", "grader_config.py"):
        if (root / config).exists():
            shutil.copy(root / config, scratch / config)
    for assignment in assignments:
        shutil.copytree(root / "source" / assignment, scratch / "source" / assignment)
        shutil.copytree(root / "submitted" / student / assignment, scratch / "submitted" / student / assignment)
    shutil.copy(root / "gradebook.db", scratch / "gradebook.db")
    return scratch


def merge_gradebook(into: Path, source: Path, pairs: list[tuple[str, str]]) -> None:
    """Copy the submissions `pairs` ((assignment, student)) from gradebook `source` into gradebook
    `into`, replacing what `into` had for them: timestamps, flags, every grade's scores and every
    comment. Rows are found by name through nbgrader's API, so the two databases' row ids never
    matter. A submission that `source` does not have (nbgrader never recorded it) is left alone."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    # nbgrader's add_submission builds rows before adding them to the session, which SQLAlchemy
    # warns about (stock autograde does the same, out of sight); the rows are stored correctly.
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{source}") as src, Gradebook(f"sqlite:///{into}") as dst:
        warnings.filterwarnings("ignore", category=SAWarning)
        for assignment, student in pairs:
            try:
                sub = src.find_submission(assignment, student)
            except MissingEntry:
                continue
            who = sub.student
            dst.update_or_create_student(student, first_name=who.first_name, last_name=who.last_name,
                                         email=who.email, lms_user_id=who.lms_user_id)
            dst.update_or_create_submission(assignment, student, timestamp=sub.timestamp, extension=sub.extension)
            for nb in sub.notebooks:
                target = dst.find_submission_notebook(nb.name, assignment, student)
                target.flagged, target.late_submission_penalty = nb.flagged, nb.late_submission_penalty
                for g in nb.grades:
                    t = dst.find_grade(g.name, nb.name, assignment, student)
                    t.auto_score, t.manual_score, t.extra_credit = g.auto_score, g.manual_score, g.extra_credit
                    t.needs_manual_grade = g.needs_manual_grade
                for c in nb.comments:
                    t = dst.find_comment(c.name, nb.name, assignment, student)
                    t.auto_comment, t.manual_comment = c.auto_comment, c.manual_comment
            dst.db.commit()


def _merge(root: Path, scratch: Path, rows: list[Row]) -> None:
    for row in rows:
        for kind in ("autograded", "feedback"):
            src, dst = (r / kind / row.student / row.assignment for r in (scratch, root))
            if dst.exists():
                shutil.rmtree(dst)
            if src.exists():
                shutil.copytree(src, dst)
    merge_gradebook(root / "gradebook.db", scratch / "gradebook.db", [(r.assignment, r.student) for r in rows])
    shutil.rmtree(scratch)


def grade(root: Path, assignments: list[str] | None = None, students: list[str] | None = None,
          per_submission_timeout: float = 900, jobs: int = 1) -> list[Row]:
    """Grade the submissions under root/submitted (all, or only these assignments/students);
    `jobs` learners at a time (1: stock nbgrader in `root` itself, one submission after another)."""
    submitted = root / "submitted"
    folders = sorted(p for p in submitted.glob("*/*") if p.is_dir()) if submitted.exists() else []
    if assignments:
        folders = [p for p in folders if p.name in assignments]
    if students:
        folders = [p for p in folders if p.parent.name in students]
    known = {p.name for p in (root / "source").iterdir() if p.is_dir()}
    for assignment in sorted({p.name for p in folders} & known):
        # records the assignment and its grade cells in the gradebook (autograde needs them)
        nbgrader(root, "generate_assignment", assignment, "--force")
    rows, todo = [], []
    for folder in folders:
        row = Row(folder.parent.name, folder.name)
        rows.append(row)
        if row.assignment not in known:
            row.flags.append("unknown assignment")
        else:
            todo.append((row, folder))
    bar = tqdm(total=len(rows), desc="grading", unit="submission")
    bar.update(len(rows) - len(todo))
    by_student: dict[str, list[tuple[Row, Path]]] = {}
    for row, folder in todo:
        by_student.setdefault(row.student, []).append((row, folder))
    jobs = max(1, min(jobs, len(by_student)))
    if jobs == 1:
        for row, folder in todo:
            _autograde(root, row, folder, per_submission_timeout)
            bar.update()
    else:
        threads = max(1, (os.cpu_count() or 1) // jobs)
        env = {name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        env["COURSE_SANDBOX_PROTECT"] = str(root)  # the sandbox also guards the course root's grading data
        lock = threading.Lock()

        def learner(student: str, work: list[tuple[Row, Path]]) -> Path:
            scratch = _scratch_root(root, student, {row.assignment for row, _ in work})
            for row, folder in work:
                _autograde(scratch, row, scratch / "submitted" / student / row.assignment,
                           per_submission_timeout, env)
                if autograded(scratch, row).exists():
                    nbgrader(scratch, "generate_feedback", row.assignment, "--student", student, "--force", env=env)
                with lock:
                    bar.update()
            return scratch

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(learner, student, work): work for student, work in by_student.items()}
            for future in as_completed(futures):  # merged by this thread alone, one learner at a time
                work = [row for row, _ in futures[future]]
                try:
                    _merge(root, future.result(), work)
                except Exception as exc:  # noqa: BLE001 - one learner's failure must not stop the cohort
                    for row in work:
                        row.flags.append(f"grading failed: {type(exc).__name__}: {exc}"[:200])
        if (root / SCRATCH).exists() and not any((root / SCRATCH).iterdir()):
            (root / SCRATCH).rmdir()
    bar.close()
    for row, _ in todo:
        row.flags += errors_in(root, row)
        row.integrity += refusals(root, row)
    if jobs == 1:  # (in parallel, each learner's feedback was made in their scratch root)
        for assignment in sorted({r.assignment for r in rows if r.assignment in known}):
            nbgrader(root, "generate_feedback", assignment, "--force")
    scores(root, rows)
    nbgrader(root, "export")
    return rows


def report(rows: list[Row]) -> str:
    lines = ["| student | assignment | score | flags |", "|---|---|---|---|"]
    for r in rows:
        score = "-" if r.score is None else f"{r.score:g} / {r.max_score:g}"
        lines.append(f"| {r.student} | {r.assignment} | {score} | {'; '.join(r.flags) or ''} |")
    lines += ["", "## Integrity report", ""]
    flagged = [r for r in rows if r.integrity]
    if not flagged:
        lines.append("No submission's code matched an integrity pattern.")
    for r in flagged:
        lines.append(f"- {r.student} / {r.assignment}: {'; '.join(r.integrity)}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("assignments", nargs="*")
    ap.add_argument("--student", action="append", help="grade only this student (repeatable)")
    ap.add_argument("--root", type=Path, default=Path.cwd())
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="learners graded at the same time, each in its own scratch root (default: CPU cores)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    t0 = time.perf_counter()
    rows = grade(root, args.assignments or None, args.student, jobs=args.jobs)
    text = report(rows)
    (root / "grading-report.md").write_text(text)
    print(text)
    print(f"{len(rows)} submissions graded in {time.perf_counter() - t0:.0f} s; grades.csv and grading-report.md "
          f"written, feedback under feedback/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
