"""`make grade`: grade a whole cohort with stock nbgrader, in one command.

    python -m coursekit.grade [--root .] [ASSIGNMENT ...]

For every submitted/<student>/<assignment>/ under the course root (nbgrader's layout):

1. `coursekit.nbg.grade_submission`: preflight, `nbgrader autograde <assignment> --student
   <student> --force` (one submission per call, under a wall-clock limit, so a submission that
   hangs or crashes nbgrader costs only itself), and the result read and classified, exactly as
   `make check` does it for one learner;
2. `nbgrader generate_feedback <assignment> --force` and `nbgrader export` (grades.csv);
3. a summary (who, what, score, flags) on stdout and in grading-report.md, with the integrity
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
import os
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from coursekit.nbg import NotebookResult, grade_submission, run, scratch_root
from coursekit.sandbox import SCRATCH_ROOTS as SCRATCH  # per-learner roots, inside the course root


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


def _merge(root: Path, scratch: Path, rows: list[NotebookResult]) -> None:
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
          per_submission_timeout: float = 900, jobs: int = 1) -> list[NotebookResult]:
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
        run(root, "generate_assignment", assignment, "--force")
    rows: dict[tuple[str, str], list[NotebookResult]] = {}
    by_student: dict[str, list[str]] = {}
    for folder in folders:
        student, assignment = folder.parent.name, folder.name
        if assignment not in known:
            rows[student, assignment] = [NotebookResult(student, assignment, assignment, flags=["unknown assignment"])]
        else:
            by_student.setdefault(student, []).append(assignment)
    todo = sum(len(a) for a in by_student.values())
    bar = tqdm(total=len(rows) + todo, desc="grading", unit="submission")
    bar.update(len(rows))
    jobs = max(1, min(jobs, len(by_student)))
    if jobs == 1:
        for student, work in by_student.items():
            for assignment in work:
                rows[student, assignment] = grade_submission(root, assignment, student, per_submission_timeout)
                bar.update()
        for assignment in sorted({a for work in by_student.values() for a in work}):
            run(root, "generate_feedback", assignment, "--force")
    else:
        threads = max(1, (os.cpu_count() or 1) // jobs)
        env = {name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        env["COURSE_SANDBOX_PROTECT"] = str(root)  # the sandbox also guards the course root's grading data
        lock = threading.Lock()

        def learner(student: str, work: list[str]) -> tuple[Path, dict]:
            scratch = root / SCRATCH / student
            if scratch.exists():
                shutil.rmtree(scratch)
            scratch_root(scratch, root / "source", [root / c for c in ("nbgrader_config.py", "grader_config.py")],
                         work, root / "gradebook.db", {(student, a): root / "submitted" / student / a for a in work})
            out = {}
            for assignment in work:
                out[student, assignment] = grade_submission(scratch, assignment, student, per_submission_timeout, env)
                if (scratch / "autograded" / student / assignment).exists():
                    run(scratch, "generate_feedback", assignment, "--student", student, "--force", env=env)
                with lock:
                    bar.update()
            return scratch, out

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(learner, student, work): (student, work) for student, work in by_student.items()}
            for future in as_completed(futures):  # merged by this thread alone, one learner at a time
                student, work = futures[future]
                try:
                    scratch, out = future.result()
                    rows.update(out)
                    _merge(root, scratch, [r for results in out.values() for r in results])
                except Exception as exc:  # noqa: BLE001 - one learner's failure must not stop the cohort
                    for assignment in work:
                        results = rows.get((student, assignment)) or [NotebookResult(student, assignment, assignment)]
                        for r in results:
                            r.flags.append(f"grading failed: {type(exc).__name__}: {exc}"[:200])
                        rows[student, assignment] = results
        if (root / SCRATCH).exists() and not any((root / SCRATCH).iterdir()):
            (root / SCRATCH).rmdir()
    bar.close()
    run(root, "export")
    return [r for key in sorted(rows) for r in rows[key]]


def report(rows: list[Row]) -> str:
    from coursekit.sandbox import BWRAP, mode

    how = mode()
    lines = [f"Grading kernels ran under: {how}" + ("" if how == BWRAP else
             " (bubblewrap is missing or cannot create namespaces here: native code is not contained)"), "",
             "| student | assignment | score | flags |", "|---|---|---|---|"]
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
