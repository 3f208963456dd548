"""The sandbox's settings, declared once: the layer grading kernels run under and their resource
limits, as configurable traits (nbgrader's way) of `KernelLimits`, which
coursekit.judge.sandbox.SandboxKernelManager is. grader_config.py sets them
(`c.SandboxKernelManager.cpu_limit = 900`).

A kernel's limits cross a process boundary: the manager (in the grader's process) passes them to
the kernel's launcher (coursekit.judge.sandbox.main, in the kernel's process) as environment
variables, and each has one (coursekit.settings: COURSE_SANDBOX, COURSE_SANDBOX_MEMORY,
COURSE_SANDBOX_CPU, COURSE_SANDBOX_FILE, COURSE_SANDBOX_PROCESSES; ENVIRONMENT maps them). Which
wins: a variable set in the grader's environment, then grader_config.py, then the default here.
The variable is how a process that never reads grader_config.py (a test, a CI job, a Dask
worker started by hand) is told, so it is the one that wins.

This module imports nothing of the course but coursekit.platforms (coursekit.settings reads its defaults).
"""
from __future__ import annotations

import os

from traitlets import Enum, Int
from traitlets.config import Configurable

from coursekit import platforms

GiB = 1024 ** 3
BWRAP, LANDLOCK, AUDIT = "bubblewrap", "landlock", "audit"  # the layers, strongest first
LAYERS = (BWRAP, LANDLOCK, AUDIT)
# trait -> the environment variable that carries it across a process boundary (coursekit.settings)
ENVIRONMENT = {"layer": "COURSE_SANDBOX", "memory_limit": "COURSE_SANDBOX_MEMORY", "cpu_limit": "COURSE_SANDBOX_CPU",
               "file_limit": "COURSE_SANDBOX_FILE", "process_limit": "COURSE_SANDBOX_PROCESSES"}


class KernelLimits(Configurable):
    """What a grading kernel runs under: its sandbox layer and its resource limits."""

    layer = Enum(("auto", *LAYERS), default_value="auto", help=(
        "The layer around grading kernels: auto (the strongest this machine has), bubblewrap, landlock or "
        "audit (the audit hook alone); a named layer this machine lacks is an error.")).tag(config=True)
    memory_limit = Int(8 * GiB, help="A grading kernel's address space, bytes.").tag(config=True)
    cpu_limit = Int(900, help=(
        "A grading kernel's CPU time, seconds, all its cells together (then it is killed; a cell's own "
        "limit is JudgedExecute.cpu_timeout).")).tag(config=True)
    file_limit = Int(64 * 1024 ** 2, help="The largest file a grading kernel may write, bytes.").tag(config=True)
    process_limit = Int(64, help="Processes a non-root grader's kernel may have.").tag(config=True)


def default(trait: str):
    """The declared default of one of KernelLimits' traits."""
    return KernelLimits.class_traits()[trait].default_value


def _limit(resource, name: str, value: int) -> None:
    kind = getattr(resource, name, None)
    if kind is None:  # a limit this system does not have
        return
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(kind, (value, value if hard == resource.RLIM_INFINITY else hard))
    except (ValueError, OSError):
        if platforms.linux():  # Linux enforces each of them: a failure there is a real one
            raise  # (macOS refuses some, RLIMIT_AS among them: its other limits and the audit hook remain)


def set_limits(memory_limit: int, cpu_limit: int, file_limit: int, process_limit: int) -> None:
    """In the kernel's process, before the kernel starts (it and any child): address space, CPU
    time, the largest file, no core dumps, and the processes of a non-root grader. Where the system
    has no resource limits (Windows, where the course stops first: coursekit.platforms) nothing."""
    if not platforms.has_rlimits():
        return
    import resource

    _limit(resource, "RLIMIT_AS", memory_limit)
    _limit(resource, "RLIMIT_CPU", cpu_limit)
    _limit(resource, "RLIMIT_FSIZE", file_limit)
    _limit(resource, "RLIMIT_CORE", 0)
    if os.getuid() != 0:
        _limit(resource, "RLIMIT_NPROC", process_limit)
