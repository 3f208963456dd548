"""`make bench-threads`: how torch's thread count and OpenMP's wait policy fare on a quiet machine
and with one core kept busy by an unrelated process (issue 18), measured side by side in one run.

Each configuration runs in a fresh Python process (the variables must be set before torch starts
its thread pool): one plain call of the shipped target on 120 tokens, and 20 cached one-position
decoding steps (grading's and the engine's small calls), each timed REPEATS times, and
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
ids = encode(COST_TEXT)[None, :121]
cache = model.new_cache()

def step():  # one decoding step: one new position on a 120-token KV cache, 20 in a row
    for _ in range(20):
        cache.rollback(120)
        model.extend(ids[:, 120:121], cache)

with torch.no_grad():
    model.extend(ids[:, :120], cache)
    out = {"threads": torch.get_num_threads()}
    for name, fn in (("call", lambda: model(ids[:, :120])), ("step", step)):
        for _ in range(5):
            fn()
        times = []
        for _ in range(int(sys.argv[2])):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        out[name] = 1e3 * statistics.median(times)
print(json.dumps(out))
"""

SPIN = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end:\n    pass\n"

CONFIGS = [  # (label, torch threads (0: torch's default), extra environment)
    ("torch's default threads", 0, {}),
    ("torch's default threads, OMP_WAIT_POLICY=PASSIVE (make lab's kernels)", 0, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ("1 thread", 1, {}),
    ("1 thread, OMP_WAIT_POLICY=PASSIVE (grading kernels, the tests)", 1, {"OMP_WAIT_POLICY": "PASSIVE"}),
]
WORKLOADS = {"call": "plain call, 120 tokens", "step": "20 cached decoding steps"}


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
    results: dict[tuple[str, str, bool], list[float]] = {}
    threads_used = {}
    for _ in range(args.rounds):
        for busy in (False, True):
            spinner = subprocess.Popen([sys.executable, "-c", SPIN, "600"]) if busy else None
            try:
                if spinner:
                    time.sleep(0.5)  # let it take its core
                for label, threads, env in CONFIGS:
                    got = probe(threads, env, args.repeats)
                    for work in WORKLOADS:
                        results.setdefault((label, work, busy), []).append(got[work])
                    threads_used[label] = got["threads"]
            finally:
                if spinner:
                    spinner.kill()
                    spinner.wait()
    med = {key: statistics.median(v) for key, v in results.items()}
    head = " | ".join(f"{w}: quiet | {w}: one core busy" for w in WORKLOADS.values())
    lines = [f"# Threads on a quiet and a busy machine ({os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, "
             f"{time.strftime('%Y-%m-%d')})", "",
             "Two workloads of the shipped target: one plain call on 120 tokens (notebook 04's loops, the "
             "roofline) and 20 cached one-position decoding steps on a 120-token cache (the engine's and "
             f"grading's many small calls). Median of {args.repeats} timings per process, then the median over "
             f"{args.rounds} alternating rounds. One core busy: another process spinning in a loop.", "",
             f"| configuration | torch threads | {head} |", "|---|---|" + "---|---|" * len(WORKLOADS)]
    for label, _, _ in CONFIGS:
        cells = " | ".join(f"{med[(label, w, False)]:.1f} ms | {med[(label, w, True)]:.1f} ms" for w in WORKLOADS)
        lines.append(f"| {label} | {threads_used[label]} | {cells} |")
    lines.append("")
    for w, name in WORKLOADS.items():
        base = med[(CONFIGS[0][0], w, True)]
        best = min(CONFIGS, key=lambda c: med[(c[0], w, True)])[0]
        lines.append(f"- {name}, one core busy: the fastest is **{best}**, {base / med[(best, w, True)]:.2f}x "
                     f"faster than torch's default there; on the quiet machine it costs "
                     f"{med[(best, w, False)] / med[(CONFIGS[0][0], w, False)]:.2f}x torch's default time.")
    text = "\n".join(lines) + "\n"
    OUT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
