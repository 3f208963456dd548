"""`make check`: grade the learner's workspace with the hidden tests and print points per exercise.

Grading one learner is grading a cohort of one: the workspace's notebooks are submitted to a
scratch course root and graded by `coursekit.grading.driver.grade_learner`, the function `make grade` runs
for each learner (serially or on a cluster's workers), without the feedback pages, so a dead kernel, a renamed notebook, a time limit or a sandbox refusal is described to the
learner exactly as to the instructor. The repository and the workspace are left untouched. The
report (coursekit.grading.report.learner_report) gives each exercise's points and the one-sentence hint of every failing check.

Notebooks are graded one at a time, each reported as soon as it is graded. A notebook whose answer
cells are all still as released is not graded: it is one line, "not started: N exercises".

    python -m coursekit.check [WORKSPACE] [NOTEBOOK ...]     (make check NB="01 02")

NOTEBOOK: an assignment's name or its number ("01_acceptance_chain", "01", "1").
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from coursekit import platforms
from coursekit.grading.report import learner_report
from coursekit.grading.results import NotebookResult
from coursekit.grading.scratch import ScratchCourse
from coursekit.paths import COURSE, WORKSPACE, assignments
from coursekit.reference import answer_sources

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
            results += course.grade_submission(assignment, STUDENT, feedback=False)
    return results


def resolve(names: list[str], known: list[str] | None = None) -> list[str]:
    """Assignment names from what a learner types: the name, its number ("01" or "1") or a prefix."""
    known = known if known is not None else assignments()
    out = []
    for name in names:
        hits = [a for a in known if a == name] or [a for a in known if a.split("_", 1)[0] == name.zfill(2)] \
            or [a for a in known if a.startswith(name)]
        if len(hits) != 1:
            raise ValueError(f"{name!r} is not one notebook of the course: give its number, one of "
                             + ", ".join(a.split("_", 1)[0] for a in known))
        out.append(hits[0])
    return list(dict.fromkeys(out))


def not_started(workspace: Path, assignment: str, course: Path = COURSE) -> int | None:
    """The number of exercises when every answer cell of the assignment's notebooks in `workspace`
    is as released in `course` (nothing to grade); None when any was changed, or a notebook is
    missing or unreadable (then grading says what is wrong)."""
    released = sorted((course / assignment).glob("*.ipynb"))
    if not released:
        return None
    exercises = 0
    for nb in released:
        mine = workspace / assignment / nb.name
        try:
            ours, theirs = answer_sources(nb), answer_sources(mine)
        except Exception:  # missing, not JSON, not a notebook: grading reports it
            return None
        if ours != theirs:
            return None
        exercises += len(ours)
    return exercises


def check(workspace: Path, which: list[str], out=print) -> tuple[float, float]:
    """Grade `which` one at a time, reporting each as soon as it is graded; (points, out of) over the
    notebooks graded. Untouched notebooks are one line each and are not graded."""
    total = total_max = 0.0
    skipped = []
    for assignment in which:
        count = not_started(workspace, assignment)
        if count is not None:
            out(f"{assignment}: not started: {count} exercise{'s' if count != 1 else ''}")
            skipped.append(assignment)
            continue
        out(f"{assignment}: grading ...")
        t0 = time.perf_counter()
        results = grade_workspace(workspace, [assignment])
        out(learner_report(results, total_line=False))
        out(f"  ({time.perf_counter() - t0:.0f} s)")
        total += sum(r.score or 0 for r in results)
        total_max += sum(r.max_score or 0 for r in results)
    graded = len(which) - len(skipped)
    out(f"TOTAL {total:g}/{total_max:g} over {graded} notebook{'s' if graded != 1 else ''} graded, "
        f"{total:g}/{course_points():g} of the whole course"
        + (f"; not started: {', '.join(a.split('_', 1)[0] for a in skipped)}" if skipped else ""))
    if graded:
        from coursekit.judge.layers import AUDIT, describe, mode

        if mode() == AUDIT:  # said once: what guarded the grading kernels (the instructors' guide's words)
            out(f"Grading kernels ran under: {describe(AUDIT)}")
    return total, total_max


def course_points() -> float:
    """The points of every notebook of the course."""
    from coursekit import registry

    return float(sum(registry.read(a).max_score for a in assignments()))


def main(argv=None) -> int:
    platforms.require_posix()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workspace", nargs="?", type=Path, default=WORKSPACE)
    ap.add_argument("notebooks", nargs="*", help="only these notebooks: names or numbers (default: all)")
    args = ap.parse_args(argv)
    if not args.workspace.exists():
        print(f"{args.workspace} does not exist: run `make lab` first.")
        return 1
    try:
        which = resolve(args.notebooks) if args.notebooks else assignments()
    except ValueError as e:
        print(e)
        return 2
    check(args.workspace, which, out=lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
