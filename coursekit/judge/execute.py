"""Hidden tests judged where the learner's code cannot reach them.

grader_config.py puts `JudgedExecute` in the place of nbgrader's `Execute` in
`Autograde.autograde_preprocessors`, so stock `nbgrader autograde` (and `make check`,
`make grade`, which run it) executes every notebook through it. It runs each cell in the learner's
kernel as `Execute` does, except a graded hidden test cell that calls
`verdict("aNN.check_x", fn)` (coursekit.registry.verdict_call):

1. the kernel runs `coursekit.judge.wire.serve(fn, ...)` instead of the cell's source: a loop that
   answers calls of the learner's `fn` arriving over two named pipes;
2. meanwhile this process (the grader's) runs the checker with `RemoteFunction`, a stand-in for
   `fn` that sends each call's arguments to the kernel and returns what comes back (the return
   value, the arguments as the function left them, or its exception);
3. the checker's verdict, made here, becomes the cell's only output: nothing when it passed, an
   AssertionError with the one-sentence hint when it did not, in the form nbgrader's scoring,
   the feedback and `make check` read. Whatever the kernel printed or raised is dropped.

So a kernel that rebinds `verdict`, patches the checkers' helpers or forges its outputs changes
nothing: the checkers, the references and the expected values live in this process only, and the
kernel only ever answers calls. It can answer them wrongly (its own grade), or stop answering:
then the check fails with a hint that says so (a NameError when `fn` is undefined, the cell's time
limit, a helper that was replaced). Values from the kernel are decoded with json and
`numpy.frombuffer` of plain numeric dtypes only (coursekit.judge.wire). A checker's loop of calls
travels as one batch (`RemoteFunction.many`, used by `solutions.checks._common.call_many`).
"""
from __future__ import annotations

import gc
import threading
import time

import nbformat
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, List, Unicode, default

from coursekit import settings
from coursekit.judge import messages
from coursekit.judge.cells import skipped_cells
from coursekit.judge.channel import Channel, KernelStopped, RemoteFunction
from coursekit.judge.cpuwatch import CpuWatch
from coursekit.judge.verdict import verdict
from coursekit.registry import verdict_call


def judge(check: str, fn_name: str, channel: Channel) -> str | None:
    """The checker's verdict on the learner's function, reached through the channel (verdict turns
    whatever stops the check into a sentence). Meanwhile what this process holds already (nbgrader,
    torch, the notebook) is frozen out of the garbage collector, as in the kernel (wire.serve)."""
    gc.freeze()
    try:
        return verdict(check, RemoteFunction(channel, fn_name))
    finally:
        gc.unfreeze()
        try:
            channel.send({"op": "done"})  # the kernel's cell ends
        except KernelStopped:
            pass


def _error_output(hint: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename="AssertionError", evalue=hint,
                                  traceback=[f"\x1b[0;31mAssertionError\x1b[0m: {hint}"])


class JudgedExecute(Execute):
    """nbgrader's Execute, with graded hidden test cells judged in this process.

    Cells tagged with one of `skip_tags` (the course tags its measurement cells `measurement`:
    timings, fits and comparisons that take most of a notebook's run time and that no grade
    depends on, with every cell that reads their results; the cells that only show the learner's
    results, plots and tables, `demo`; and 02's slider explorer `explorer`) are not executed
    while grading, unless `run_measurements` is set (grader_config.py, or
    `--JudgedExecute.run_measurements=True` on the command line); their output becomes a one-line note. Graded and solution cells
    are always executed, whatever their tags, and so is a tagged cell that a later cell which
    runs may read a name of (`skipped_cells`: a learner who used a plot's variable in their own
    cell keeps it). tests/test_grading.py checks that the reference answers still score full
    marks with no error output anywhere.

    Every cell it runs is watched by `CpuWatch`: past `cpu_timeout` seconds of the kernel's CPU
    time the kernel is interrupted and the cell fails with a hint that says so (a judged cell's
    hint, or a CellTimeoutError); nbclient's `timeout` (wall clock) stays as the backstop.

    Where the environment names a file in COURSE_GRADING_PROFILE (coursekit.settings), each notebook appends one json
    line to it: the kernel's start-up, the learner's cells, the hidden checks, the other cells,
    the skipped ones (make bench-grade's breakdown)."""

    skip_tags = List(Unicode(), default_value=["measurement", "demo", "explorer"],
                     help="Cells with one of these tags are not run while grading (no grade depends on them).").tag(config=True)
    run_measurements = Bool(False, help="Run the cells tagged with skip_tags as well.").tag(config=True)
    cpu_timeout = Float(60.0, allow_none=True, help=(
        "CPU seconds the kernel's processes may use in one cell before it is interrupted and scored "
        "like a timeout (None: no CPU limit). `timeout`, nbclient's wall-clock limit, stays as a backstop "
        "for a cell that waits without computing.")).tag(config=True)

    @default("shutdown_kernel")
    def _shutdown_kernel_default(self):
        # A graded kernel's state is thrown away: kill it when the notebook is done instead of asking it
        # to shut down and polling every 0.1 s until it has (0.2-0.7 s a notebook on the 2-core course
        # machine, most of it a torch-laden interpreter's own teardown). Its outputs are all in already.
        return "immediate"

    def skipped(self, nb) -> set[int]:
        """The indices of nb's cells that grading does not run (skipped_cells)."""
        return skipped_cells(nb.cells, self.skip_tags,
                             run_all=self.run_measurements)

    def preprocess(self, nb, resources=None, km=None):
        self._skip = self.skipped(nb)
        self._times = {"startup": 0.0, "learner": 0.0, "hidden": 0.0, "other": 0.0, "skipped": 0}
        self._t0, self._cells = time.monotonic(), []
        try:
            return super().preprocess(nb, resources, km)
        finally:
            path = settings.GRADING_PROFILE.get()
            if path:
                import json

                self._times["total"] = time.monotonic() - self._t0
                self._times["slowest"] = sorted(self._cells, reverse=True)[:5]  # (seconds, kind, cell index)
                with open(path, "a") as f:
                    f.write(json.dumps({"notebook": (resources or {}).get("unique_key"), **self._times}) + "\n")

    def preprocess_cell(self, cell, resources, index):
        times = getattr(self, "_times", None)
        if times is not None and index == 0:
            times["startup"] = time.monotonic() - self._t0  # the kernel came up before the first cell
        if index in getattr(self, "_skip", ()):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=messages.SKIPPED)]
            cell.execution_count = None
            if times is not None:
                times["skipped"] += 1
            return cell, resources
        t0 = time.monotonic()
        try:
            provisioner = getattr(self.km, "provisioner", None)
            with CpuWatch(getattr(provisioner, "pid", None), self.cpu_timeout) as self._watch:
                return self._judged_cell(cell, resources, index)
        finally:
            if times is not None:
                meta = cell.metadata.get("nbgrader", {})
                kind = ("hidden" if meta.get("grade") and verdict_call(cell.source) else
                        "learner" if meta.get("solution") else "other")
                spent = time.monotonic() - t0
                times[kind] += spent
                self._cells.append((round(spent, 2), kind, index))

    def cpu_message(self) -> str:
        return messages.cpu_limit(self.cpu_timeout)

    def _judged_cell(self, cell, resources, index):
        judged = None
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            judged = verdict_call(cell.source)
        if judged is None:
            cell, resources = super().preprocess_cell(cell, resources, index)
            if self._watch.fired:  # the interrupt's KeyboardInterrupt becomes the reason, in plain words
                cell.outputs = [o for o in cell.outputs if o.get("output_type") != "error"]
                cell.outputs.append(nbformat.v4.new_output(
                    "error", ename="CellTimeoutError", evalue=self.cpu_message(),
                    traceback=[f"\x1b[0;31mCellTimeoutError\x1b[0m: {self.cpu_message()}"]))
            return cell, resources
        check, fn_name = judged
        # under bubblewrap the kernel sees only its own folders: the pipes go in its private one
        channel = Channel(getattr(self.km, "sandbox_folder", None))
        served = nbformat.NotebookNode(dict(cell, outputs=[], source=(
            f"__import__('coursekit.judge.wire', fromlist=['serve']).serve({fn_name}, "
            f"{str(channel.requests)!r}, {str(channel.replies)!r})")))
        result: dict = {}
        worker = threading.Thread(target=lambda: result.update(hint=judge(check, fn_name, channel)), daemon=True)
        started = time.monotonic()
        worker.start()
        try:
            served, resources = super().preprocess_cell(served, resources, index)
        finally:
            channel.stopped_hint = _stopped_hint(served.get("outputs", []), fn_name)
            if self._watch.fired:
                channel.stopped_hint = f"interrupted: {self.cpu_message()}"
            channel.ended.set()
            worker.join()
            channel.close()
        result.setdefault("hint", messages.could_not_check())  # the judging thread itself died: never a pass
        self.log.info("Judged %s (%s) in %.1f s: %s", cell.metadata["nbgrader"].get("grade_id"), check,
                      time.monotonic() - started, "passed" if result["hint"] is None else "failed")
        cell.outputs = [] if result["hint"] is None else [_error_output(result["hint"])]
        cell.execution_count = served.get("execution_count")
        self.nb.cells[index] = cell  # nbclient stored the served copy there; the notebook keeps the real cell
        return cell, resources


def _stopped_hint(outputs, fn_name: str) -> str:
    """Why the kernel stopped answering, in the learner's terms, from the cell's own error."""
    for out in outputs:
        if out.get("output_type") == "error":
            ename, evalue = str(out.get("ename", ""))[:100], str(out.get("evalue", ""))[:500]
            if ename in ("KeyboardInterrupt", "CellTimeoutError"):
                return messages.INTERRUPTED
            return messages.could_not_call(fn_name, ename, evalue)
    return messages.HELPER_REPLACED
