"""No process outlives grading: the grader (the process that starts kernels) becomes a child
subreaper (`adopt_orphans`), so what a kernel leaves running (a double fork, `sleep &` from
native code) becomes its child, not init's, and is killed when the notebook is done
(`end_strays`), under every layer (coursekit.judge.sandbox.SandboxKernelManager)."""
from __future__ import annotations

import os

from coursekit import platforms

PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER: list = []


def adopt_orphans() -> None:
    """Make this process (the grader) a child subreaper where Linux offers it: a process that a
    kernel starts and leaves behind (a double fork, `sleep &` from native code) becomes this
    process's child when its parent exits, instead of init's, so `end_strays` can find and end it.
    Elsewhere (macOS) only the kernel's own descendants are found, while they still have a parent
    in its tree, and the audit hook refuses to start processes in the first place."""
    if not _SUBREAPER:
        if platforms.has_prctl() and not platforms.prctl(PR_SET_CHILD_SUBREAPER, 1):
            raise OSError("prctl(PR_SET_CHILD_SUBREAPER) failed")
        _SUBREAPER.append(True)


def children() -> set[int]:
    """The process ids whose parent is this process (zombies included), through psutil (every platform)."""
    import psutil

    return {child.pid for child in psutil.Process().children()}


def end_strays(before: set[int]) -> list[int]:
    """Kill and reap every child of this process that was not one `before` the kernel started:
    once the kernel is gone, those are what it left running (this process is their subreaper).
    Repeats until none is left, as each killed one's own children become ours in turn."""
    import signal

    ended: list[int] = []
    for _ in range(1000):
        strays = children() - before
        if not strays:
            break
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        ended += sorted(strays)
    return ended
