"""Learner drivers forked from a warm process instead of started cold (Linux).

A grading driver (`python -m coursekit.batch grade ...`) spends about 2 s of CPU on the 2-core course
machine importing nbgrader, nbconvert, the judge and the checkers' scientific stack before it
grades anything (python -X importtime: nbgrader and nbconvert 0.9 s, scipy.stats and matplotlib 1 s),
and a cohort, `make check` and the tests start one per learner. A fork server pays that once: it is
started with exactly the environment a driver would get, imports that stack, and then forks one
child per learner request. Each child is what a started driver was: its own process and its own
session (so a timeout kills it and its kernels together: os.killpg), the learner's environment
(os.environ set to the request's), working folder and log file, and it runs the driver's `main`.
Only one learner's code ever runs in one child, as before; the server never runs learner code.

The server reaps its children with os.wait4 and writes each one's exit status and CPU seconds (its
own and its kernels') to the status file the request named, so the runner reads both as it read
them from a child of its own. When the process that started the server dies, the server's stdin
closes: it kills its children's sessions and exits; each child also dies with the server
(PR_SET_PDEATHSIG). What the server imports reads the environment at import (OpenBLAS's thread
count, say) as a cold driver would, because a server serves one environment only: `Server.get` keeps
one per environment (PYTEST_CURRENT_TEST aside) and the child sets os.environ to the request's.

Only where fork is safe and the process facilities exist: Linux (`usable()`); elsewhere, and with
SubmissionRunner.fork = False (grader_config.py), every driver is started as its own process.
The driver's server (`coursekit.batch serve`) also preloads torch and the checker modules: torch's
OpenMP runtime reads its thread settings when it is loaded, from the server's environment, which
is the children's (one server per environment); importing it starts no thread pool (no parallel
region runs before a fork), so each child starts its own when it first computes.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from coursekit import platforms

PRELOAD = ("nbgrader.apps", "nbconvert.exporters.html", "jupyter_client.manager", "coursekit.judge.execute",
           "coursekit.judge.sandbox", "numpy", "scipy.stats", "matplotlib.pyplot", "nbformat")
IGNORED = ("PYTEST_CURRENT_TEST",)  # set per test by pytest; read by nothing the server imports
MAX_SERVERS = 4


PR_SET_PDEATHSIG = 1


def usable() -> bool:
    """Forking a warm server is safe and its process facilities exist: Linux only (macOS's system
    libraries are not fork-safe once loaded; Windows has no fork)."""
    return platforms.can_fork_server()


def die_with_parent() -> None:
    """Its own session, and SIGKILL when the process (thread) that started it dies (Linux's
    PR_SET_PDEATHSIG; nothing elsewhere)."""
    os.setsid()
    if platforms.has_prctl():
        platforms.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# ---------------------------------------------------------------- the server's side

def serve(main, preload=()) -> int:
    """The server: import `preload`, say "ready", then for each request line on stdin ({"argv",
    "cwd", "env", "log", "status"}) fork a child that runs main(argv) and answer its pid."""
    import importlib

    for name in (*preload, *PRELOAD):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    children: dict[int, str] = {}
    os.write(1, b"ready\n")
    buffer = b""
    while True:
        ready, _, _ = select.select([0], [], [], 0.05 if children else None)
        if ready:
            data = os.read(0, 1 << 16)
            if not data:  # whoever started the server is gone: so is every learner it was grading
                break
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(main, request)  # never returns
                children[pid] = request["status"]
                os.write(1, f"{pid}\n".encode())
        while children:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            path = children.pop(pid, None)
            if path is not None:
                tmp = f"{path}.tmp"
                Path(tmp).write_text(json.dumps({"returncode": os.waitstatus_to_exitcode(status),
                                                 "cpu": usage.ru_utime + usage.ru_stime}))
                os.replace(tmp, path)
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    return 0


def _child(main, request: dict) -> None:
    code = 1
    try:
        die_with_parent()
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]  # as `python -m` run there puts it
        sys.argv = [sys.argv[0], *request["argv"]]
        code = main(request["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the driver's log says what happened
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


# ---------------------------------------------------------------- the runner's side

class Forked:
    """A driver forked by a server, read like a subprocess.Popen: pid, poll, kill, wait."""

    def __init__(self, server: "Server", pid: int, status: Path):
        self.server, self.pid, self.status, self.returncode = server, pid, status, None

    def reap(self, usage: dict | None) -> bool:
        """Whether it has exited (its status is then in returncode, its CPU added to usage["cpu"])."""
        if self.returncode is not None:
            return True
        try:
            result = json.loads(self.status.read_text())
        except (OSError, ValueError):
            if self.server.proc.poll() is None:
                return False
            self.returncode = -signal.SIGKILL  # the server died, and its children with it
        else:
            self.returncode = result["returncode"]
            if usage is not None:
                usage["cpu"] = usage.get("cpu", 0.0) + result["cpu"]
        self.server.done()
        return True

    def wait(self, usage: dict | None) -> None:
        while not self.reap(usage):
            time.sleep(0.02)


class Server:
    """One fork server of one environment (`Server.get`), shared by the runner's threads."""

    _servers: dict[tuple, "Server"] = {}
    _lock = threading.Lock()

    def __init__(self, command: list[str], cwd: Path, env: dict):
        self.env, self.lock, self.in_flight = env, threading.Lock(), 0
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     start_new_session=True)
        if self.proc.stdout.readline() != b"ready\n":
            self.proc.kill()
            self.proc.wait()
            raise OSError("the grading fork server did not start")

    @classmethod
    def get(cls, command: list[str], cwd: Path, env: dict) -> "Server":
        key = tuple(sorted((k, v) for k, v in env.items() if k not in IGNORED))
        with cls._lock:
            server = cls._servers.get(key)
            if server is not None and server.proc.poll() is None:
                return server
            idle = [k for k, s in cls._servers.items() if s.in_flight == 0 or s.proc.poll() is not None]
            for old in idle[:max(0, len(cls._servers) - MAX_SERVERS + 1)]:
                cls._servers.pop(old).close()
            if not cls._servers:
                atexit.register(cls.close_all)
            server = cls._servers[key] = cls(command, cwd, env)
            return server

    @classmethod
    def close_all(cls) -> None:
        with cls._lock:
            servers, cls._servers = list(cls._servers.values()), {}
        for server in servers:
            server.close()

    def fork(self, argv: list[str], cwd: Path, log: Path, status: Path) -> Forked:
        """A child running the driver's main(argv) in `cwd`, its output in `log`."""
        request = dict(argv=argv, cwd=str(cwd), env=self.env, log=str(log), status=str(status))
        with self.lock:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
            if not answer.strip().isdigit():
                raise OSError("the grading fork server stopped")
            self.in_flight += 1
        return Forked(self, int(answer), status)

    def done(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
