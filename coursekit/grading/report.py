"""What grading prints, in one module: `learner_report`, points per exercise with the hint of every
failing check (`make check`, coursekit.check), and `cohort_report`, the cohort's table with the
integrity report below it (`make grade`, coursekit.grade, written to grading-report.md). Both read
the same results (coursekit.grading.results.NotebookResult)."""
from __future__ import annotations

from collections import Counter, OrderedDict

from coursekit.grading.results import NotebookResult


def learner_report(results: list[NotebookResult], total_line: bool = True) -> str:
    """One learner's notebooks: each exercise's points, the distinct hints of its failing checks,
    why a notebook was not graded, what the instructor will see; the total unless `total_line` is False."""
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
    if total_line:
        lines.append(f"TOTAL {total:g}/{total_max:g}")
    return "\n".join(lines)


def cohort_report(rows: list[NotebookResult]) -> str:
    """The cohort: the layer its kernels ran under, a row per notebook (who, what, score, flags),
    and the integrity report (the code scan's flags and what the sandbox refused)."""
    if any(r.sandbox for r in rows):
        layers = Counter(r.sandbox for r in rows if r.sandbox)
    else:
        from coursekit.judge.layers import describe, mode

        layers = Counter({describe(mode()): 0})
    how = next(iter(layers)) if len(layers) == 1 else "; ".join(
        f"{layer} ({n} notebook{'' if n == 1 else 's'})" for layer, n in layers.items())
    lines = [f"Grading kernels ran under: {how}", "",
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
