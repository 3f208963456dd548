"""`make grade`: grade a whole cohort with stock nbgrader, in one command.

    python -m coursekit.grade [--root .] [--jobs N] [--scheduler ADDRESS] [--student S ...] [ASSIGNMENT ...]

For every submitted/<student>/<assignment>/ under the course root (nbgrader's layout): preflight,
autograde, feedback and the result read and classified exactly as `make check` does it for one
learner, every submission within its own wall-clock limit (grader_config.py:
SubmissionRunner.timeout); `nbgrader export` (grades.csv); and a summary (who, what, score, flags)
on stdout and in grading-report.md, with the integrity report below it. A progress bar runs while
it works. `--jobs 1` grades each learner in turn in the course root itself; otherwise one task per
learner runs on a Dask cluster, a local one of N workers or the one at --scheduler ADDRESS
(docs/instructors.md: "Grading on a cluster"). How: coursekit.grading.cohort.

This module is the command line only: coursekit.grading.cohort.grade_course grades,
coursekit.grading.report.cohort_report writes the report.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from coursekit.grading.cohort import grade_course
from coursekit.grading.report import cohort_report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("assignments", nargs="*")
    ap.add_argument("--student", action="append", help="grade only this student (repeatable)")
    ap.add_argument("--root", type=Path, default=Path.cwd())
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="learners graded at the same time, each in its own scratch root (default: CPU cores)")
    ap.add_argument("--scheduler", metavar="ADDRESS",
                    help="grade on this running Dask cluster (tcp://HOST:8786, docs/instructors.md) instead of a local one")
    ap.add_argument("--run-measurements", action="store_true",
                    help="also run the cells grading leaves out (measurements, plots, the explorer): the "
                         "learner's figures in the feedback (nbgrader's JudgedExecute.run_measurements)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    t0 = time.perf_counter()
    rows = grade_course(root, args.assignments or None, args.student, jobs=args.jobs, scheduler=args.scheduler,
                        run_measurements=args.run_measurements)
    text = cohort_report(rows)
    (root / "grading-report.md").write_text(text)
    print(text)
    print(f"{len(rows)} submissions graded in {time.perf_counter() - t0:.0f} s; grades.csv and grading-report.md "
          f"written, feedback under feedback/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
