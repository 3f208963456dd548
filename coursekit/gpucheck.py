"""`make gpu-check`: the course checked on a GPU in one command, with one summary at the end.

On a machine with CUDA it runs, one step at a time (never a timing while tests run):
1. the notebooks that use torch (`device_notebooks`: 04-07) executed one at a time with the reference
   answers, hidden checks included (the source notebooks, in a scratch copy; nbclient records every
   cell's start and end), timed;
2. the checker, model, engine and tree tests on CUDA, their workers sharing the cores' threads
   (`coursekit.threads`: with 16 cores and 4 workers, 4 torch threads each);
3. `make bench` on cuda (benchmarks/speculative.py), whose last line is its summary.
Then it prints the summary: per notebook its time and any error, every hidden check of 04-07 that
took more than SLOW_CHECK seconds with what its checker module's contract says of it (declared heavy,
and why, or not: then the contract, CONTRACT in solutions/checks/aNN.py, may need the check's exercise
marked heavy), the tests' result line, and the bench's summary line. It is
sized to fit in 8 minutes on one H200 with 16 cores.

Without CUDA it says so and exits 0. `--quick --device cpu` runs every step on the CPU in a
small version (the smallest notebook, 01, executed and timed as the device notebooks are; the
reference-answer checker tests of 01 through the same pytest command; `bench --quick`), which
tests/test_gpucheck.py runs so that the command cannot rot.

    python -m coursekit.gpucheck [--device cuda] [--quick]

What it leaves out: the JupyterLab, nbgrader and cohort tests (nothing there depends on the
device), and any judgement of the figures: it reports them.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from coursekit import threads
from coursekit.paths import REPO, SOURCE, assignments, source_notebooks

TESTS = ("tests/test_checkers.py", "tests/test_model.py", "tests/test_engine.py", "tests/test_trees.py",
         "tests/test_serving_notebook.py")
TEST_WORKERS = 4
# A smoke run of each step's code (what tests/test_gpucheck.py runs on every `make test`): the suite
# grades 04-07 and runs their checker and tree tests already, so repeating them here bought nothing.
QUICK = dict(notebooks=("01_acceptance_chain",), tests=("tests/test_checkers.py",),
             test_filter="test_reference_passes and 01", bench=("--quick",), workers=1)
FULL = dict(workers=TEST_WORKERS, notebooks=None, tests=TESTS, test_filter=None, bench=())  # notebooks: device_notebooks()
SLOW_CHECK = 10.0  # seconds: a hidden check slower than this is named in the summary
CELL_TIMEOUT = 600  # seconds, per cell (nbclient's wall clock)


def device_notebooks() -> tuple[str, ...]:
    """The assignments whose source notebook imports torch (04-07): the ones a device can change."""
    import nbformat

    def uses_torch(assignment):
        return any(re.search(r"^\s*(import torch|from torch\b)", cell.source, re.M)
                   for path in source_notebooks(assignment)
                   for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")
    return tuple(a for a in assignments() if uses_torch(a))


def declared_heavy(check: str):
    """What the contract of the check's module says of it ("a04.check_x"): its exercise's Heavy, or None
    (cheap, or a check the contract does not know)."""
    from coursekit import registry

    module, _, name = check.partition(".")
    try:
        return registry.contract(module.removeprefix("a")).exercise_of(name).heavy
    except (ImportError, KeyError, AttributeError):
        return None


def cell_seconds(cell) -> float | None:
    """A cell's run time from nbclient's timing metadata (None when it did not run)."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def hidden_check(cell) -> str | None:
    """The checker a hidden test cell calls (`verdict("a06.check_x", ...)`), or None."""
    found = re.search(r'verdict\("([\w.]+)"', "".join(cell.get("source", "")))
    return found.group(1) if found else None


def run_notebook(assignment: str, device: str, scratch: Path) -> dict:
    """Execute a scratch copy of the source notebook; {name, seconds, error, slow: [(check, s)]}."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    src = SOURCE / assignment / f"{assignment}.ipynb"
    work = scratch / assignment
    work.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(src, as_version=4)
    env_device = {"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else {}
    os.environ.update(env_device)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(work)}})
    started, error = time.perf_counter(), None
    try:
        client.execute()
    except CellExecutionError as exc:
        error = str(exc).strip().splitlines()[-1][:300]
    except Exception as exc:  # noqa: BLE001 - a dead kernel or a timeout is a result to report
        error = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    seconds = time.perf_counter() - started
    nbformat.write(nb, work / src.name)
    slow = []
    for cell in nb.cells:
        check, took = hidden_check(cell), cell_seconds(cell)
        if check and took is not None and took > SLOW_CHECK:
            slow.append((check, took))
    return dict(name=assignment, seconds=seconds, error=error, slow=slow)


def run_tests(tests, test_filter, device: str, workers: int = TEST_WORKERS) -> dict:
    """pytest over `tests` with `workers` workers (their threads shared by tests/conftest.py)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), *tests]
    if test_filter:
        cmd += ["-k", test_filter]
    env = {**os.environ, **threads.env(threads.share(workers))}
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    result = next((line for line in reversed(lines) if re.search(r"\d+ (passed|failed|error)", line)),
                  lines[-1] if lines else "no output")
    return dict(returncode=done.returncode, result=result.strip("= "), seconds=time.perf_counter() - started,
                tail="\n".join(lines[-15:]) if done.returncode else "")


def run_bench(device: str, args) -> dict:
    cmd = [sys.executable, str(REPO / "benchmarks" / "speculative.py"), device, *args]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1] if (done.returncode == 0 and lines) else f"failed: {done.stderr.strip()[-300:]}"
    return dict(returncode=done.returncode, summary=summary, seconds=time.perf_counter() - started)


def summarise(device_name: str, notebooks: list[dict], tests: dict, bench: dict, seconds: float) -> str:
    lines = [f"gpu-check on {device_name}: {seconds:.0f} s in all"]
    for nb in notebooks:
        lines.append(f"  notebook {nb['name']}: {nb['seconds']:.0f} s, "
                     + (f"ERROR {nb['error']}" if nb["error"] else "no error"))
        for check, took in nb["slow"]:
            heavy = declared_heavy(check)
            said = f"declared heavy: {heavy.reason}" if heavy else "not declared heavy in its module's CONTRACT"
            lines.append(f"    hidden check {check}: {took:.1f} s (over {SLOW_CHECK:.0f} s; {said})")
    lines.append(f"  tests ({tests['seconds']:.0f} s): {tests['result']}")
    if tests["tail"]:
        lines += ["    " + line for line in tests["tail"].splitlines()]
    lines.append(f"  bench ({bench['seconds']:.0f} s): {bench['summary']}")
    return "\n".join(lines)


def ok(notebooks, tests, bench) -> bool:
    return not any(nb["error"] for nb in notebooks) and tests["returncode"] == 0 and bench["returncode"] == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="cuda (the default where there is one) or cpu")
    ap.add_argument("--quick", action="store_true", help="the small version of every step (what the test runs)")
    args = ap.parse_args(argv)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else None)
    if device is None:
        print("gpu-check: no CUDA device on this machine, nothing to check (run it where there is one; "
              "`python -m coursekit.gpucheck --quick --device cpu` runs its steps on the CPU)")
        return 0
    if device == "cuda" and not torch.cuda.is_available():
        print("gpu-check: --device cuda, but torch sees no CUDA device here")
        return 0
    cfg = QUICK if args.quick else FULL
    device_name = torch.cuda.get_device_name() if device == "cuda" else f"cpu ({threads.cores()} cores)"
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    try:
        notebooks = []
        for assignment in cfg["notebooks"] or device_notebooks():
            print(f"gpu-check: executing {assignment} on {device} ...", flush=True)
            notebooks.append(run_notebook(assignment, device, scratch))
        print("gpu-check: tests ...", flush=True)
        tests = run_tests(cfg["tests"], cfg["test_filter"], device, cfg["workers"])
        print("gpu-check: bench ...", flush=True)
        bench = run_bench(device, cfg["bench"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = summarise(device_name, notebooks, tests, bench, time.perf_counter() - started)
    print(text)
    (REPO / "benchmarks" / f"gpu-check-{device}{'-quick' if args.quick else ''}.txt").write_text(text + "\n")
    return 0 if ok(notebooks, tests, bench) else 1


if __name__ == "__main__":
    sys.exit(main())
