"""What this platform offers grading: one check per facility that only some systems have.

The course grades on Linux, macOS and (for learning) Windows. A facility that Linux alone has is used
only behind its check here, and tests/test_platforms.py fails when one of its calls appears in
another module outside `if platforms.<check>():` (a static read of the code), and grades end to end
with Linux's facilities hidden (the platform reported as darwin: tests/support/pretend_darwin).

- prctl (PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS): Linux's C library only;
  macOS's has no such symbol.
- /proc: Linux only; the course reads no /proc file itself (psutil lists a process's children on every platform).
- Landlock's system calls: Linux only (the numbers mean other calls elsewhere).
- bubblewrap: Linux namespaces only.
- fork of a warm process (coursekit.grading.forkserver): Linux only (macOS's system libraries are
  not fork-safe once loaded; Windows has no fork).
- resource limits (`resource`): every POSIX system; Windows has no such module.
Elsewhere grading kernels run under the audit hook alone (coursekit.judge.layers).
"""
from __future__ import annotations

import os
import sys


def linux() -> bool:
    return sys.platform.startswith("linux")


def windows() -> bool:
    return sys.platform == "win32"


def has_prctl() -> bool:
    return linux()


def has_landlock() -> bool:
    return linux()


def has_bubblewrap() -> bool:
    return linux()


def can_fork_server() -> bool:
    return linux() and hasattr(os, "fork") and hasattr(os, "wait4")


def has_rlimits() -> bool:
    return not windows()


WSL = ("On Windows, take the course in WSL (Windows Subsystem for Linux): open an Ubuntu terminal there, clone "
       "the course and run the same two commands (README.md).")


def require_posix() -> None:
    """Stop with one sentence, not a traceback, where the course cannot run: native Windows."""
    if windows():
        print(WSL, file=sys.stderr)
        raise SystemExit(1)


def prctl(option: int, value: int) -> bool:
    """prctl(option, value) where Linux has it; False where it does not or the call fails."""
    if not has_prctl():
        return False
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
