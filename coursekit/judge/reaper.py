"""No process outlives grading: the grader (the process that starts kernels) becomes a child
subreaper (`adopt_orphans`), so what a kernel leaves running (a double fork, `sleep &` from
native code) becomes its child, not init's, and is killed when the notebook is done
(`end_strays`), under every layer (coursekit.judge.sandbox.SandboxKernelManager)."""
from __future__ import annotations

import os

PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER: list = []


def adopt_orphans() -> None:
    """Make this process (the grader) a child subreaper: a process that a kernel starts and
    leaves behind (a double fork, `sleep &` from native code) becomes this process's child when
    its parent exits, instead of init's, so `end_strays` can find and end it."""
    if not _SUBREAPER:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        _SUBREAPER.append(True)


def children() -> set[int]:
    """The process ids whose parent is this process (zombies included)."""
    me, found = os.getpid(), set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.add(int(entry.name))
    return found


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
