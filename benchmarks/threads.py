"""`make bench-threads`: how torch's thread count and OpenMP's wait policy fare on a quiet machine
and with one core kept busy by an unrelated process (issue 18), measured side by side in one run.

Each configuration runs in a fresh Python process (the variables must be set before torch starts
its thread pool): one plain call of the shipped target on 120 tokens, timed REPEATS times, and
the median kept (the median, not the fastest, because the question is what a loaded machine
does to a typical call). The busy core is a second process spinning in a loop for the whole
measurement of the "one core busy" rows; configurations alternate so that drift hits all alike.

    python benchmarks/threads.py [--repeats 60] [--rounds 3]

Prints a markdown table (also written to benchmarks/results-threads.md).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results-threads.md"

PROBE = r"""
import json, sys, time, statistics
import torch
from specdec.model import encode, load
from specdec.timing import COST_TEXT
threads = int(sys.argv[1])
if threads:
    torch.set_num_threads(threads)
model = load("target", "cpu")
ids = encode(COST_TEXT)[None, :120]
with torch.no_grad():
    for _ in range(5):
        model(ids)
    times = []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter()
        model(ids)
        times.append(time.perf_counter() - t)
print(json.dumps({"threads": torch.get_num_threads(), "median_ms": 1e3 * statistics.median(times)}))
"""

SPIN = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end:\n    pass\n"

CONFIGS = [  # (label, torch threads (0: torch's default), extra environment)
    ("torch's default threads", 0, {}),
    ("torch's default threads, OMP_WAIT_POLICY=PASSIVE", 0, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ("1 thread", 1, {}),
    ("1 thread, OMP_WAIT_POLICY=PASSIVE", 1, {"OMP_WAIT_POLICY": "PASSIVE"}),
]


def probe(threads: int, env: dict, repeats: int) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                              "OMP_WAIT_POLICY")}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(threads), str(repeats)], env={**clean, **env},
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of every configuration, quiet and busy")
    args = ap.parse_args(argv)
    results: dict[tuple[str, bool], list[float]] = {}
    threads_used = {}
    for _ in range(args.rounds):
        for busy in (False, True):
            spinner = subprocess.Popen([sys.executable, "-c", SPIN, "600"]) if busy else None
            try:
                if spinner:
                    time.sleep(0.5)  # let it take its core
                for label, threads, env in CONFIGS:
                    got = probe(threads, env, args.repeats)
                    results.setdefault((label, busy), []).append(got["median_ms"])
                    threads_used[label] = got["threads"]
            finally:
                if spinner:
                    spinner.kill()
                    spinner.wait()
    lines = [f"# Threads on a quiet and a busy machine ({os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, "
             f"{time.strftime('%Y-%m-%d')})", "",
             "One plain call of the shipped target on 120 tokens, median of "
             f"{args.repeats} calls per process, then the median over {args.rounds} alternating rounds. "
             "One core busy: another process spinning in a loop.", "",
             "| configuration | torch threads | quiet | one core busy | busy / quiet |", "|---|---|---|---|---|"]
    base_busy = statistics.median(results[(CONFIGS[0][0], True)])
    for label, _, _ in CONFIGS:
        quiet, busy = statistics.median(results[(label, False)]), statistics.median(results[(label, True)])
        lines.append(f"| {label} | {threads_used[label]} | {quiet:.1f} ms | {busy:.1f} ms | {busy / quiet:.2f}x |")
    best = min(CONFIGS, key=lambda c: statistics.median(results[(c[0], True)]))[0]
    lines += ["", f"With one core busy the fastest is **{best}**: "
              f"{base_busy / statistics.median(results[(best, True)]):.2f}x faster than torch's default there."]
    text = "\n".join(lines) + "\n"
    OUT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
