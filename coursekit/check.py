"""`make check`: grade the learner's workspace with the hidden tests and print points per exercise.

Grading one learner is grading a cohort of one: the workspace's notebooks are submitted to a
scratch course root and graded by `coursekit.nbg.grade_submission`, the same code `make grade`
uses, so a dead kernel, a renamed notebook, a time limit or a sandbox refusal is described to the
learner exactly as to the instructor. The repository and the workspace are left untouched. The
report gives each exercise's points and the one-sentence hint of every failing check.

    python -m coursekit.check [WORKSPACE] [ASSIGNMENT ...]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

from coursekit.nbg import NotebookResult, ScratchCourse, grade_submission
from coursekit.paths import WORKSPACE, assignments

STUDENT = "me"


def grade_workspace(workspace: Path, which: list[str] | None = None) -> list[NotebookResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="specdec-check-") as tmp:
        course = ScratchCourse(Path(tmp))
        for assignment in which or assignments():
            course.generate(assignment)
            folder = course.root / "submitted" / STUDENT / assignment
            folder.mkdir(parents=True)
            for nb in sorted((Path(workspace) / assignment).glob("*.ipynb")):
                if not nb.stem.endswith(".course-update"):
                    course.submit(STUDENT, assignment, nb)
            results += grade_submission(course.root, assignment, STUDENT)
    return results


def report(results: list[NotebookResult]) -> str:
    lines, total, total_max = [], 0.0, 0.0
    for r in results:
        lines.append(f"{r.assignment}/{r.notebook}.ipynb")
        if r.error:
            lines.append(f"  not graded: {r.error}")
        by_exercise: "OrderedDict[str, list]" = OrderedDict()
        for cell in r.cells:
            by_exercise.setdefault(cell.exercise, []).append(cell)
        for exercise, cells in by_exercise.items():
            got = sum(c.score for c in cells)
            out_of = sum(c.max_score for c in cells)
            mark = "ok " if got == out_of else "   "
            lines.append(f"  {mark}{exercise:<28} {got:g}/{out_of:g}")
            hints = [c.hint or "failed (no message)" for c in cells if c.score < c.max_score]
            for hint in dict.fromkeys(hints):  # each distinct hint once, in cell order
                lines.append(f"        - {hint}")
        if not r.error:
            for flag in r.flags:
                lines.append(f"  ! {flag}")
        for note in r.integrity:
            lines.append(f"  ! the instructor will see: {note}")
        if r.max_score:
            lines.append(f"  {'points':<31} {r.score:g}/{r.max_score:g}")
            total += r.score
            total_max += r.max_score
    lines.append(f"TOTAL {total:g}/{total_max:g}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workspace", nargs="?", type=Path, default=WORKSPACE)
    ap.add_argument("assignments", nargs="*", help="only these assignments (default: all)")
    args = ap.parse_args(argv)
    if not args.workspace.exists():
        print(f"{args.workspace} does not exist: run `make lab` first.")
        return 1
    print(report(grade_workspace(args.workspace, args.assignments or None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
