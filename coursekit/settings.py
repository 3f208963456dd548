"""Every environment variable the course reads: its name, what it does, its default, its type.

Every limit and the sandbox's layer is a configurable trait of the class that enforces it, set in
grader_config.py (a cell's CPU and wall-clock limits: JudgedExecute; a kernel's layer and resource
limits: SandboxKernelManager, coursekit.judge.limits; a submission's wall-clock limit:
SubmissionRunner, coursekit.batch). A variable here is for what must cross a process boundary or
what nbgrader's configuration cannot reach: the sandbox's settings, which the kernel's launcher
reads from its environment, each mapped to its trait (the variable, when set, wins over
grader_config.py, and its default is the trait's); where a Dask worker unpacks its tasks; the test
suite's and the hub's switches. Every module reads a variable through its `Setting` here, never
by a bare string, and `child_env` is the one way a grading process passes settings (and the
interpreter's bin folder, where nbgrader finds `alembic` and `jupyter`) to the processes it starts.
tests/test_settings.py checks that no other file of the repository names a COURSE_ variable that
is not declared here.

    python -m coursekit.settings      prints the table (docs/instructors.md, "Settings")
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from coursekit.judge.limits import LAYERS, default

GiB = 1024 ** 3


def _flag(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def _paths(text: str) -> list[Path]:
    return [Path(p).resolve() for p in text.split(os.pathsep) if p]


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # as it would be written in the environment ("" for none)
    help: str
    parse: Callable = str
    who: str = "grading"  # grading | sandbox | tests | hub

    def raw(self, environ=None) -> str:
        value = (os.environ if environ is None else environ).get(self.name)
        return self.default if value in (None, "") else value

    def get(self, environ=None):
        """The value in this process's environment (or `environ`), parsed; the default when unset."""
        return self.parse(self.raw(environ))

    def is_set(self, environ=None) -> bool:
        return (os.environ if environ is None else environ).get(self.name) not in (None, "")

    def __str__(self) -> str:
        return self.name


def _layer(text: str) -> str:
    if text not in ("auto", *LAYERS):
        raise ValueError(f"COURSE_SANDBOX={text}: one of auto, {', '.join(LAYERS)}")
    return text


def _layers(text: str) -> list[str]:
    return [_layer(part.strip()) for part in text.split(",") if part.strip() and part.strip() != "auto"]


ALL: list[Setting] = []


def _declare(*args, **kw) -> Setting:
    setting = Setting(*args, **kw)
    ALL.append(setting)
    return setting


# ---- the grading sandbox (coursekit.judge.sandbox): read by the kernel's launcher, before the kernel starts
SANDBOX = _declare("COURSE_SANDBOX", default("layer"), "the layer around grading kernels: auto (the strongest this "
                   "machine has), bubblewrap, landlock or audit (the audit hook alone); a named layer this machine "
                   "lacks is an error (when set, wins over grader_config.py's SandboxKernelManager.layer)",
                   _layer, "sandbox")
SANDBOX_REQUIRE = _declare("COURSE_SANDBOX_REQUIRE", "", "layers that must be available (comma-separated; CI: "
                           "bubblewrap,landlock): their absence is an error, and their tests fail instead of "
                           "skipping", _layers, "sandbox")
SANDBOX_MEMORY = _declare("COURSE_SANDBOX_MEMORY", str(default("memory_limit")), "a grading kernel's address "
                          "space, bytes (SandboxKernelManager.memory_limit)", int, "sandbox")
SANDBOX_CPU = _declare("COURSE_SANDBOX_CPU", str(default("cpu_limit")), "a grading kernel's CPU time, seconds "
                       "(SandboxKernelManager.cpu_limit; then it is killed; a cell's own limit is "
                       "JudgedExecute.cpu_timeout)", int, "sandbox")
SANDBOX_FILE = _declare("COURSE_SANDBOX_FILE", str(default("file_limit")), "the largest file a grading kernel may "
                        "write, bytes (SandboxKernelManager.file_limit)", int, "sandbox")
SANDBOX_PROCESSES = _declare("COURSE_SANDBOX_PROCESSES", str(default("process_limit")), "processes a non-root "
                             "grader's kernel may have (SandboxKernelManager.process_limit)", int, "sandbox")
SANDBOX_PROTECT = _declare("COURSE_SANDBOX_PROTECT", "", "more course roots whose grading data a kernel may not "
                           "read (os.pathsep-separated; make grade sets it for its workers)", _paths, "sandbox")
SANDBOX_MODE = _declare("COURSE_SANDBOX_MODE", "", "set for each grading kernel by its launcher "
                        "(internal): the layer it runs under", who="sandbox")
SANDBOX_PRIVATE = _declare("COURSE_SANDBOX_PRIVATE", "", "set for each grading kernel under Landlock "
                           "(internal): its private folder", lambda t: Path(t) if t else None, "sandbox")
KERNEL_THREADS = _declare("COURSE_KERNEL_THREADS", "1", "torch/BLAS threads of each grading kernel "
                          "(coursekit.threads)", int, "sandbox")
TIMING_REPEATS = _declare("COURSE_TIMING_REPEATS", "", "the most repeats specdec.timing makes of one "
                          "measurement (the sandbox sets 1 in grading kernels; specdec.timing reads it)", who="sandbox")

# ---- grading runs (coursekit.grading, coursekit.judge)
GRADING_SCRATCH = _declare("COURSE_GRADING_SCRATCH", "", "where a Dask worker unpacks its learners "
                           "(default: the temp folder)", lambda t: Path(t) if t else None)
GRADING_PROFILE = _declare("COURSE_GRADING_PROFILE", "", "a file: each graded notebook appends one json line "
                           "of where its time went (make bench-grade)", lambda t: Path(t) if t else None)

# ---- the test suite (tests/)
CORPUS_ALL = _declare("COURSE_CORPUS_ALL", "0", "1: each sandbox layer's corpus module grades the whole hostile "
                      "corpus (by default only the strongest layer's does; the others grade the learners the layer "
                      "decides)", _flag, "tests")
BROWSER_TESTS = _declare("COURSE_BROWSER_TESTS", "1", "0 skips the browser tests", _flag, "tests")
REQUIRE_BROWSER = _declare("COURSE_REQUIRE_BROWSER", "0", "1: a missing Chromium fails the browser tests "
                           "instead of skipping them (CI)", _flag, "tests")
CHROMIUM = _declare("COURSE_CHROMIUM", "", "the Chromium or Chrome binary the browser tests drive "
                    "(default: found on PATH)", who="tests")
REQUIRE_HUB = _declare("COURSE_REQUIRE_HUB", "0", "1: a missing JupyterHub proxy fails the hub test instead "
                       "of skipping it (CI)", _flag, "tests")

# ---- the course server (hub/jupyterhub_config.py)
HUB_PASSWORD = _declare("COURSE_HUB_PASSWORD", "", "the learners' shared password, 8 characters or more "
                        "(required)", who="hub")
HUB_USERS = _declare("COURSE_HUB_USERS", "ada,bo,cy", "the learners' names, comma-separated",
                     lambda t: {u.strip() for u in t.split(",") if u.strip()}, "hub")
HUB_STATE = _declare("COURSE_HUB_STATE", "", "the hub's folder: its database, cookie secret and etc/ "
                     "(default build/hub)", who="hub")
HUB_EXCHANGE = _declare("COURSE_HUB_EXCHANGE", "", "nbgrader's exchange (default <state>/exchange)", who="hub")
HUB_PORT = _declare("COURSE_HUB_PORT", "8000", "the proxy's port on 127.0.0.1", int, "hub")
HUB_PYTHON = _declare("COURSE_HUB_PYTHON", "", "the interpreter of the learners' servers "
                      "(default learner-env/bin/python)", who="hub")
HUB_PROXY = _declare("COURSE_HUB_PROXY", "", "configurable-http-proxy (default hub/node_modules/.bin/)", who="hub")

BY_NAME = {s.name: s for s in ALL}


def child_env(values: dict | None = None, base: dict | None = None) -> dict[str, str]:
    """The environment of a process a grading process starts: `base` (default this process's
    environment), then `values` ({Setting or variable name: value}; None removes it), and this
    interpreter's bin folder first on PATH (nbgrader runs `alembic`; the instructors' guide's commands, `jupyter`)."""
    env = dict(os.environ if base is None else base)
    for key, value in (values or {}).items():
        name = str(key)
        if value is None:
            env.pop(name, None)
        else:
            env[name] = os.pathsep.join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    here = str(Path(sys.executable).parent)
    if env.get("PATH", "").split(os.pathsep)[0] != here:
        env["PATH"] = os.pathsep.join([here, env.get("PATH", "")]).rstrip(os.pathsep)
    return env


def table() -> str:
    lines = ["| variable | for | default | what it does |", "|---|---|---|---|"]
    for s in ALL:
        lines.append(f"| `{s.name}` | {s.who} | {('`' + s.default + '`') if s.default else '-'} | {s.help} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
