"""`make check`: grade the learner's workspace with the hidden tests and print points per exercise.

It runs stock nbgrader (generate_assignment, then autograde) in a scratch course root, so the
repository and the workspace are left untouched, then prints each exercise's points and the
one-sentence hint of every failing check.

    python -m coursekit.check [WORKSPACE] [ASSIGNMENT ...]
"""
from __future__ import annotations

import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

from coursekit.nbg import NotebookResult, ScratchCourse
from coursekit.paths import WORKSPACE, assignments, source_notebooks

STUDENT = "me"


def grade_workspace(workspace: Path, which: list[str] | None = None) -> list[NotebookResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="specdec-check-") as tmp:
        course = ScratchCourse(Path(tmp))
        for assignment in which or assignments():
            course.generate(assignment)
            present = []
            for nb in source_notebooks(assignment):
                mine = workspace / assignment / nb.name
                if mine.exists():
                    course.submit(STUDENT, assignment, mine)
                    present.append(nb.stem)
                else:
                    results.append(NotebookResult(STUDENT, assignment, nb.stem,
                                                  error=f"{mine} not found (run `make lab` first)"))
            if present:
                course.autograde(assignment)
                results += [r for r in course.results(assignment, [STUDENT]) if r.notebook in present]
    return results


def report(results: list[NotebookResult]) -> str:
    lines, total, total_max = [], 0.0, 0.0
    for r in results:
        lines.append(f"{r.assignment}/{r.notebook}.ipynb")
        if r.error:
            lines.append(f"  not graded: {r.error}")
            continue
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
        lines.append(f"  {'points':<31} {r.score:g}/{r.max_score:g}")
        total += r.score
        total_max += r.max_score
    lines.append(f"TOTAL {total:g}/{total_max:g}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    workspace = Path(argv[0]) if argv else WORKSPACE
    which = argv[1:] or None
    if not workspace.exists():
        print(f"{workspace} does not exist: run `make lab` first.")
        return 1
    print(report(grade_workspace(workspace, which)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
