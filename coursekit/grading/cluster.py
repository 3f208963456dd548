"""A Dask cluster on the loopback interface, started the way docs/instructors.md starts one by hand:
`dask scheduler` and `dask worker` processes, each in its own process group (tests/test_cluster.py
and `make bench-grade` use it; `make grade` itself, coursekit.grading.cohort, starts a local cluster with Dask's own
SubprocessCluster, or joins one at --scheduler)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from coursekit import settings

BIN = Path(sys.executable).parent  # `dask` is installed next to the interpreter (requirements.txt)


class LoopbackCluster:
    """`dask scheduler` and `workers` single-threaded `dask worker`s on 127.0.0.1, logs under `tmp`;
    `env` is added to the workers' environment. `address` is what `--scheduler` takes."""

    def __init__(self, tmp: Path, workers: int = 2, env: dict | None = None, timeout: float = 120):
        self.tmp = Path(tmp)
        self.file = self.tmp / "scheduler.json"
        self.env = settings.child_env(env)  # `dask` and nbgrader's tools are next to the interpreter
        self._logs = []
        self.scheduler = self._start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                     "--scheduler-file", str(self.file))
        deadline = time.monotonic() + timeout
        while not self.file.exists():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the scheduler did not start:\n{self.log('scheduler')}")
            time.sleep(0.2)
        self.workers = {f"w{i}": self._start("worker", "--scheduler-file", str(self.file), "--nthreads", "1",
                                             "--no-nanny", "--no-dashboard", "--memory-limit", "0",
                                             "--name", f"w{i}", name=f"w{i}") for i in range(workers)}
        from distributed import Client

        self.client = Client(scheduler_file=str(self.file), timeout=timeout)
        self.client.wait_for_workers(workers, timeout=timeout)
        self.address = self.client.scheduler.address

    def _start(self, what: str, *args: str, name: str | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"{name or what}.log", "w")
        self._logs.append(log)
        return subprocess.Popen([str(BIN / "dask"), what, *args], cwd=self.tmp, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()[-3000:]

    def name_of(self, address: str) -> str:
        return self.client.scheduler_info()["workers"][address]["name"]

    def kill(self, name: str) -> None:
        """SIGKILL worker `name` and everything in its process group."""
        os.killpg(self.workers[name].pid, signal.SIGKILL)
        self.workers[name].wait()

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        # the workers first, while the scheduler they report to is still there, then the scheduler
        # (stopped all at once, tests/test_cluster.py's killed-worker test spent 30 s here; in this order,
        # under 7 s: the 2-core course machine, 2026-12-06)
        for procs in (list(getattr(self, "workers", {}).values()), [self.scheduler]):
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        for log in self._logs:
            log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
