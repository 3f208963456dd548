"""A cell's time limit in CPU seconds: what judges the learner's code, not the machine's load."""
from __future__ import annotations

import threading


class CpuWatch:
    """Interrupts a kernel once its processes have used more than `limit` seconds of CPU time
    since the watch began (a cell's time limit that judges the learner's code, not the machine's
    load: a process's CPU time hardly grows when other programs take turns on its core, while its
    wall-clock time does). Reads the kernel's process tree (psutil: under bubblewrap the sandbox's
    own processes and the kernel inside) every `poll` seconds; `fired` tells whether it struck."""

    def __init__(self, pid: int | None, limit: float | None, poll: float = 0.25):
        self.pid, self.limit, self.poll = pid, limit, poll
        self.fired, self.used = False, 0.0
        self._stop = threading.Event()
        self._thread = None

    def _tree(self):
        import psutil

        try:
            root = psutil.Process(self.pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def cpu(self) -> float:
        """CPU seconds used so far by the kernel's processes, their threads and reaped children."""
        import psutil

        total = 0.0
        for proc in self._tree():
            try:
                t = proc.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
        return total

    def _interrupt(self) -> None:
        """SIGINT to the kernel itself (not to bubblewrap, which would die and take the kernel
        with it): what ipykernel does on an interrupt_request, a KeyboardInterrupt in the cell."""
        import signal

        import psutil

        for proc in self._tree():
            try:
                if proc.name() != "bwrap":
                    proc.send_signal(signal.SIGINT)
            except psutil.Error:
                pass

    def _run(self, start: float) -> None:
        while not self._stop.wait(self.poll):
            self.used = self.cpu() - start
            if self.used > self.limit:
                self.fired = True
                self._interrupt()
                return

    def __enter__(self):
        if self.pid and self.limit:
            self._thread = threading.Thread(target=self._run, args=(self.cpu(),), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

