"""`make gpu-check` (coursekit/gpucheck.py): its steps, on the CPU in quick mode, so that the command
cannot rot on machines without a GPU; and its summary's parts on made-up results."""
import subprocess
import sys

import pytest

from coursekit import gpucheck
from coursekit.paths import REPO


def test_a_cell_time_and_the_check_it_calls_are_read_from_the_notebook():
    cell = {"source": 'from coursekit.judge.verdict import verdict\nhint = verdict("a04.check_x", f)\n',
            "metadata": {"execution": {"iopub.execute_input": "2026-12-04T10:00:00.000000Z",
                                       "shell.execute_reply": "2026-12-04T10:00:12.500000Z"}}}
    assert gpucheck.hidden_check(cell) == "a04.check_x"
    assert gpucheck.cell_seconds(cell) == pytest.approx(12.5)
    assert gpucheck.cell_seconds({"metadata": {}}) is None
    assert gpucheck.hidden_check({"source": "print(1)"}) is None


def test_the_summary_names_errors_slow_checks_tests_and_the_bench():
    notebooks = [dict(name="04_torch_verifier", seconds=50.0, error=None,
                      slow=[("a04.check_stats", 14.2), ("a04.check_cached_greedy", 11.0)]),
                 dict(name="05_speculation_in_practice", seconds=40.0, error="AssertionError: x", slow=[])]
    tests = dict(returncode=0, result="120 passed in 30.0s", seconds=31.0, tail="")
    bench = dict(returncode=0, summary="best speedup 1.50x at K=4 (T=0)", seconds=90.0)
    text = gpucheck.summarise("NVIDIA H200", notebooks, tests, bench, 211.0)
    assert "04_torch_verifier: 50 s, no error" in text
    assert "hidden check a04.check_stats: 14.2 s" in text
    # what the checker module's contract says of a slow check (04's are heavy; an unknown one: not declared)
    assert "a04.check_cached_greedy: 11.0 s (over 10 s; declared heavy: its checks decode on a transformer pair" in text
    assert "a04.check_stats: 14.2 s (over 10 s; not declared heavy" in text
    assert "ERROR AssertionError: x" in text
    assert "120 passed" in text and "best speedup 1.50x" in text
    assert not gpucheck.ok(notebooks, tests, bench)


def test_the_notebooks_it_runs_are_those_that_use_torch():
    from coursekit.paths import assignments

    chosen = gpucheck.device_notebooks()
    assert "04_torch_verifier" in chosen and "01_acceptance_chain" not in chosen
    assert list(chosen) == [a for a in assignments() if a in chosen]


def test_without_cuda_it_says_so_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "coursekit.gpucheck"], cwd=REPO, capture_output=True, text=True,
                          env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr
    assert "no CUDA device" in done.stdout


@pytest.mark.slow  # executes notebook 01, 01's reference checker tests and bench --quick on the CPU: about a minute
def test_every_step_runs_on_the_cpu_in_quick_mode():
    done = subprocess.run([sys.executable, "-m", "coursekit.gpucheck", "--quick", "--device", "cpu"], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout[done.stdout.index("gpu-check on cpu"):]
    assert "notebook 01_acceptance_chain:" in summary and "no error" in summary
    assert " passed" in summary and "failed" not in summary
    assert "best speedup" in summary
