"""`make bench`: plain target decoding against speculative decoding on the shipped pair, measured
side by side in one run, next to the formula's prediction, with how far each figure can be trusted.

For K = 0..8 and temperatures 0 and 1, on four prompts, 160 new tokens each (the fastest of
two side-by-side runs per prompt, median over prompts):
measured alpha (accepted / tested drafts, where a tested draft is an accepted one or the first
rejection of a round: drafts after it are never tested), tokens per round, c (draft pass time /
target pass time), the verification cost of K+1 positions relative to one, the predicted
speedup (plain formula, and with the measured verification cost) and the measured speedup.

Timing on a shared machine is the weak point, so the run also reports
- each figure's spread: the same estimate made on each repeat separately (speedup) or on each
  half of the repeats (c, verification cost), as (max - min) / median;
- the drift of the machine: the cost of one plain decoding step, timed before every row and at
  the end (fastest of several, in ms);
and marks every row that fails the busy-machine rule (`busy_reasons`, threshold BUSY): do not
quote those. It does not pin threads or CPU frequency; it prints what torch used.

    python benchmarks/speculative.py [DEVICE] [--quick]   # --quick: a smoke run, well under a minute when quiet

Writes benchmarks/results-<device>[-quick].md (what it prints) and a plot; the summary line is last.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from solutions.fast_speculative import _sample, plain_generate, speculative_generate, verify_drafts
from solutions.reference.a01_acceptance_chain import expected_tokens
from specdec.model import encode, load

PROMPTS = [
    "import os\n\n\ndef list_files(root):\n    ",
    "class Config:\n    def load(self, path):\n        ",
    "def parse_args(argv=None):\n    parser = argparse.ArgumentParser()\n    ",
    "    try:\n        value = int(text)\n    except ValueError:\n        ",
]
COST_TEXT = "class Config:\n    def __init__(self, path):\n        self.path = path\n" * 3
# 160 new bytes: prompt + new tokens + K drafts stay inside the models' 256-byte context.
FULL = dict(n_new=160, ks=range(0, 9), prompts=PROMPTS, repeats=2, cost_repeats=25)
QUICK = dict(n_new=48, ks=(0, 1, 4), prompts=PROMPTS[:2], repeats=2, cost_repeats=8)
TEMPS = (0.0, 1.0)
BUSY = 0.10  # figures that do not repeat within 10 % say more about the machine than the method
OUT = Path(__file__).resolve().parent


def spread(values) -> float:
    """(max - min) / median: how far estimates of the same quantity disagree (0 for one value)."""
    values = list(values)
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def busy_reasons(speedups_by_repeat, c_halves, verify_halves, step_before_ms, step_after_ms,
                 threshold: float = BUSY) -> list[str]:
    """The busy-machine rule for one row; [] when its figures can be quoted.

    A row fails when the same estimate made twice disagrees by more than `threshold`:
    the speedup measured in each repeat, c or verify(K+1) measured on each half of their repeats
    (spread = (max - min) / median), or the one-position step cost timed just before and just
    after the row (change relative to the smaller)."""
    reasons = []
    for name, values in (("speedup repeats", speedups_by_repeat), ("c halves", c_halves),
                         ("verify halves", verify_halves)):
        if spread(values) > threshold:
            reasons.append(f"{name} {spread(values):.0%}")
    if abs(step_after_ms - step_before_ms) / min(step_before_ms, step_after_ms) > threshold:
        reasons.append(f"step cost {step_before_ms:.2f}->{step_after_ms:.2f} ms")
    return reasons


def run_drift(step_ms) -> float:
    """How much the one-position step cost moved over the run: (max - min) / min of all probes."""
    return (max(step_ms) - min(step_ms)) / min(step_ms)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device):
    sync(device)
    t0 = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - t0, result


@torch.no_grad()
def one_step_ms(target, device, repeats=10, calls=4, context=130):
    """The machine's pulse: one plain decoding step (a one-position target pass plus picking the
    token) after `context` cached positions, in ms, the fastest of `repeats` timings of `calls`
    steps. Timed before every row and at the end; on a quiet machine it does not move."""
    ids = encode(COST_TEXT)[None, :context + 1].to(device)
    cache = target.new_cache()
    target.extend(ids[:, :context], cache)

    def run():
        for _ in range(calls):
            cache.rollback(context)
            _sample(target.extend(ids[:, context:], cache)[0, -1], 0.0, None)

    return min(timed(run, device)[0] for _ in range(repeats)) / calls * 1e3


@torch.no_grad()
def step_costs(target, draft, device, max_new, temperature, repeats=25, calls=4, context=130):
    """What one decoding step costs, as the loops run it, relative to a plain decoding step
    (a one-position target pass plus picking the token): {"draft": [c, ...], k: [verify(k), ...]},
    each a list of three estimates: from all repeats, from the first half, from the second half.

    - plain step: target pass over 1 new position + `_sample`;
    - draft step: the same with the draft (c is the ratio of the two);
    - verification over k positions: target pass over k new positions + `verify_drafts`.
    Measured after `context` cached positions (mid-generation). Every repeat times each shape
    once in a rotating order, each timing covering `calls` back-to-back steps; each shape keeps
    its fastest time (interference only adds time) and the costs are ratios of those minima."""
    ids = encode(COST_TEXT)[None, :context + max_new].to(device)
    caches = {"target": target.new_cache(), "draft": draft.new_cache()}
    models = {"target": target, "draft": draft}
    for name, cache in caches.items():
        models[name].extend(ids[:, :context], cache)
    drafted = ids[0, context + 1:context + max_new].tolist()
    q_all = draft(ids[:, :context + max_new])[0, context:]
    q_rows = [None if temperature == 0 else torch.softmax(q / temperature, -1) for q in q_all]
    gen = torch.Generator(device=device).manual_seed(0)

    def run(name, k):
        cache, model = caches[name], models[name]
        for _ in range(calls):
            cache.rollback(context)
            logits = model.extend(ids[:, context:context + k], cache)[0]
            if name == "verify":
                verify_drafts(logits, drafted[:k - 1], q_rows[:k - 1], temperature, gen)
            else:
                _sample(logits[-1], temperature, gen)

    caches["verify"], models["verify"] = caches["target"], target
    shapes = [("target", 1), ("draft", 1)] + [("verify", k) for k in range(2, max_new + 1)]
    times = {shape: [] for shape in shapes}
    for r in range(repeats):
        for shape in shapes[r % len(shapes):] + shapes[:r % len(shapes)]:
            times[shape].append(timed(lambda: run(*shape), device)[0])
    parts = [slice(None), slice(None, repeats // 2), slice(repeats // 2, None)]

    def ratio(shape):
        return [min(times[shape][p]) / min(times[("target", 1)][p]) for p in parts]

    costs = {k: ratio(("verify", k)) for name, k in shapes if name == "verify"}
    costs[1] = [1.0, 1.0, 1.0]
    costs["draft"] = ratio(("draft", 1))
    return costs


def measure(target, draft, device, cfg):
    """One row per (T, K), with the estimates the busy-machine rule needs, and the step-cost probes."""
    rows, probes = [], []
    for T in TEMPS:
        costs = step_costs(target, draft, device, max(cfg["ks"]) + 1, T, repeats=cfg["cost_repeats"])
        c, c_halves = costs["draft"][0], costs["draft"][1:]
        for K in cfg["ks"]:
            probes.append(one_step_ms(target, device))
            t_plain = [[float("inf")] * len(cfg["prompts"]) for _ in range(cfg["repeats"])]
            t_spec = [[float("inf")] * len(cfg["prompts"]) for _ in range(cfg["repeats"])]
            acc = tested = emitted = rounds = 0
            for i, prompt in enumerate(cfg["prompts"]):
                # Plain and speculative back to back, `repeats` times: interference from other
                # processes only ever adds time, and both runs see the same machine state, so
                # their ratio is robust where absolute times are not.
                for r in range(cfg["repeats"]):
                    gen = torch.Generator(device=device).manual_seed(i)
                    t_plain[r][i] = timed(lambda: plain_generate(target, encode(prompt), cfg["n_new"], T, gen), device)[0]
                    gen = torch.Generator(device=device).manual_seed(100 + i)
                    t_spec[r][i], (tokens, st) = timed(
                        lambda: speculative_generate(target, draft, encode(prompt), cfg["n_new"], K, T, gen), device)
                acc += st["accepted"]
                tested += st["accepted"] + st.get("rejected", 0)
                emitted += len(tokens)
                rounds += st["rounds"]
            fastest = [min(t_plain[r][i] for r in range(cfg["repeats"])) / min(t_spec[r][i] for r in range(cfg["repeats"]))
                       for i in range(len(cfg["prompts"]))]
            by_repeat = [statistics.median(p / s for p, s in zip(t_plain[r], t_spec[r])) for r in range(cfg["repeats"])]
            alpha = acc / tested if tested else float("nan")
            E = expected_tokens(alpha, K) if K else 1.0
            verify = costs[K + 1][0]
            rows.append(dict(T=T, K=K, alpha=alpha, tokens_per_round=emitted / rounds, c=c, c_halves=c_halves,
                             verify=verify, verify_halves=costs[K + 1][1:],
                             pred=E / (1 + K * c), pred_v=E / (K * c + verify),
                             measured=statistics.median(fastest), by_repeat=by_repeat))
    probes.append(one_step_ms(target, device))
    for row, before, after in zip(rows, probes, probes[1:]):
        row["busy"] = busy_reasons(row["by_repeat"], row["c_halves"], row["verify_halves"], before, after)
    return rows, probes


def report(rows, probes, device, cfg, load_before) -> list[str]:
    cpu = torch.cuda.get_device_name() if device.type == "cuda" else cpu_name()
    lines = [f"device: {device} ({cpu}); torch {torch.__version__}, {torch.get_num_threads()} torch threads "
             f"on {len(os.sched_getaffinity(0))} usable cores; load average before the run {load_before:.2f}, "
             f"after {os.getloadavg()[0]:.2f}",
             f"{cfg['n_new']} new tokens, {len(cfg['prompts'])} prompts, {cfg['repeats']} repeats per prompt "
             f"(fastest kept, median over prompts); (n%) = spread of the same estimate over repeats "
             f"(speedup: each repeat; c and verify: each half of {cfg['cost_repeats']} repeats), (max - min) / median",
             "", "| T | K | alpha | tokens/round | c | verify(K+1)/1 | predicted | predicted (measured verify) "
             "| measured | measured per repeat | busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['T']:g} | {r['K']} | {r['alpha']:.3f} | {r['tokens_per_round']:.2f} | "
                     f"{r['c']:.3f} ({spread(r['c_halves']):.0%}) | {r['verify']:.2f} ({spread(r['verify_halves']):.0%}) | "
                     f"{r['pred']:.2f}x | {r['pred_v']:.2f}x | {r['measured']:.2f}x | "
                     f"{min(r['by_repeat']):.2f}..{max(r['by_repeat']):.2f}x ({spread(r['by_repeat']):.0%}) | "
                     f"{'; '.join(r['busy'])} |")
    drift = run_drift(probes)
    busy_rows = [r for r in rows if r["busy"]]
    lines += ["", f"one plain decoding step (one-position target pass + pick), timed before every row and at the end: "
                  f"{probes[0]:.2f} ms at the start, {probes[-1]:.2f} ms at the end, {min(probes):.2f}..{max(probes):.2f} ms "
                  f"over {len(probes)} probes: drift {drift:.0%}",
              f"busy-machine rule: a row is marked when the same figure measured twice disagrees by more than "
              f"{BUSY:.0%}: its speedup across repeats, c or verify(K+1) across halves of their repeats, or the "
              f"one-step cost just before vs just after the row; the whole run when the one-step cost drifted by "
              f"more than {BUSY:.0%} over it."]
    verdicts = []
    if drift > BUSY:
        verdicts.append(f"the one-step cost drifted {drift:.0%} during the run")
    if busy_rows:
        verdicts.append(f"{len(busy_rows)} of {len(rows)} rows fail the rule: "
                        + ", ".join(f"T={r['T']:g} K={r['K']}" for r in busy_rows))
    lines.append(f"MACHINE TOO BUSY for these figures to mean much: {'; '.join(verdicts)}. Rerun on a quiet machine "
                 f"before quoting them." if verdicts else
                 "quiet: every row passes the busy-machine rule and the one-step cost held steady.")
    return lines


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("device", nargs="?", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 K values, 2 prompts, 48 new tokens")
    args = ap.parse_args(argv)
    device, cfg = torch.device(args.device), QUICK if args.quick else FULL
    tag = f"{device.type}{'-quick' if args.quick else ''}"
    load_before = os.getloadavg()[0]
    torch.manual_seed(0)
    target, draft = load("target", device), load("draft", device)
    for _ in range(2):  # warm up kernels and allocators
        speculative_generate(target, draft, encode(PROMPTS[0]), 32, 4, 1.0)
    rows, probes = measure(target, draft, device, cfg)
    text = "\n".join(report(rows, probes, device, cfg, load_before))
    print(text)
    (OUT / f"results-{tag}.md").write_text(text + "\n")
    plot(rows, device, tag)
    quiet = [r for r in rows if r["K"] > 0 and not r["busy"]]
    ratios = [r["measured"] / r["pred_v"] for r in quiet]
    best = {T: max((r for r in rows if r["T"] == T), key=lambda r: r["measured"]) for T in TEMPS}
    print(f"best speedup {best[0.0]['measured']:.2f}x at K={best[0.0]['K']} (T=0), "
          f"{best[1.0]['measured']:.2f}x at K={best[1.0]['K']} (T=1); "
          + (f"measured/predicted in [{min(ratios):.2f}, {max(ratios):.2f}] over the {len(quiet)} unmarked rows with K > 0"
             if ratios else "every row with K > 0 is marked busy"))


def plot(rows, device, tag):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, T in zip(axes, TEMPS):
        rs = [r for r in rows if r["T"] == T]
        Ks = [r["K"] for r in rs]
        ax.axhspan(0, 1, color="tab:red", alpha=0.1, label="loses")
        low = [r["measured"] - min(r["by_repeat"] + [r["measured"]]) for r in rs]
        high = [max(r["by_repeat"] + [r["measured"]]) - r["measured"] for r in rs]
        ax.errorbar(Ks, [r["measured"] for r in rs], yerr=[low, high], fmt="o-", capsize=3,
                    label="measured (bars: range over repeats)")
        marked = [r for r in rs if r["busy"]]
        if marked:
            ax.plot([r["K"] for r in marked], [r["measured"] for r in marked], "x", color="tab:red", ms=10,
                    label="fails the busy-machine rule")
        ax.plot(Ks, [r["pred"] for r in rs], "--", label="formula, verify = 1 pass")
        ax.plot(Ks, [r["pred_v"] for r in rs], ":", label="formula, measured verify cost")
        ax.set_xlabel("draft length K")
        ax.set_title(f"T = {T:g}, {device.type}, c = draft/target time")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("speedup over plain target decoding")
    fig.tight_layout()
    fig.savefig(OUT / f"results-{tag}.png", dpi=90)


if __name__ == "__main__":
    main()
