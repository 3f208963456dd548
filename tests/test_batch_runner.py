"""coursekit.batch: how a learner's driver is timed and what its fork server loads (issue 46)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from coursekit import batch


class _Exited:
    """A driver that has already run: run_learner only reaps it and reads its progress file."""
    returncode = 0


def test_a_submissions_seconds_come_from_the_drivers_own_stamps(tmp_path, monkeypatch):
    """Each submission's seconds run from the previous one's "done" stamp to its own, as the driver wrote
    them (the first one's from when the runner started the driver, its start-up included): not from when
    the runner, polling, happened to read them (its poll added up to `poll` seconds a submission)."""
    t0 = 1000.0
    clock = iter([t0 - 0.5])  # the runner starts the driver half a second before its first stamp

    def start(root, argv, env, log, fork):
        progress = Path(argv[argv.index("--progress") + 1])
        events = [("01_a", "start", t0), ("01_a", "done", t0 + 1.25), ("02_b", "start", t0 + 1.25),
                  ("02_b", "done", t0 + 4.0)]
        progress.write_text("".join(json.dumps(dict(assignment=a, event=e, at=at, returncode=0, log="", error="")) + "\n"
                                    for a, e, at in events))
        return _Exited()

    monkeypatch.setattr(batch, "_start", start)
    monkeypatch.setattr(batch, "_reap", lambda proc, usage, block=False: True)
    monkeypatch.setattr(batch.time, "monotonic", lambda: next(clock, t0 + 60.0))  # and reads them a minute later
    out = batch.run_learner(tmp_path, "someone", ["01_a", "02_b"], timeout=900, poll=0.01)
    assert {a: seconds for a, (_, seconds) in out.items()} == {"01_a": 1.75, "02_b": 2.75}
    assert all(proc.returncode == 0 for proc, _ in out.values())


def test_the_fork_server_preloads_torch_and_every_notebooks_checkers():
    """A driver imports torch and each notebook's checker module at its first hidden test; its fork server
    has them loaded already, for every notebook of the course (a new one's checkers included)."""
    from coursekit.paths import assignments

    preload = batch._checker_modules()
    assert preload[0] == "torch"
    numbers = {re.match(r"\d+", a).group(0) for a in assignments()}
    assert set(preload[1:]) == {f"solutions.checks.a{n}" for n in numbers}
