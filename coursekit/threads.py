"""The course's one rule for torch's and BLAS's threads (issue 18).

torch (and numpy's BLAS) start one thread per core and, by default, let a thread that waits for
work spin on its core for a while (OpenMP's active wait). On a machine where something else
holds a core, or where several of the course's processes run at once, the threads then wait for
each other and a call can slow down several times (small calls 3.5x on the 2-core course machine
with one core busy, 2026-12-04: `make bench-threads`; docs/benchmarks.md, "Threads on a busy machine"). So every process the course starts for grading or testing:

- shares the cores it may run on (its CPU affinity, not the machine's count) among the processes
  that run at once, at least one thread each (`share`);
- lets idle OpenMP threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE);
- grading kernels (`make grade`, `make check`, nbgrader autograde, the tests) always get one
  thread (`KERNEL_THREADS`, overridable with COURSE_KERNEL_THREADS): their work is many small
  calls on toy models and the learner's loops, which gain nothing from a second thread, and
  several of them run at once.

The variables must be in a process's environment before it imports torch; `env` returns them.
"""
from __future__ import annotations

import os

from coursekit import settings

NAMES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
WAIT = {"OMP_WAIT_POLICY": "PASSIVE"}
KERNEL_THREADS = settings.KERNEL_THREADS.get()


def cores() -> int:
    """The cores this process may run on (its affinity: `taskset`, a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def share(processes: int) -> int:
    """Threads for each of `processes` processes that run at once: the cores shared out, at least one."""
    return max(1, cores() // max(1, processes))


def env(threads: int) -> dict[str, str]:
    """The environment of a process that uses `threads` torch/BLAS threads and a passive wait."""
    return {**{name: str(threads) for name in NAMES}, **WAIT}

