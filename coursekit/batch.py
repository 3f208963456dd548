"""One nbgrader process for all of one learner's submissions: `make grade`'s worker side.

    python -m coursekit.batch grade STUDENT ASSIGNMENT ... --progress FILE [--no-feedback] [NBGRADER_FLAGS]
    python -m coursekit.batch generate ASSIGNMENT ...                          (cwd: a course root)

Stock `nbgrader autograde` and `generate_feedback` are one process each, and each process pays
nbgrader's and the course configuration's start-up (about 8-10 s on the 2-core course machine)
before it grades anything. This module loads the configuration once, as every nbgrader command
does (nbgrader_config.py in the working folder, which loads grader_config.py), and then runs
nbgrader's own API (`NbGraderAPI.autograde`, then `NbGraderAPI.generate_feedback`) for each
assignment in turn, in the same process. Each notebook keeps its own limits (nbgrader's
per-cell timeout, the sandbox); the per-submission wall-clock limit (`SubmissionRunner.timeout`,
set in grader_config.py) is kept by the caller (`SubmissionRunner.run_learner`), which watches the
progress file, kills the whole process group of a submission that overruns, records it, and
starts a new driver for the learner's remaining assignments.

The progress file gets one json line per event ({"assignment", "event": "start" | "done", "at",
"returncode", "log", "error"}; "at": time.monotonic() when it was written, the machine's
monotonic clock, which the runner reads too), written and flushed before the next submission starts: a file,
not a pipe, so that a process left running by a learner's native code cannot block the reader.
Only one learner's code ever runs in one driver (the checkers judge in this process), so what a
submission might do to the process can only touch that learner's own other submissions.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from traitlets import Bool, Float
from traitlets.config import Configurable

from coursekit import settings, threads
from coursekit.grading import forkserver
from coursekit.grading.config import course_config
from coursekit.grading.forkserver import Forked


def _emit(progress: Path, **event) -> None:
    event["at"] = time.monotonic()  # the clock of run_learner's seconds (system-wide: CLOCK_MONOTONIC)
    with open(progress, "a") as f:
        f.write(json.dumps(event) + "\n")
        f.flush()
        os.fsync(f.fileno())


# jsonschema (under nbformat) imports rfc3987_syntax when it is installed (jupyter-events brings it
# in), and that module builds an Earley parser of RFC 3987 at import: about 1.5 s of every driver's
# start on the 2-core course machine (python -X importtime), for the "iri" format checker, which
# nothing here uses: nbformat, nbconvert, nbclient and nbgrader validate without format checkers.
# `make venv` uninstalls it (Makefile); where it is installed anyway (an environment built from
# environment.yml), marking it absent makes jsonschema skip that checker, as it does where the
# package is not installed (python-jsonschema/jsonschema#1428 asks for the import to be lazy).
SKIPPED_IMPORTS = ("rfc3987_syntax",)


def _share_compiled_templates() -> None:
    """Every feedback page is rendered by a new nbconvert HTMLExporter, whose new Jinja environment
    compiled the same nine templates again (0.3-0.4 s of each generate_feedback on the 2-core
    course machine). Jinja's own bytecode cache, kept in memory and shared by the driver's
    exporters, compiles each once; Jinja checks each entry against the template's source."""
    import jinja2
    from nbconvert.exporters.templateexporter import TemplateExporter

    class MemoryBytecodeCache(jinja2.BytecodeCache):
        def __init__(self):
            self.store: dict[str, bytes] = {}

        def load_bytecode(self, bucket):
            if bucket.key in self.store:
                bucket.bytecode_from_string(self.store[bucket.key])

        def dump_bytecode(self, bucket):
            self.store[bucket.key] = bucket.bytecode_to_string()

    cache, create = MemoryBytecodeCache(), TemplateExporter._create_environment

    def create_environment(self):
        environment = create(self)
        environment.bytecode_cache = cache
        return environment

    TemplateExporter._create_environment = create_environment


def _checker_modules() -> tuple[str, ...]:
    """torch and every checker module (solutions.checks.aNN, with what they import: specdec, scipy):
    what a driver imports at its first hidden test of each notebook (0.7 s for torch, 0.1-0.5 s for a
    checker module, on the 2-core course machine), imported once by the fork server instead.
    Importing torch runs no parallel region, so no OpenMP thread pool exists yet when the server
    forks, and the server serves one environment (the children's), whose thread settings torch read."""
    import pkgutil

    from coursekit.judge.verdict import CHECKS

    try:
        package = __import__(CHECKS, fromlist=["_common"])
    except ImportError:  # no checkers on this machine: nothing to preload
        return ()
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("a"))
    return ("torch", *(f"{CHECKS}.{name}" for name in names))


def _api(flags: list[str] | None = None):
    """nbgrader's API over the configuration in the working folder, plus `flags` (nbgrader's own
    command-line settings, such as --JudgedExecute.run_measurements=True)."""
    for name in SKIPPED_IMPORTS:
        sys.modules.setdefault(name, None)
    _share_compiled_templates()
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.baseapp import NbGrader

    app = NbGrader()  # reads nbgrader_config.py from the working folder, as `nbgrader autograde` does
    app.initialize(list(flags or []))
    return app, NbGraderAPI(coursedir=app.coursedir, parent=app)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="`generate_assignment --force` each assignment (records it in the gradebook)")
    gen.add_argument("assignments", nargs="+")
    grade = sub.add_parser("grade", help="autograde (and give feedback for) one learner's assignments")
    grade.add_argument("student")
    grade.add_argument("assignments", nargs="+")
    grade.add_argument("--progress", type=Path, required=True)
    grade.add_argument("--no-feedback", dest="feedback", action="store_false")
    sub.add_parser("serve", help="a fork server of drivers (coursekit.grading.forkserver), for run_learner")
    args, flags = ap.parse_known_args(argv)
    if args.command == "serve":
        for name in SKIPPED_IMPORTS:
            sys.modules.setdefault(name, None)
        from coursekit.grading.forkserver import serve

        return serve(main, preload=_checker_modules())
    # nbgrader creates a new gradebook by running `alembic` by name: put this interpreter's scripts on PATH,
    # as for every child process, so that `.venv/bin/python -m coursekit.batch` works unactivated (no make)
    os.environ["PATH"] = settings.child_env()["PATH"]
    app, api = _api(flags)
    if args.command == "generate":
        failed = 0
        for assignment in args.assignments:
            result = api.generate_assignment(assignment, force=True, create=True)
            if not result["success"]:
                failed = 1
                print(result.get("log", ""), result.get("error", ""), sep="\n", file=sys.stderr)
        return failed
    for assignment in args.assignments:
        _emit(args.progress, assignment=assignment, event="start")
        result = api.autograde(assignment, args.student, force=True, create=True)
        log, error = result.get("log", ""), result.get("error", "")
        if args.feedback and (Path(app.coursedir.root) / "autograded" / args.student / assignment).exists():
            feedback = api.generate_feedback(assignment, args.student, force=True)
            if not feedback["success"]:
                error += "\ngenerate_feedback failed:\n" + feedback.get("error", "")
        _emit(args.progress, assignment=assignment, event="done", returncode=0 if result["success"] else 1,
              log=log[-20000:], error=error[-20000:])
    return 0


def generate(root: Path, assignments: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """`nbgrader generate_assignment A --force` for every A in `assignments`, in one driver (forked like
    a learner's, `_start`): the course's one way to generate (make release, make grade, make check,
    the tests and the benches). It writes the release (root/course/A) and records the assignments
    and their grade cells in root's gradebook, which autograde needs. `env`: as
    coursekit.grading.driver.run's. The driver's output (stdout and stderr, in order) is the stdout returned."""
    env = settings.child_env(env, base={**threads.WAIT, **os.environ})
    with tempfile.TemporaryDirectory(prefix="coursekit-generate-") as tmp:
        log = Path(tmp) / "driver.log"
        proc = _start(Path(root), ["generate", *assignments], env, log, SubmissionRunner(config=course_config(root)).fork)
        _reap(proc, None, block=True)
        return subprocess.CompletedProcess(["generate", *assignments], proc.returncode, log.read_text(), "")


def _reap(proc, usage: dict | None, block: bool = False) -> bool:
    """Whether the driver has exited, its resource usage (its own and that of every process it waited
    for: the kernels) then added to usage["cpu"], in seconds: os.wait4 for a driver of this process,
    its fork server's report for a forked one (coursekit.grading.forkserver)."""
    if isinstance(proc, Forked):
        if block:
            proc.wait(usage)
        return proc.reap(usage)
    if proc.returncode is not None:
        return True
    pid, status, rusage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return False
    proc.returncode = os.waitstatus_to_exitcode(status)
    if usage is not None:
        usage["cpu"] = usage.get("cpu", 0.0) + rusage.ru_utime + rusage.ru_stime
    return True


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # it has just exited
        pass


def _start(root: Path, argv: list[str], env: dict, log: Path, fork: bool):
    """A driver running `python -m coursekit.batch ARGV` in `root`, its output in `log`: forked from a
    warm server of this environment where SubmissionRunner.fork allows and the platform can
    (coursekit.grading.forkserver), else started as its own process."""
    if fork and forkserver.usable():
        try:
            server = forkserver.Server.get([sys.executable, "-m", "coursekit.batch", "serve"], root, env)
            return server.fork(argv, root, log, log.with_name("status.json"))
        except OSError:
            pass  # a server that cannot start or has stopped: start the driver cold
    with open(log, "w") as log_file:
        return subprocess.Popen([sys.executable, "-m", "coursekit.batch", *argv], cwd=root, env=env,
                                stdout=log_file, stderr=subprocess.STDOUT, preexec_fn=forkserver.die_with_parent)


class SubmissionRunner(Configurable):
    """Runs a learner's submissions (`run_learner`) and keeps each within its wall-clock limit."""

    timeout = Float(900.0, help=(
        "Wall-clock seconds one submission may take, its kernel's start, every cell and its feedback "
        "included; one that overruns is killed and reported, and grading goes on.")).tag(config=True)
    fork = Bool(True, help=(
        "Fork each learner's driver from a warm server that has imported nbgrader and the checkers' "
        "libraries (Linux only; coursekit.grading.forkserver) instead of starting it cold.")).tag(config=True)


def submission_timeout(root: Path) -> float:
    """SubmissionRunner.timeout as course root `root` configures it (grader_config.py)."""
    return SubmissionRunner(config=course_config(root)).timeout


def run_learner(root: Path, student: str, work: list[str], timeout: float | None = None, env: dict | None = None,
                poll: float = 0.2, usage: dict | None = None, feedback: bool = True,
                flags: list[str] | None = None) -> dict[str, tuple[subprocess.CompletedProcess, float]]:
    """Autograde and give feedback for `student`'s `work` in course root `root`, one driver process
    for all of them; each submission gets at most `timeout` seconds of wall-clock time (by default
    the root's SubmissionRunner.timeout, grader_config.py). Returns, per
    assignment, what a stock `nbgrader autograde` run would have returned (returncode, log as
    stdout, traceback as stderr; -9 and "timed out after ..." for a submission that overran) and
    the seconds it took, feedback included. `usage`, if given, gets the CPU seconds the drivers
    and their kernels used added to usage["cpu"] (make bench-grade's core-seconds). `feedback`
    False: no feedback (make check); `flags`: nbgrader settings for the driver (nbgrader's own
    command-line form, --JudgedExecute.run_measurements=True)."""
    runner = SubmissionRunner(config=course_config(root))
    timeout = runner.timeout if timeout is None else timeout
    env = settings.child_env(env, base={**threads.WAIT, **os.environ})
    out: dict[str, tuple[subprocess.CompletedProcess, float]] = {}
    remaining = list(work)
    while remaining:
        with tempfile.TemporaryDirectory(prefix="coursekit-batch-") as tmp:
            progress, log = Path(tmp) / "progress.jsonl", Path(tmp) / "driver.log"
            progress.touch()
            proc = _start(root, ["grade", student, *remaining, "--progress", str(progress),
                                 *([] if feedback else ["--no-feedback"]), *(flags or [])], env, log, runner.fork)
            started, current, seen = time.monotonic(), None, 0
            try:
                while True:
                    exited = _reap(proc, usage)  # before reading: every line it wrote is then read
                    lines = progress.read_text().splitlines()
                    for line in lines[seen:]:
                        event = json.loads(line)
                        # each submission's clock runs from when the previous one ended (the first one's
                        # includes the driver's start-up) to its "done" event, as the driver stamped them
                        # (not when this loop, polling every `poll` seconds, happened to read them)
                        at = min(float(event.get("at", time.monotonic())), time.monotonic())
                        if event["event"] == "start":
                            current = event["assignment"]
                        else:
                            out[event["assignment"]] = (subprocess.CompletedProcess(
                                ["autograde", event["assignment"]], event["returncode"], event["log"], event["error"]),
                                max(0.0, at - started))
                            current, started = None, at
                    seen = len(lines)
                    if exited:
                        break
                    if time.monotonic() - started > timeout:
                        _kill(proc)
                        _reap(proc, usage, block=True)
                        break
                    time.sleep(poll)
            finally:
                if not _reap(proc, usage):
                    _kill(proc)
                    _reap(proc, usage, block=True)
            if proc.returncode == -signal.SIGKILL and time.monotonic() - started > timeout:
                stuck = current or next(a for a in remaining if a not in out)
                out[stuck] = (subprocess.CompletedProcess(["autograde", stuck], -9, "", f"timed out after {timeout:.0f} s"),
                              time.monotonic() - started)
            elif current is not None or proc.returncode != 0:
                stuck = current or next((a for a in remaining if a not in out), None)
                if stuck is not None:  # the driver died inside this submission (or before it started)
                    out[stuck] = (subprocess.CompletedProcess(["autograde", stuck], proc.returncode or 1, "",
                                                              log.read_text()[-5000:]), time.monotonic() - started)
            remaining = [a for a in remaining if a not in out]
    return out


if __name__ == "__main__":
    sys.exit(main())
