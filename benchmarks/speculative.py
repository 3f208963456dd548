"""`make bench`: plain target decoding against speculative decoding on the shipped pair, measured
side by side in one run, next to the formula's prediction, with how far each figure can be trusted.

For K = 0..8 and temperatures 0 and 1, on four prompts, 160 new tokens each (the fastest of
two side-by-side runs per prompt, median over prompts):
measured alpha (accepted / tested drafts, where a tested draft is an accepted one or the first
rejection of a round: drafts after it are never tested), tokens per round, c (draft pass time /
target pass time) and the verification cost of K+1 positions relative to one, timed alone (as
`specdec.timing.step_costs` defines them: cached passes) and timed inside the loops, the per-round
overhead o, the predicted speedup (plain formula; with the verification cost timed alone; with the
loop's own terms and o) and the measured speedup.
Both loops are the course's engine (`specdec.engine`): `plain` and `speculate` with a draft
model; K = 0 runs the speculative loop without drafts, which the engine does as a plain step, so
its row shows what the loop adds around plain decoding (about nothing since issue 30).

The round-cost model's terms are measured without the speedup they predict: right after each
timed pair, both loops run again with every model call timed (`specdec.practice.loop_costs`), and
no whole run's time is used; each term is the median over prompts and repeats. In units of a plain step's target pass (its mean in the plain loop):
s, a plain step's own work (sampling, Python); c, the draft's time per draft pass; verify, the
verification pass; b, a round's own work (sampling, the acceptance test, rollback, the read back to
the host, Python). A plain step costs 1 + s and a round K c + verify + b, so the prediction is
E[tokens] (1 + s) / (K c + verify + b) for a round, and o, the round's overhead in plain steps, is
(K c + verify + b) / (1 + s) - (K c + verify) (`specdec.timing.per_round_overhead`, the course's one
definition, as in notebooks 02, 04 and 05): what a round costs beyond K c + verify, its own work
minus a plain step's own work for the same passes, 0 for plain decoding (K = 0) and negative when a
round is leaner than that; so the prediction is E[tokens] / (K c + verify + o). What is measured is whole runs, so the prediction
quoted against it is a run's: each run's prefill (the prompt's pass; in the speculative run the
draft's too) plus n plain steps, against the prefill plus n / E[tokens] rounds. Printing c and verify both ways shows how much more
a pass costs inside the loop than timed alone.

Timing on a shared machine is the weak point, so the run also reports
- each figure's spread: the same estimate made on each repeat separately (the speedup measured
  and predicted) or on each half of the repeats (c and the verification cost timed alone), as
  (max - min) / median;
- the drift of the machine: the cost of one plain decoding step, timed before every row and at
  the end (fastest of several, in ms);
and marks every row that fails the busy-machine rule (`busy_reasons`, threshold BUSY): do not
quote those. The costs timed alone are judged once for the run (`alone_note`). It does not pin threads or CPU frequency; it prints what torch used.

    python benchmarks/speculative.py [DEVICE] [--quick]   # --quick: a smoke run, well under a minute when quiet

Writes benchmarks/results-<device>[-quick].md (what it prints) and a plot; the summary line is last.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
from pathlib import Path

import torch

from solutions.reference.a01_acceptance_chain import expected_tokens
from specdec.engine import DraftModel, plain, speculate
from specdec.model import encode, load
from specdec import practice
from specdec.timing import costs_from, step_times, timed

PROMPTS = [
    "import os\n\n\ndef list_files(root):\n    ",
    "class Config:\n    def load(self, path):\n        ",
    "def parse_args(argv=None):\n    parser = argparse.ArgumentParser()\n    ",
    "    try:\n        value = int(text)\n    except ValueError:\n        ",
]
# 160 new bytes: prompt + new tokens + K drafts stay inside the models' 256-byte context.
FULL = dict(n_new=160, ks=range(0, 9), prompts=PROMPTS, repeats=2, cost_repeats=40)
QUICK = dict(n_new=32, ks=(0, 1, 4), prompts=PROMPTS[:2], repeats=2, cost_repeats=8)
TEMPS = (0.0, 1.0)
BUSY = 0.10  # figures that do not repeat within 10 % say more about the machine than the method
# The machine's absolute speed is noisier than any ratio measured side by side: on the course's
# 2-core VM with nothing else running (2026-12-01), the fastest of 12 one-step timings moved by
# 9-41 % between back-to-back one-second windows, while c and verify(5) measured in the same
# windows moved by 3-7 %. So a row is marked when the step cost moves by more than PULSE around
# it (a change of regime while it ran), and the run is judged by its rows, not by the step cost's
# drift over five minutes, which ratios measured seconds apart do not feel.
PULSE = 0.25
TOO_MANY = 0.25  # the run is too busy when more than a quarter of its rows are marked
OUT = Path(__file__).resolve().parent


def spread(values) -> float:
    """(max - min) / median: how far estimates of the same quantity disagree (0 for one value)."""
    values = list(values)
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def busy_reasons(speedups_by_repeat, predicted_by_repeat, step_before_ms, step_after_ms,
                 threshold: float = BUSY, pulse: float = PULSE, measured: float | None = None) -> list[str]:
    """The busy-machine rule for one row; [] when its figures can be quoted.

    A row fails when the same estimate made twice disagrees by more than `threshold`: the speedup
    measured in each repeat, or the speedup predicted from each repeat's timings inside the loops
    (spread = (max - min) / median); or when the one-position step cost timed just before and just
    after the row differs by more than `pulse` (change relative to the smaller); or when the speedup
    quoted (`measured`: each run's fastest repeat, plain against speculative) differs by more than
    `threshold` from the speedup of one of the repeats: the plain and the speculative run were then
    slowed in different repeats, which each repeat's own ratio cannot show. c and verify timed
    alone are measured once for the whole run and predict nothing here: `alone_note` judges them."""
    reasons = []
    for name, values in (("speedup repeats", speedups_by_repeat), ("prediction repeats", predicted_by_repeat)):
        if spread(values) > threshold:
            reasons.append(f"{name} {spread(values):.0%}")
    if measured is not None:
        gap = max(abs(measured - b) / min(measured, b) for b in speedups_by_repeat)
        if gap > threshold:
            reasons.append(f"fastest of each vs a repeat {gap:.0%}")
    if abs(step_after_ms - step_before_ms) / min(step_before_ms, step_after_ms) > pulse:
        reasons.append(f"step cost {step_before_ms:.2f}->{step_after_ms:.2f} ms")
    return reasons


def alone_note(costs: dict, threshold: float = BUSY) -> str:
    """One line on c and verify(k) timed alone (`pass_costs`: each a list [all, first half, second half]):
    how far the halves of their repeats disagree, and whether the columns "alone" can be quoted."""
    worst = max(spread(values[1:]) for key, values in costs.items() if key != "unit")
    verdict = "quote them" if worst <= threshold else "do not quote the columns timed alone"
    return (f"c and verify timed alone (once, before the rows): their halves disagree by up to {worst:.0%} "
            f"(threshold {threshold:.0%}): {verdict}.")


def run_drift(step_ms) -> float:
    """How much the one-position step cost moved over the run: (max - min) / min of all probes."""
    return (max(step_ms) - min(step_ms)) / min(step_ms)


def one_step_ms(target, repeats=10, calls=4, context=130):
    """The machine's pulse: one plain decoding step (a cached one-position target pass) after
    `context` cached positions, in ms, the fastest of `repeats` timings of `calls` steps. Timed
    before every row and at the end; on a quiet machine it does not move."""
    times = step_times(target, positions=(1,), context=context, repeats=repeats, calls=calls)
    return min(times[("target", 1)]) / calls * 1e3


def pass_costs(target, draft, max_new, repeats=25, calls=4, context=130):
    """{"c": [c, ...], k: [verify(k), ...], "unit": seconds}: c and verify(k) each a list of three
    estimates (`specdec.timing`'s definitions, after `context` cached positions), from all repeats,
    from the first half and from the second half of them (the busy-machine rule compares the
    halves); "unit" the time of the one-position target pass they are ratios of."""
    times = step_times(target, draft, range(1, max_new + 1), context=context, repeats=repeats, calls=calls)
    n = len(times[("target", 1)])
    parts = [costs_from(times, part) for part in (slice(None), slice(None, n // 2), slice(n // 2, None))]
    out = {key: [part[key] for part in parts] for key in parts[0]}
    out["unit"] = min(times[("target", 1)]) / calls  # seconds of one cached one-position target pass
    return out


def predict_run(terms: list[dict], E: float, K: int, n: int) -> tuple[dict, float, float]:
    """(the loops' terms, each the median over `terms` (`specdec.practice.loop_costs`), the predicted
    speedup of a round, that of a whole run): a run is its prefill, then n plain steps (the last
    one samples without a pass) or n / E rounds."""
    loop = {key: statistics.median(t[key] for t in terms) for key in terms[0]}
    round_cost = K * loop["c"] + loop["verify"] + loop["b"] if K else 1 + loop["s"]
    run_plain = loop["prefill_plain"] + (n - 1) + n * loop["s"]
    run_spec = loop["prefill_spec"] + n / E * round_cost
    return loop, E * (1 + loop["s"]) / round_cost, run_plain / run_spec


def measure(target, draft, device, cfg):
    """One row per (T, K), with the estimates the busy-machine rule needs, and the step-cost probes."""
    rows, probes = [], []
    costs = pass_costs(target, draft, max(cfg["ks"]) + 1, repeats=cfg["cost_repeats"])
    c, c_halves = costs["c"][0], costs["c"][1:]
    for T in TEMPS:
        for K in cfg["ks"]:
            probes.append(one_step_ms(target))
            t_plain = [[float("inf")] * len(cfg["prompts"]) for _ in range(cfg["repeats"])]
            t_spec = [[float("inf")] * len(cfg["prompts"]) for _ in range(cfg["repeats"])]
            acc = tested = emitted = rounds = 0
            terms = [[] for _ in range(cfg["repeats"])]
            for i, prompt in enumerate(cfg["prompts"]):
                # Plain and speculative back to back, `repeats` times: interference from other
                # processes only ever adds time, and both runs see the same machine state, so
                # their ratio is robust where absolute times are not.
                for r in range(cfg["repeats"]):
                    gen = torch.Generator(device=device).manual_seed(i)
                    t_plain[r][i] = timed(lambda: plain(target, encode(prompt), cfg["n_new"], T, gen), device)[0]
                    gen = torch.Generator(device=device).manual_seed(100 + i)
                    t_spec[r][i], (tokens, st) = timed(
                        lambda: speculate(target, DraftModel(draft), encode(prompt), cfg["n_new"], K, T, gen), device)
                    # the model's terms, from both loops run again with every call timed (no whole run's
                    # time), right after the timed pair so that both see the same state of the machine
                    terms[r].append(practice.loop_costs(target, draft, encode(prompt), cfg["n_new"], K, T, seed=100 + i,
                                                     repeats=1))
                acc += st["accepted"]
                tested += st["accepted"] + st["rejected"]
                emitted += len(tokens)
                rounds += st["rounds"]
            fastest = [min(t_plain[r][i] for r in range(cfg["repeats"])) / min(t_spec[r][i] for r in range(cfg["repeats"]))
                       for i in range(len(cfg["prompts"]))]
            by_repeat = [statistics.median(p / s for p, s in zip(t_plain[r], t_spec[r])) for r in range(cfg["repeats"])]
            alpha = acc / tested if tested else float("nan")
            E = expected_tokens(alpha, K) if K else 1.0
            verify = costs[K + 1][0]
            loop, pred_o, pred_run = predict_run([t for ts in terms for t in ts], E, K, cfg["n_new"])
            rows.append(dict(T=T, K=K, alpha=alpha, tokens_per_round=emitted / rounds, c=c, c_halves=c_halves,
                             verify=verify, verify_halves=costs[K + 1][1:], loop=loop,
                             pred=E / (1 + K * c), pred_v=E / (K * c + verify),
                             pred_o=pred_o, pred_run=pred_run,
                             pred_by_repeat=[predict_run(ts, E, K, cfg["n_new"])[2] for ts in terms],
                             measured=statistics.median(fastest), by_repeat=by_repeat))
    probes.append(one_step_ms(target))
    for row, before, after in zip(rows, probes, probes[1:]):
        row["busy"] = busy_reasons(row["by_repeat"], row["pred_by_repeat"], before, after, measured=row["measured"])
    return rows, probes, costs


def report(rows, probes, costs, device, cfg, load_before) -> list[str]:
    cpu = torch.cuda.get_device_name() if device.type == "cuda" else cpu_name()
    lines = [f"device: {device} ({cpu}); torch {torch.__version__}, {torch.get_num_threads()} torch threads "
             f"on {len(os.sched_getaffinity(0))} usable cores; load average before the run {load_before:.2f}, "
             f"after {os.getloadavg()[0]:.2f}",
             f"{cfg['n_new']} new tokens, {len(cfg['prompts'])} prompts, {cfg['repeats']} repeats per prompt "
             f"(fastest kept, median over prompts); (n%) = spread of the same estimate over repeats "
             f"(speedup: each repeat; c and verify: each half of {cfg['cost_repeats']} repeats), (max - min) / median",
             "timed alone (the course's definition, `specdec.timing.step_costs`): c and verify(K+1); timed inside the "
             "loops (`specdec.practice.loop_costs`, separate runs with every model call timed): c (draft time per "
             "draft pass), verify, the own work b of a round and s of a plain step, in plain steps' target passes; "
             "o = (K c + verify + b) / (1 + s) - (K c + verify), a round's overhead in plain steps; predicted "
             "with o, a round = tokens/round x (1 + s) / (K c + verify + b); a run = the same with each run's "
             "prefill added (the prompt's pass, and the draft's in the speculative run) and n / (tokens/round) rounds",
             "", "| T | K | alpha | tokens/round | c alone | verify(K+1) alone | c / verify in the loop "
             "| own work b / s | o | predicted | predicted (verify alone) | predicted with o: a round | a run "
             "| measured | measured / predicted (a run) | measured per repeat | busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['T']:g} | {r['K']} | {r['alpha']:.3f} | {r['tokens_per_round']:.2f} | "
                     f"{r['c']:.3f} ({spread(r['c_halves']):.0%}) | {r['verify']:.2f} ({spread(r['verify_halves']):.0%}) | "
                     f"{r['loop']['c']:.3f} / {r['loop']['verify']:.2f} | "
                     f"{r['loop']['b']:.3f} / {r['loop']['s']:.3f} | {r['loop']['o']:.3f} | "
                     f"{r['pred']:.2f}x | {r['pred_v']:.2f}x | {r['pred_o']:.2f}x | {r['pred_run']:.2f}x | "
                     f"{r['measured']:.2f}x | {r['measured'] / r['pred_run']:.2f} | "
                     f"{min(r['by_repeat']):.2f}..{max(r['by_repeat']):.2f}x ({spread(r['by_repeat']):.0%}) | "
                     f"{'; '.join(r['busy'])} |")
    drift = run_drift(probes)
    lines += ["", f"one plain decoding step (a cached one-position target pass), timed before every row and at the end: "
                  f"{probes[0]:.2f} ms at the start, {probes[-1]:.2f} ms at the end, {min(probes):.2f}..{max(probes):.2f} ms "
                  f"over {len(probes)} probes: drift {drift:.0%}",
              f"busy-machine rule: a row is marked when the same figure measured twice disagrees by more than "
              f"{BUSY:.0%} (its speedup measured, or predicted, in each repeat; or the speedup quoted, from each run's "
              f"fastest repeat, against one repeat's) or the one-step cost just before vs "
              f"just after the row differs by more than {PULSE:.0%}; the run is too busy when more than "
              f"{TOO_MANY:.0%} of its rows are marked.", alone_note(costs)]
    lines.append(ratio_line(rows))
    lines.append(run_verdict(rows))
    return lines


def run_verdict(rows, too_many: float = TOO_MANY) -> str:
    """One line: whether the run's figures can be quoted (at most `too_many` of the rows marked)."""
    busy_rows = [r for r in rows if r["busy"]]
    named = ", ".join(f"T={r['T']:g} K={r['K']}" for r in busy_rows)
    if len(busy_rows) > too_many * len(rows):
        return (f"MACHINE TOO BUSY for these figures to mean much: {len(busy_rows)} of {len(rows)} rows fail the "
                f"rule ({named}). Rerun on a quiet machine before quoting them.")
    if busy_rows:
        return f"quiet enough: {len(busy_rows)} of {len(rows)} rows fail the rule ({named}); quote only the others."
    return "quiet: every row passes the busy-machine rule."


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
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 K values, 2 prompts, 32 new tokens")
    args = ap.parse_args(argv)
    device, cfg = torch.device(args.device), QUICK if args.quick else FULL
    tag = f"{device.type}{'-quick' if args.quick else ''}"
    load_before = os.getloadavg()[0]
    torch.manual_seed(0)
    target, draft = load("target", device), load("draft", device)
    for _ in range(2):  # warm up kernels and allocators
        speculate(target, DraftModel(draft), encode(PROMPTS[0]), 32, 4, 1.0)
    rows, probes, costs = measure(target, draft, device, cfg)
    text = "\n".join(report(rows, probes, costs, device, cfg, load_before))
    print(text)
    (OUT / f"results-{tag}.md").write_text(text + "\n")
    plot(rows, device, tag)
    print(summary(rows))


def limit_ratio(rows, T: float) -> tuple[float, dict, dict]:
    """(ratio, best row, limit row) at temperature T: the best measured speedup over the pair's limit
    without round overhead on the same run, the largest prediction from c and verify timed alone with
    o = 0 (`pred_v`, over every K). 1 would mean the loop's own work costs nothing."""
    at_T = [r for r in rows if r["T"] == T]
    best = max(at_T, key=lambda r: r["measured"])
    limit = max(at_T, key=lambda r: r["pred_v"])
    return best["measured"] / limit["pred_v"], best, limit


def ratio_line(rows) -> str:
    """How close the best measured speedup comes to the no-overhead limit, per temperature."""
    parts = []
    for T in TEMPS:
        ratio, best, limit = limit_ratio(rows, T)
        parts.append(f"T={T:g}: best measured {best['measured']:.2f}x (K={best['K']}) / limit {limit['pred_v']:.2f}x "
                     f"(K={limit['K']}) = {ratio:.2f}")
    return ("best measured speedup over the pair's limit without round overhead (c and verify timed alone, o = 0, "
            "the largest over K): " + "; ".join(parts))


def summary(rows) -> str:
    """The last line: best speedups, their ratio to the no-overhead limit, o, and measured / predicted over the
    unmarked rows with K > 0 (band and median): with the loop's own terms and o (a run), and with c and verify
    timed alone, without o."""
    quiet = [r for r in rows if r["K"] > 0 and not r["busy"]]
    best = {T: max((r for r in rows if r["T"] == T), key=lambda r: r["measured"]) for T in TEMPS}
    k0 = [r for r in rows if r["K"] == 0]
    line = (f"best speedup {best[0.0]['measured']:.2f}x at K={best[0.0]['K']} (T=0), "
            f"{best[1.0]['measured']:.2f}x at K={best[1.0]['K']} (T=1), of the no-overhead limit "
            + "/".join(f"{limit_ratio(rows, T)[0]:.2f}" for T in TEMPS) + "; K=0 loop "
            + "/".join(f"{r['measured']:.2f}x" for r in k0) + " of plain; ")
    if not quiet:
        return line + "every row with K > 0 is marked busy"
    with_o = [r["measured"] / r["pred_run"] for r in quiet]
    without = [r["measured"] / r["pred_v"] for r in quiet]
    return line + (f"o {min(r['loop']['o'] for r in quiet):.3f}..{max(r['loop']['o'] for r in quiet):.3f}; "
                   f"measured/predicted with o (a run) in "
                   f"[{min(with_o):.2f}, {max(with_o):.2f}], median {statistics.median(with_o):.3f} (with c and verify timed alone, "
                   f"without o: "
                   f"[{min(without):.2f}, {max(without):.2f}], median {statistics.median(without):.3f}) over the "
                   f"{len(quiet)} unmarked rows with K > 0")


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
        ax.plot(Ks, [r["pred_v"] for r in rs], ":", label="formula, verify cost timed alone")
        ax.plot(Ks, [r["pred_run"] for r in rs], "-.", label="with the loop's own costs and o (a run)")
        ax.set_xlabel("draft length K")
        ax.set_title(f"T = {T:g}, {device.type}, c = draft/target time")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("speedup over plain target decoding")
    fig.tight_layout()
    fig.savefig(OUT / f"results-{tag}.png", dpi=90)


if __name__ == "__main__":
    main()
