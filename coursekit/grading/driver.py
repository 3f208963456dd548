"""Running nbgrader, and grading one learner: the one way the course grades.

A submission is graded in four steps:
1. `preflight` (coursekit.grading.integrity): the notebook is there and parses; its code is
   scanned for integrity flags;
2. `nbgrader autograde` (stock nbgrader, our configuration), each submission under its own
   wall-clock limit (coursekit.batch.SubmissionRunner.timeout, grader_config.py);
3. `read` (coursekit.grading.results): scores, hints, problems and the sandbox's refusals;
4. classification: each problem becomes one plain sentence.

`grade_learner` is the one way the course grades (make check, make grade serial or on a
cluster); `autograde_stock` keeps stock serial nbgrader for the benchmark's "before" and the
tests. `generate` (coursekit.batch) is the one way it generates. Who to grade and merging
parallel results: coursekit.grading.cohort; printing: coursekit.grading.report.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coursekit import settings, threads
from coursekit.batch import run_learner, submission_timeout
from coursekit.grading.integrity import preflights
from coursekit.grading.results import NotebookResult, classify
from coursekit.paths import GRADER_CONFIG, NBGRADER_CONFIG

NBGRADER = [sys.executable, "-m", "nbgrader"]
CONFIGS = (NBGRADER_CONFIG, GRADER_CONFIG)


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


def grade_learner(root: Path, student: str, work: list[str], timeout: float | None = None, env: dict | None = None,
                  usage: dict | None = None, feedback: bool = True, flags: list[str] | None = None
                  ) -> dict[tuple[str, str], list[NotebookResult]]:
    """The one way the course grades: every submission of `student` in `work` (assignments), in
    course root `root`, by one nbgrader process (coursekit.batch: autograde, then feedback unless
    `feedback` is False, per assignment; each submission within `timeout` seconds of wall-clock
    time, by default the root's SubmissionRunner.timeout), preflighted before and read and classified after. `make check` (a scratch root of one
    learner), serial `make grade` (the course root) and each task of a cluster (a scratch root on
    the worker, coursekit.grading.bundle) all call it. `usage`: run_learner's CPU seconds; `flags`:
    nbgrader settings for the run (--JudgedExecute.run_measurements=True). The gradebook must know
    the assignments (`generate` first)."""
    checks = {a: preflights(root, a, student) for a in work}
    procs = run_learner(root, student, work, timeout, env, usage=usage, feedback=feedback, flags=flags)
    return {(student, a): classify(root, a, student, checks[a], *procs[a]) for a in work}


def autograde_stock(root: Path, assignment: str, student: str, timeout: float | None = None,
                    env: dict | None = None, flags: tuple[str, ...] = ()) -> list[NotebookResult]:
    """Stock serial nbgrader, kept for what it shows: preflight, `nbgrader autograde ASSIGNMENT
    --student STUDENT` (one process per submission, as the stock commands of docs/instructors.md run it), read.
    make bench-grade's "before" and the tests that show stock nbgrader grades the course use it;
    the course itself grades with `grade_learner`. `flags`: nbgrader settings for the run
    (--JudgedExecute.run_measurements=True)."""
    import time

    checks = preflights(root, assignment, student)
    t0 = time.perf_counter()
    timeout = submission_timeout(root) if timeout is None else timeout
    proc = run(root, "autograde", assignment, "--student", student, "--force", *flags, timeout=timeout, env=env)
    return classify(root, assignment, student, checks, proc, time.perf_counter() - t0)
