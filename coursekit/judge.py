"""Hidden tests judged where the learner's code cannot reach them.

grader_config.py puts `JudgedExecute` in the place of nbgrader's `Execute` in
`Autograde.autograde_preprocessors`, so stock `nbgrader autograde` (and `make check`,
`make grade`, which run it) executes every notebook through it. It runs each cell in the learner's
kernel as `Execute` does, except a graded hidden test cell that calls
`verdict("aNN.check_x", fn)` (coursekit.registry.verdict_call):

1. the kernel runs `specdec.remote.serve(fn, ...)` instead of the cell's source: a loop that
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
`numpy.frombuffer` of plain numeric dtypes only (specdec.remote). A checker's loop of calls
travels as one batch (`RemoteFunction.many`, used by `solutions.checks._common.call_many`).
"""
from __future__ import annotations

import ast
import gc
import os
import select
import shutil
import tempfile
import threading
import time
from pathlib import Path

import nbformat
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, List, Unicode

from coursekit.registry import verdict_call
from solutions.checks.run import INTERRUPTED, verdict
from specdec import remote

POLL_S = 0.2  # how often a waiting call looks whether the kernel's cell has ended


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


class KernelStopped(BaseException):
    """The kernel's cell ended without answering a call (a BaseException: learner-error handlers
    in the checkers must not turn it into a hint about the learner's function)."""

    def __init__(self, hint: str):
        super().__init__(hint)
        self.hint = hint


class Channel:
    """Two named pipes in a private folder: requests to the kernel, replies from it. This side
    opens both read-write, so neither open blocks, whatever the kernel does."""

    def __init__(self, parent: Path | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="judge-", dir=parent))
        self.requests, self.replies = self.folder / "requests", self.folder / "replies"
        os.mkfifo(self.requests, 0o600)
        os.mkfifo(self.replies, 0o600)
        self.wfd = os.open(self.requests, os.O_RDWR)
        self.rfd = os.open(self.replies, os.O_RDWR)
        self.ended = threading.Event()  # set when the kernel's cell has finished
        self.stopped_hint = "the grader lost contact with your code while checking it."

    def close(self):
        os.close(self.wfd)
        os.close(self.rfd)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _wait(self, fd: int, write: bool) -> None:
        while True:
            ready = select.select([], [fd], [], POLL_S)[1] if write else select.select([fd], [], [], POLL_S)[0]
            if ready:
                return
            if self.ended.is_set():
                raise KernelStopped(self.stopped_hint)

    def send(self, message: dict) -> None:
        payload = remote.frame(message)
        view = memoryview(payload)
        while view:
            self._wait(self.wfd, write=True)
            view = view[os.write(self.wfd, view[:65536]):]

    def receive(self) -> dict:
        self._wait(self.rfd, write=False)
        header = self._read(8)
        size = int.from_bytes(header, "little")
        if size > remote.MAX_FRAME:
            raise KernelStopped("your function returned more data than the grader accepts.")
        return remote.unframe(self._read(size))

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            self._wait(self.rfd, write=False)
            chunk = os.read(self.rfd, min(n, 1 << 20))
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


class RemoteFunction:
    """Calls the learner's function in the kernel, like a local call: same return value, same
    in-place changes to the arguments, same exception type and message."""

    def __init__(self, channel: Channel, name: str):
        self.channel, self.__name__ = channel, name

    def __call__(self, *args, **kwargs):
        values, failed = self.many([(args, kwargs)])
        if failed is not None:
            raise failed[1]
        return values[0]

    def many(self, calls: list, events: bool = False) -> tuple[list, tuple | None]:
        """The calls [(args, kwargs), ...] in order, in one exchange with the kernel: what a loop of
        local calls returns, with each call's in-place changes made to its own arguments and the
        shared generators advanced. With `events`, a shared model that records what it is fed
        (specdec.toy.CachedBigramModel) holds, after each call, what the kernel's copy was fed in
        it. Returns (values, None), or (values before the failing call, (its index, its exception))."""
        calls = [(tuple(args), dict(kwargs)) for args, kwargs in calls]
        try:
            message, shared = remote.encode_calls(calls, events)
        except TypeError as exc:
            raise RuntimeError(f"checker bug: cannot send {exc} to the kernel") from None
        self.channel.send(message)
        reply = self.channel.receive()
        values = []
        try:
            items = reply["many"]
            if not isinstance(items, list) or len(items) > len(calls):
                raise ValueError("one reply per call")
            for (args, kwargs), item in zip(calls, items):
                for index, events in item.get("events", []):  # what a recording toy model was fed
                    shared[int(index)].events = remote.decode(events) if events is not None else None
                value, failure = _unpack(item, args, kwargs)
                if failure is not None:
                    return values, (len(values), failure)
                values.append(value)
            if len(values) < len(calls):
                raise ValueError("one reply per call")
            for local, after in zip(shared, reply["shared"]):
                if after is not None:
                    remote.update_in_place(local, remote.decode(after))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:  # a malformed reply: the kernel's own doing
            raise KernelStopped(f"the grader could not read what your function returned ({type(exc).__name__}).") \
                from None
        return values, None


def _unpack(reply: dict, args, kwargs):
    """(value, None) or (None, the learner's exception) from one call's reply; the call's in-place
    changes made to the local arguments. A malformed reply raises KeyError, TypeError, ValueError
    or AttributeError, which `many` turns into a hint."""
    if "error" in reply:
        name, text = (str(x)[:2000] for x in reply["error"])
        return None, _exception(name, text)
    for local, after in zip(args, reply.get("args", ())):  # absent: the call changed no argument
        if after is not None:
            remote.update_in_place(local, remote.decode(after))
    for key, after in reply.get("kwargs", {}).items():
        if key in kwargs and after is not None:
            remote.update_in_place(kwargs[key], remote.decode(after))
    if "opaque" in reply:
        return type(str(reply["opaque"])[:100], (), {})(), None
    return remote.decode(reply["ok"]), None


def _exception(name: str, text: str) -> BaseException:
    """The learner's exception, rebuilt: a builtin type when it is one (so the checkers' handling
    of ZeroDivisionError, NotImplementedError, exit() ... applies), else a stand-in of that name."""
    import builtins

    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and (issubclass(kind, Exception) or kind is SystemExit):
        try:
            return kind(text)
        except Exception:  # noqa: BLE001 - a builtin with another signature
            pass
    return type(name if name.isidentifier() else "Exception", (Exception,), {})(text)


def judge(check: str, fn_name: str, channel: Channel) -> str | None:
    """The checker's verdict on the learner's function, reached through the channel. Meanwhile
    what this process holds already (nbgrader, torch, the notebook) is frozen out of the garbage
    collector, as in the kernel (specdec.remote.serve)."""
    gc.freeze()
    try:
        return verdict(check, RemoteFunction(channel, fn_name))
    except KernelStopped as stop:
        return stop.hint
    except BaseException as exc:  # noqa: BLE001 - never a pass, never a hang
        return f"the grader could not check this answer ({type(exc).__name__}); please tell the instructor."
    finally:
        gc.unfreeze()
        try:
            channel.send({"op": "done"})  # the kernel's cell ends
        except KernelStopped:
            pass


def _error_output(hint: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename="AssertionError", evalue=hint,
                                  traceback=[f"\x1b[0;31mAssertionError\x1b[0m: {hint}"])


PROFILE = "COURSE_GRADING_PROFILE"  # a file: where each graded notebook's time went, one json line
MEASUREMENTS = "COURSE_GRADE_MEASUREMENTS"  # "1": run the measurement cells while grading too
SKIPPED = ("not run while grading: this cell measures (timings, fits, comparisons on the shipped models), shows "
           "your results (a plot or a table) or is an interactive explorer, and no grade depends on it; run it "
           "in your own notebook to see its output.\n")

# Names through which a cell can reach any global (so it may read whatever a skipped cell set).
REACH_ALL = frozenset({"globals", "vars", "locals", "eval", "exec", "compile", "get_ipython", "__builtins__",
                       "__import__", "__main__", "sys", "builtins", "importlib", "inspect"})


def _binds(node) -> set[str] | None:
    """The names a statement may bind, at any depth (None: a star import, which binds unknown names)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            for alias in sub.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            names.update(sub.names)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            names.add(sub.rest)
    return names


def _python(source: str) -> ast.Module | None:
    """A cell as Python: IPython's own rewriting of its magics, with what %time and %%time time
    put back in their place (they run it in the notebook's namespace); any other magic stays a
    get_ipython() call. None: not Python even then."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ImportError, ValueError):
        return None
    body = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("run_line_magic", "run_cell_magic") and isinstance(call.func.value, ast.Call)
                and isinstance(call.func.value.func, ast.Name) and call.func.value.func.id == "get_ipython"
                and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
                and call.args and call.args[0].value == "time"):
            try:
                body += ast.parse(call.args[-1].value).body
                continue
            except SyntaxError:
                return None
        body.append(statement)
    tree.body = body
    return tree


def cell_binds(source: str) -> set[str] | None:
    """Every name a cell's code may bind (None: not Python, or a star import)."""
    tree = _python(source)
    return None if tree is None else _binds(tree)


def _scoped_reads(node) -> set[str]:
    """The global names the functions, lambdas, classes and comprehensions inside `node` read
    (Python's own scope analysis, symtable): a parameter or a local is not a read."""
    import symtable

    reads, tables = set(), symtable.symtable(ast.unparse(node), "<cell>", "exec").get_children()
    while tables:
        table = tables.pop()
        reads |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()}
        tables.extend(table.get_children())
    return reads


def _flow_reads(statements, bound: set[str], reads: set[str]) -> set[str]:
    """Walk module-level statements in order: add to `reads` each name loaded before this code
    has surely bound it; return the names surely bound afterwards. A loop's body may not run and
    only one branch of an if does, so what they bind counts only inside them (or in both branches)."""
    def loads(*nodes):
        for node in nodes:
            if node is None:
                continue
            outer = set()
            stack = [node]
            while stack:  # the names this scope loads, not descending into nested scopes
                sub = stack.pop()
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                    outer.add(sub.id)
                if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                        ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) or sub is node:
                    stack.extend(ast.iter_child_nodes(sub))
                else:
                    outer |= _loads_outside_scope(sub)
            reads.update(outer - bound)
            reads.update(_scoped_reads(node) - bound)

    for st in statements:
        if isinstance(st, (ast.For, ast.AsyncFor)):
            loads(st.iter)
            inner = set(bound) | (_binds(st.target) or set())
            _flow_reads(st.body, inner, reads)
            _flow_reads(st.orelse, set(bound), reads)
        elif isinstance(st, ast.While):
            loads(st.test)
            _flow_reads(st.body, set(bound), reads)
            _flow_reads(st.orelse, set(bound), reads)
        elif isinstance(st, ast.If):
            loads(st.test)
            bound |= _flow_reads(st.body, set(bound), reads) & _flow_reads(st.orelse, set(bound), reads)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            loads(*[item.context_expr for item in st.items])
            for item in st.items:
                if item.optional_vars is not None:
                    bound |= _binds(item.optional_vars) or set()
            bound |= _flow_reads(st.body, set(bound), reads)
        elif isinstance(st, ast.Try):
            _flow_reads(st.body, set(bound), reads)
            for handler in st.handlers:
                loads(handler.type)
                _flow_reads(handler.body, set(bound) | ({handler.name} if handler.name else set()), reads)
            _flow_reads(st.orelse, set(bound), reads)
            _flow_reads(st.finalbody, set(bound), reads)
        else:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                loads(*st.decorator_list, *getattr(st, "bases", []), *getattr(st, "keywords", []))
                if not isinstance(st, ast.ClassDef):
                    loads(*st.args.defaults, *[d for d in st.args.kw_defaults if d is not None])
                reads.update(_scoped_reads(st) - bound)
            else:
                loads(st)
            bound |= _binds(st) or set()
    return bound


def _loads_outside_scope(node) -> set[str]:
    """What a nested scope's header evaluates in the enclosing scope: a comprehension's first
    iterable, a function's defaults and decorators, a class's bases."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        first = node.generators[0].iter
        return {n.id for n in ast.walk(first) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    parts = list(getattr(node, "decorator_list", [])) + list(getattr(node, "bases", []))
    args = getattr(node, "args", None)
    if isinstance(args, ast.arguments):
        parts += list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def cell_reads(source: str) -> set[str] | None:
    """The names a cell may read from what earlier cells left: each name it loads before its own
    code has surely bound it, in order (a loop's target inside the loop, an assignment below
    it), and the globals its functions, lambdas and comprehensions read (symtable; a function's
    globals count where it is defined). None (it may read anything): not plain Python (magics,
    a syntax error), or it names a way to reach every global (globals(), eval, sys, ...)."""
    tree = _python(source)
    if tree is None or {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & REACH_ALL:
        return None
    reads: set[str] = set()
    _flow_reads(tree.body, set(), reads)
    return reads


def skipped_cells(cells, skip_tags, run_all: bool = False) -> set[int]:
    """Indices of the code cells not run while grading: tagged with one of `skip_tags`, neither
    graded nor a solution, plain Python, and no cell that does run after it may read a name it
    binds (cell_reads: a learner's cell that uses a plot's variable makes that plot run). Decided
    from the last cell back, so a skipped cell's own reads keep nothing running."""
    skip: set[int] = set()
    if run_all:
        return skip
    later: set[str] = set()
    reads_anything = False
    for index in range(len(cells) - 1, -1, -1):
        cell = cells[index]
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if not (meta.get("grade") or meta.get("solution")) and set(cell.metadata.get("tags", [])) & set(skip_tags):
            names = cell_binds(cell.source)
            if names is not None and not reads_anything and not names & later:
                skip.add(index)
                continue
        reads = cell_reads(cell.source)
        if reads is None:
            reads_anything = True
        else:
            later |= reads
    return skip


class JudgedExecute(Execute):
    """nbgrader's Execute, with graded hidden test cells judged in this process.

    Cells tagged with one of `skip_tags` (the course tags its measurement cells `measurement`:
    timings, fits and comparisons that take most of a notebook's run time and that no grade
    depends on, with every cell that reads their results; the cells that only show the learner's
    results, plots and tables, `demo`; and 02's slider explorer `explorer`) are not executed
    while grading, unless `run_measurements` is set or the environment sets
    COURSE_GRADE_MEASUREMENTS=1; their output becomes a one-line note. Graded and solution cells
    are always executed, whatever their tags, and so is a tagged cell that a later cell which
    runs may read a name of (`skipped_cells`: a learner who used a plot's variable in their own
    cell keeps it). tests/test_grading.py checks that the reference answers still score full
    marks with no error output anywhere.

    Every cell it runs is watched by `CpuWatch`: past `cpu_timeout` seconds of the kernel's CPU
    time the kernel is interrupted and the cell fails with a hint that says so (a judged cell's
    hint, or a CellTimeoutError); nbclient's `timeout` (wall clock) stays as the backstop.

    Where the environment names a file in COURSE_GRADING_PROFILE, each notebook appends one json
    line to it: the kernel's start-up, the learner's cells, the hidden checks, the other cells,
    the skipped ones (make bench-grade's breakdown)."""

    skip_tags = List(Unicode(), default_value=["measurement", "demo", "explorer"],
                     help="Cells with one of these tags are not run while grading (no grade depends on them).").tag(config=True)
    run_measurements = Bool(False, help="Run the cells tagged with skip_tags as well.").tag(config=True)
    cpu_timeout = Float(60.0, allow_none=True, help=(
        "CPU seconds the kernel's processes may use in one cell before it is interrupted and scored "
        "like a timeout (None: no CPU limit). `timeout`, nbclient's wall-clock limit, stays as a backstop "
        "for a cell that waits without computing.")).tag(config=True)

    def skipped(self, nb) -> set[int]:
        """The indices of nb's cells that grading does not run (skipped_cells)."""
        return skipped_cells(nb.cells, self.skip_tags,
                             run_all=os.environ.get(MEASUREMENTS) == "1" or self.run_measurements)

    def preprocess(self, nb, resources=None, km=None):
        self._skip = self.skipped(nb)
        self._times = {"startup": 0.0, "learner": 0.0, "hidden": 0.0, "other": 0.0, "skipped": 0}
        self._t0, self._cells = time.monotonic(), []
        try:
            return super().preprocess(nb, resources, km)
        finally:
            path = os.environ.get(PROFILE)
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
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=SKIPPED)]
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
        return (f"this cell used more than {self.cpu_timeout:g} s of CPU time (the time limit of a cell "
                "while grading) and was interrupted: an endless loop, or far too slow an implementation.")

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
            f"__import__('specdec.remote', fromlist=['serve']).serve({fn_name}, "
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
        if "hint" not in result:  # the judging thread itself failed: never a pass
            result["hint"] = "the grader could not check this answer; please tell the instructor."
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
                return INTERRUPTED
            return f"the grader could not call `{fn_name}`: {ename}: {evalue}".rstrip(": ") + "."
    return ("the grader lost contact with your code while checking it (did a cell replace the grader's "
            "helper, specdec.remote?).")
