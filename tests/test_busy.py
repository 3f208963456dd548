"""The same grade on a busy machine (issue 18).

A small class of notebook 01 (a correct answer that is slow, a wrong answer, and an answer that
never returns) is
graded twice with `make grade`'s serial mode: once as the machine is, and once with the grading
(nbgrader, its kernels and the grader's checks) confined to one core that another process keeps
busy spinning, so that every part of grading gets about half of a core. The scores, flags and
hints must be the same both times.

The cell limit is lowered to 8 s of CPU time (the course's is 60 s) so that the slow answer
matters: its `simulate_tokens` copies its list on every round (quadratic), about 2.2 s of CPU for
the hidden checks' 123,000 rounds on the 2-core course machine (2026-12-06), so it passes within
8 s of CPU time however long it waits for the core, while on half a core it takes about twice
that on the clock. An earlier version of this test (a 15 s CPU limit, the same answer also summing
its list every round: about 5 s of CPU) showed what a wall-clock limit does instead: under 8 s of
wall-clock time that answer passed on the quiet machine and was cut off on the busy one (run by hand
on 2026-12-04, docs/instructors.md, "Limits"; not asserted: nothing here depends on timing). The
wall-clock backstop is 120 s.

Nothing is random: the checkers are seeded, so there is no false-failure probability beyond a
machine that cannot give the slow answer 8 s of CPU time for about 2 s of work.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from coursekit.grading.cohort import grade_course as grade
from coursekit.registry import read as read_assignment
from tests.support.e2e import derived_class
from tests.support.notebooks import fill
from tests.support.shared import copy_course

pytestmark = pytest.mark.slow

A = "01_acceptance_chain"
LIMITS = "\nc.JudgedExecute.cpu_timeout = 8\nc.JudgedExecute.timeout = 120\n"
SPIN = "while True:\n    pass\n"


def simulate_concatenating(alpha, K, rounds, rng):
    """Correct and slow: the list is copied on every round."""
    out = []
    for _ in range(rounds):
        n = 0
        while n < K and rng.random() < alpha:
            n += 1
        out = out + [n + 1]
    return np.array(out)


def simulate_endlessly(alpha, K, rounds, rng):
    """Never returns: the CPU limit stops it, quiet or busy."""
    while True:
        pass


def _class() -> dict:
    derived = derived_class(A)
    return {"slow": {**derived["correct_first"], "simulate_tokens": simulate_concatenating},
            "wrong": derived["wrong_first"],
            "endless": {**derived["correct_first"], "simulate_tokens": simulate_endlessly}}


def _graded(released, root, learners: dict) -> dict:
    course = copy_course(released, root)  # the session's generated course
    (root / "grader_config.py").write_text((root / "grader_config.py").read_text() + LIMITS)
    release = root / "course" / A / f"{A}.ipynb"
    for student, answers in learners.items():
        source = root / "source" / A / f"{A}.ipynb"
        course.submit(student, A, source if answers is None else fill(release, answers, root / "tmp" / student / release.name))
    rows = grade(root, [A], jobs=1)
    return {r.student: (r.score, r.max_score, sorted(r.flags), [(c.grade_id, c.score, c.hint) for c in r.cells])
            for r in rows}


def test_a_busy_core_changes_no_score_or_hint(tmp_path, released):
    learners = _class()
    quiet = _graded(released, tmp_path / "quiet", learners)
    core = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    spinner = subprocess.Popen([sys.executable, "-c", SPIN], preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    try:
        time.sleep(0.5)  # it holds its core before grading starts
        os.sched_setaffinity(0, {core})  # nbgrader, its kernels and the checks inherit the one busy core
        busy = _graded(released, tmp_path / "busy", learners)
    finally:
        os.sched_setaffinity(0, mine)
        spinner.kill()
        spinner.wait()
    assert busy == quiet
    score, full, flags, cells = quiet["slow"]
    assert score == full == read_assignment(A).max_score and not flags and not any(h for _, _, h in cells), quiet["slow"]
    assert quiet["wrong"][0] < full and any(hint for _, _, hint in quiet["wrong"][3]), quiet["wrong"]
    stopped = {gid: hint for gid, _, hint in quiet["endless"][3] if hint}
    assert list(stopped) == ["test_simulate_tokens__distribution"], quiet["endless"]
    assert "more than 8 s of CPU time" in stopped["test_simulate_tokens__distribution"]
