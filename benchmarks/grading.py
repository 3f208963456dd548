"""`make bench-grade`: how long grading a cohort takes, and what parallel grading gains.

Builds a synthetic cohort in a scratch course root: every learner hands in all assignments; a
submission holds the reference answers, except every fourth one (rotating over learners and
assignments), which is the unanswered release, as an unfinished notebook would be. Then, in
one run:

1. the ratio: the first --compare learners are graded by `make grade`'s code serially
   (--jobs 1: stock `nbgrader autograde` in the course root, one submission after another) and
   then in parallel (--jobs N: one scratch root per learner, merged back), side by side on the
   same machine; it prints both times, the ratio and whether every score and flag agrees;
2. the cohort: all --learners learners graded in parallel, from submissions to grades.csv.

    python benchmarks/grading.py [--learners 30] [--compare 4] [--jobs N] [ASSIGNMENT ...]

Prints a markdown summary last (also written to benchmarks/results-grading.md).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from coursekit.grade import grade
from coursekit.nbg import ScratchCourse, with_reference_answers
from coursekit.paths import SOURCE

OUT = Path(__file__).resolve().parent / "results-grading.md"


def cohort(root: Path, learners: int, assignments: list[str]) -> None:
    """A course root whose submitted/ holds `learners` learners x `assignments`."""
    course = ScratchCourse(root)
    for a_index, assignment in enumerate(assignments):
        release = course.generate(assignment) / f"{assignment}.ipynb"
        answered = with_reference_answers(release, root / "source" / assignment / f"{assignment}.ipynb",
                                          root / "tmp" / f"{assignment}.ipynb")
        for k in range(learners):
            unfinished = (k + a_index) % 4 == 3
            course.submit(f"learner{k:02d}", assignment, release if unfinished else answered, f"{assignment}.ipynb")


def timed(root: Path, assignments: list[str], students: list[str] | None, jobs: int):
    t0 = time.perf_counter()
    rows = grade(root, assignments, students, jobs=jobs)
    return time.perf_counter() - t0, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("assignments", nargs="*")
    ap.add_argument("--learners", type=int, default=30)
    ap.add_argument("--compare", type=int, default=4, help="learners graded both serially and in parallel")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    assignments = args.assignments or sorted(p.name for p in SOURCE.iterdir() if p.is_dir() and p.name[:2].isdigit())
    lines = [f"# Grading benchmark ({os.cpu_count()} CPU cores, --jobs {args.jobs})", "",
             f"Assignments: {', '.join(assignments)}. Every fourth submission is the unanswered release.", ""]
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        if args.compare:
            roots = [Path(tmp) / name for name in ("serial", "parallel")]
            for root in roots:
                cohort(root, args.compare, assignments)
            t_serial, serial = timed(roots[0], assignments, None, 1)
            t_parallel, parallel = timed(roots[1], assignments, None, args.jobs)
            key = {(r.student, r.assignment): (r.score, r.flags) for r in serial}
            agree = key == {(r.student, r.assignment): (r.score, r.flags) for r in parallel}
            lines += [f"## Serial against parallel, {args.compare} learners x {len(assignments)} assignments, side by side",
                      "", "| grading | wall time | per submission |", "|---|---|---|",
                      f"| serial (--jobs 1) | {t_serial:.0f} s | {t_serial / len(serial):.1f} s |",
                      f"| parallel (--jobs {args.jobs}) | {t_parallel:.0f} s | {t_parallel / len(parallel):.1f} s |",
                      "", f"**Speed-up of parallel grading: {t_serial / t_parallel:.2f}x.** "
                      f"Scores and flags identical: {'yes' if agree else 'NO'}.", ""]
            for root in roots:
                shutil.rmtree(root)
        if args.learners:
            root = Path(tmp) / "cohort"
            cohort(root, args.learners, assignments)
            total, rows = timed(root, assignments, None, args.jobs)
            graded = [r for r in rows if r.score is not None]
            full = sum(r.score == r.max_score for r in graded)
            per = {a: statistics.mean(r.seconds for r in rows if r.assignment == a) for a in assignments}
            lines += [f"## The cohort: {args.learners} learners x {len(assignments)} assignments, --jobs {args.jobs}",
                      "", f"**{len(rows)} submissions graded in {total / 60:.1f} minutes** "
                      f"({total / len(rows):.1f} s per submission, {total / args.learners:.0f} s per learner), "
                      f"from submitted/ to grades.csv and feedback; {full} full marks, "
                      f"{len(graded) - full} partial or zero, {len(rows) - len(graded)} not graded.", "",
                      "Mean autograde time per submission (one `nbgrader autograde` call, while "
                      f"{args.jobs} run at once): " + ", ".join(f"{a} {s:.1f} s" for a, s in per.items()), ""]
    text = "\n".join(lines)
    OUT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
