"""`make bench-grade`: where a submission's grading time goes, before and after, and grading on a
two-worker cluster. In one run, on one machine:

1. Before and after, side by side: one learner who hands in every assignment with the reference
   answers, graded twice, one submission at a time, by today's code in two configurations:
   - before: stock serial nbgrader, one `nbgrader autograde` process per submission, every cell run
     (measurements included: --JudgedExecute.run_measurements=True), torch's default threads and
     OpenMP's default wait in the kernels: the course as a plain nbgrader install would grade it;
   - after: `make grade`'s engine on a one-worker cluster: one nbgrader process for all the
     learner's assignments (coursekit.batch, forked from a warm server on Linux), measurement cells
     not run, one torch thread per kernel.
   Both grade the same notebooks with the same checkers, so they must agree: the bench exits 1,
   naming each assignment and cell, when a score, a flag or a hint differs.
   Per assignment: seconds per submission both ways and where they went (kernel start, the
   learner's cells, the hidden checks, other cells: COURSE_GRADING_PROFILE); and the CPU seconds the
   learner's grading used both ways (every grading process and its kernels: less moved by other
   load on the machine than wall-clock time).
2. The cluster: --learners learners x every assignment (every fourth submission the unanswered
   release, rotating) graded on a `dask scheduler` and two `dask worker`s on 127.0.0.1
   (coursekit.grading.cluster, as docs/instructors.md starts them by hand): submissions per minute, and what
   the merge costs the main process per learner.

    python benchmarks/grading.py [--learners 4] [ASSIGNMENT ...]

Prints a markdown summary last (also written to benchmarks/results-grading.md). About 4-5 minutes
with --learners 1 on the 2-core course machine (2026-12-06); each more learner adds the cluster's
8 submissions, about 25 s.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from coursekit import settings
from coursekit.grading.cluster import LoopbackCluster
from coursekit.grading.cohort import MEASUREMENTS_FLAG, grade_course
from coursekit.grading.driver import autograde_stock, run
from coursekit.grading.scratch import ScratchCourse
from coursekit.reference import with_reference_answers
from coursekit.paths import SOURCE

OUT = Path(__file__).resolve().parent / "results-grading.md"
PROFILE = settings.GRADING_PROFILE.name  # each notebook's breakdown, one json line
PARTS = ("startup", "learner", "hidden", "other")


def cohort(root: Path, learners: int, assignments: list[str], blanks: bool = True) -> None:
    """A course root whose submitted/ holds `learners` learners x `assignments`; with `blanks`,
    every fourth submission is the unanswered release, as an unfinished notebook would be."""
    course = ScratchCourse(root)
    for a_index, assignment in enumerate(assignments):
        release = course.generate(assignment) / f"{assignment}.ipynb"
        answered = with_reference_answers(release, root / "source" / assignment / f"{assignment}.ipynb",
                                          root / "tmp" / f"{assignment}.ipynb")
        for k in range(learners):
            unfinished = blanks and (k + a_index) % 4 == 3
            course.submit(f"learner{k:02d}", assignment, release if unfinished else answered, f"{assignment}.ipynb")


def grade_before(root: Path, assignments: list[str]) -> list:
    """Each submission in root graded by stock serial nbgrader with today's configuration: one
    `nbgrader autograde` process per submission, every cell run, torch's default threads and OpenMP's
    default wait; then generate_feedback. The gradebook already knows the assignments."""
    env = {"OMP_WAIT_POLICY": None}  # OpenMP's default wait; no thread setting: torch's default threads
    rows = []
    for assignment in assignments:
        rows += autograde_stock(root, assignment, "learner00", env=env, flags=(MEASUREMENTS_FLAG,))
    for assignment in assignments:
        run(root, "generate_feedback", assignment, "--force", env=env)
    return rows


def differences(before, after) -> list[str]:
    """Every (learner, assignment, cell) whose score or hint differs, and every submission whose score or
    flags differ: one line each, naming the assignment and the cell."""
    b, a = outcome(before), outcome(after)
    lines = []
    for key in sorted(set(b) | set(a)):
        student, assignment = key
        if key not in b or key not in a:
            lines.append(f"{assignment} ({student}): graded only {'after' if key in a else 'before'}")
            continue
        (score_b, flags_b, cells_b), (score_a, flags_a, cells_a) = b[key], a[key]
        if score_b != score_a or flags_b != flags_a:
            lines.append(f"{assignment} ({student}): score {score_b} before, {score_a} after; flags {flags_b} before, "
                         f"{flags_a} after")
        by_id_b, by_id_a = {c[0]: c[1:] for c in cells_b}, {c[0]: c[1:] for c in cells_a}
        for cell in sorted(set(by_id_b) | set(by_id_a)):
            if by_id_b.get(cell) != by_id_a.get(cell):
                lines.append(f"{assignment} ({student}), cell {cell}: {by_id_b.get(cell)} before, {by_id_a.get(cell)} after")
    return lines


def profile(path: Path) -> dict[str, dict]:
    """{assignment: the judge's breakdown of its notebook} from a COURSE_GRADING_PROFILE file."""
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            out[str(entry.get("notebook") or "").split("/")[-1].removesuffix(".ipynb")] = entry
    return out


def outcome(rows) -> dict:
    return {(r.student, r.assignment): (r.score, sorted(r.flags), [(c.grade_id, c.score, c.hint) for c in r.cells])
            for r in rows}


def breakdown(entry: dict | None) -> str:
    if not entry:
        return "-"
    return " / ".join(f"{entry.get(k, 0):.1f}" for k in PARTS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("assignments", nargs="*")
    ap.add_argument("--learners", type=int, default=4, help="learners graded on the two-worker cluster")
    args = ap.parse_args(argv)
    from coursekit.judge import layers

    bwrap_kernels = layers.mode() == layers.BWRAP  # then the kernels' CPU time is not seen
    assignments = args.assignments or sorted(p.name for p in SOURCE.iterdir() if p.is_dir() and p.name[:2].isdigit())
    lines = [f"# Grading benchmark ({os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, "
             f"{time.strftime('%Y-%m-%d')})", "",
             f"Assignments: {', '.join(assignments)}.", ""]
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        tmp = Path(tmp)
        before_root, after_root = tmp / "before", tmp / "after"
        for root in (before_root, after_root):
            cohort(root, 1, assignments, blanks=False)
        # before: stock serial nbgrader with today's configuration, every cell run, torch's default threads
        os.environ[PROFILE] = str(tmp / "before.jsonl")
        t0, used = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        before = grade_before(before_root, assignments)
        t_before = time.perf_counter() - t0
        now = resource.getrusage(resource.RUSAGE_CHILDREN)  # every process it ran, their kernels included
        cpu_before = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
        # after: the engine, one worker, one nbgrader process for the learner
        (tmp / "one").mkdir()
        with LoopbackCluster(tmp / "one", workers=1, env={PROFILE: str(tmp / "after.jsonl")}) as cluster:
            t0, spent = time.perf_counter(), {}
            after = grade_course(after_root, assignments, scheduler=cluster.address, timings=spent)
            t_after = time.perf_counter() - t0
        cpu_after = spent["cpu"]  # the learner's driver and its kernels, measured on the worker
        del os.environ[PROFILE]
        differ = differences(before, after)
        agree = not differ
        prof_b, prof_a = profile(tmp / "before.jsonl"), profile(tmp / "after.jsonl")
        sec_b = {r.assignment: r.seconds for r in before}
        sec_a = {r.assignment: r.seconds for r in after}
        mean_b, mean_a = statistics.mean(sec_b.values()), statistics.mean(sec_a.values())
        lines += ["## Before and after, one submission at a time, side by side", "",
                  "One learner with the reference answers in every assignment, graded by today's code twice. "
                  "Before: stock serial `nbgrader autograde`, one process per submission, every "
                  "cell run. After: `make grade`'s "
                  "engine on one worker: one nbgrader process for the learner, measurement cells not run "
                  "(its kernels get 1 torch/BLAS thread and OpenMP's passive wait, coursekit.threads; before's get torch's default threads and wait). Seconds per submission, and "
                  "the notebook's time inside nbgrader as kernel start / learner's cells / hidden checks / "
                  "other cells.", "",
                  "| assignment | score | before | after | before: start / learner / hidden / other "
                  "| after: start / learner / hidden / other | cells skipped |", "|---|---|---|---|---|---|---|"]
        for r in after:
            a = r.assignment
            lines.append(f"| {a} | {r.score:g} / {r.max_score:g} | {sec_b.get(a, 0):.1f} s | {sec_a.get(a, 0):.1f} s | "
                         f"{breakdown(prof_b.get(a))} | {breakdown(prof_a.get(a))} | {prof_a.get(a, {}).get('skipped', '-')} |")
        lines += ["", f"**Mean per submission: before {mean_b:.1f} s, after {mean_a:.1f} s: "
                  f"{mean_b / mean_a:.2f}x faster.** Whole runs, generate_assignment, feedback and grades.csv "
                  f"included: before {t_before:.0f} s, after {t_after:.0f} s (the cluster's start not included). "
                  f"Scores, flags and hints identical: {'yes' if agree else 'NO'}.", "",
                  *(["Where they differ:", ""] + [f"- {line}" for line in differ] + [""] if differ else []),
                  (f"**CPU time of the learner's grading, every process with its kernels: before {cpu_before:.0f} "
                   f"core-seconds, after {cpu_after:.0f}: {cpu_before / cpu_after:.2f}x less.** (Before: each "
                   "`nbgrader autograde` and `generate_feedback` process; after: the learner's driver on the worker, "
                   "feedback included. CPU time moves less than wall-clock time when other programs share the "
                   "machine, and it is what a cohort pays per learner.)") if not bwrap_kernels else
                  ("CPU time not reported: the grading kernels ran under bubblewrap, whose PID namespace does not "
                   "hand their CPU time back to the process that waits for them (COURSE_SANDBOX=landlock measures it, "
                   "where the Linux kernel has Landlock; COURSE_SANDBOX=audit everywhere)."), ""]

        # the cluster: two workers on loopback
        root = tmp / "cohort"
        cohort(root, args.learners, assignments)
        (tmp / "two").mkdir()
        timings = {}
        with LoopbackCluster(tmp / "two", workers=2) as cluster:
            t0 = time.perf_counter()
            rows = grade_course(root, assignments, scheduler=cluster.address, timings=timings)
            total = time.perf_counter() - t0
        graded = [r for r in rows if r.score is not None]
        full = sum(r.score == r.max_score for r in graded)
        merge = timings["merge"] / max(1, timings["merged"])
        per_learner = timings["cpu"] / max(1, timings["merged"])
        lines += [f"## A cohort on a scheduler and two workers on 127.0.0.1 ({args.learners} learners x "
                  f"{len(assignments)} assignments)", "",
                  f"**{len(rows)} submissions in {total:.0f} s: {len(rows) / total * 60:.1f} submissions per minute** "
                  f"({total / len(rows):.1f} s per submission with two at a time; generate_assignment, the "
                  f"transfers, merges and grades.csv included); {full} full marks, {len(graded) - full} partial "
                  f"or zero (the unanswered ones), {len(rows) - len(graded)} not graded. The main process spent "
                  f"{merge:.2f} s merging each learner's {len(assignments)} submissions (unpack, copy, gradebook)"
                  + ("." if bwrap_kernels else f"; a learner's grading used {per_learner:.0f} core-seconds on the "
                     "workers (every fourth submission unanswered)."), ""]
    text = "\n".join(lines)
    OUT.write_text(text)
    print(text)
    if differ:
        print(f"bench-grade: before and after disagree on {len(differ)} cells or submissions (listed above): "
              "the two configurations no longer grade alike", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
