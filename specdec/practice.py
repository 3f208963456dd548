"""Notebook 05's measurements, on the course's engine (`specdec.engine`) and timer (`specdec.timing`).

- `compare`: speculative decoding with each proposer and schedule against plain decoding of the
  same target, end to end, side by side: alpha, tokens per round, mean K, speedup, counters;
- `vllm_counters`: a run's totals under vLLM's counter names;
- `head_agreement`: how often each self-drafting head guesses right offline;
- `loop_costs` and `round_overhead`: the round-cost model's terms (c, verify, the per-round
  overhead o) timed inside the engine's loops (`make bench` and section 7).
The engine's proposers and loops are re-exported so that the notebook imports from one place;
`pass_costs`, `cached_verify_costs` and `draft_cost` are the notebook's names for
`specdec.timing.step_costs`, the one definition of c and verify(k); `pass_times` gives the
absolute seconds behind `pass_costs` (the roofline fit of section 3 needs seconds, not ratios)
and `pass_ratios` turns them into the same costs.

Deliberately absent: prompt lookup itself. `PromptLookup(fn, n)` takes the lookup function as an
argument, and notebook 05 passes the learner's `ngram_propose`.
"""
from __future__ import annotations

import statistics

import numpy as np
import torch

from specdec.engine import MAX_ADAPTIVE_K, DraftModel, Heads, PromptLookup, plain, speculate  # noqa: F401
from specdec.timing import capped_repeats, costs_from, step_costs, step_times, timed  # noqa: F401


def vllm_counters(stats: dict) -> dict:
    """The totals of a `speculate` run under vLLM's counter names: num_drafts (rounds that proposed
    at least one draft; vLLM records nothing for a round without drafts), num_draft_tokens
    (drafts proposed) and num_accepted_tokens (drafts accepted)."""
    return dict(num_drafts=stats["draft_rounds"], num_draft_tokens=stats["proposed"],
                num_accepted_tokens=stats["accepted"])


def compare(target, proposers: dict, workloads: dict, n: int, K: int = 4, schedules: dict | None = None,
            temperature: float = 0.0, repeats: int = 3) -> list[dict]:
    """Speculative decoding with each proposer (and each schedule, {name: dict(K=..., adapt=...)})
    on each workload {name: prompt ids}, timed side by side with plain cached decoding of the same
    target: fastest of `repeats` runs each (capped at one while grading: specdec.timing.capped_repeats).
    Rows: workload, proposer, schedule, alpha (accepted / tested drafts), tokens_per_round, mean_K,
    speedup, and stats (the counters of `speculate`, from the last run; at temperature 0 every run
    gives the same)."""
    schedules = schedules or {f"K={K}": dict(K=K)}
    rows = []
    for wname, prompt in workloads.items():
        for pname, proposer in proposers.items():
            for sname, kwargs in schedules.items():
                t_plain = t_spec = float("inf")
                for r in range(capped_repeats(repeats)):
                    gen = torch.Generator(device=target.device).manual_seed(r)
                    t_plain = min(t_plain, timed(lambda: plain(target, prompt, n, temperature, gen), target.device)[0])
                    gen = torch.Generator(device=target.device).manual_seed(r)
                    secs, (_, st) = timed(lambda: speculate(target, proposer, prompt, n, temperature=temperature,
                                                            generator=gen, **kwargs), target.device)
                    t_spec = min(t_spec, secs)
                tested = st["accepted"] + st["rejected"]
                rows.append(dict(workload=wname, proposer=pname, schedule=sname,
                                 alpha=st["accepted"] / tested if tested else float("nan"),
                                 tokens_per_round=(st["accepted"] + st["rounds"]) / st["rounds"],
                                 mean_K=statistics.fmean(st["K_used"]), speedup=t_plain / t_spec, stats=st))
    return rows


def pass_times(target, positions=range(1, 10), batches=(1,), repeats: int = 9) -> dict:
    """{(batch, k): seconds}: the fastest of `repeats` interleaved plain calls over k positions of
    `batch` sequences, no context, no cache (`step_times` with cached=False; k = 1 always included)."""
    out = {}
    for b in batches:
        times = step_times(target, positions=positions, context=0, batch=b, cached=False, repeats=repeats)
        out.update({(b, k): min(ts) for (_, k), ts in times.items()})
    return out


def pass_ratios(seconds: dict) -> dict:
    """{(batch, k): verify(k) at that batch} from `pass_times`: each time over the 1-position time of
    its batch, the ratio of fastest times that `specdec.timing.costs_from` defines."""
    return {(b, k): t / seconds[(b, 1)] for (b, k), t in seconds.items()}


def pass_costs(target, positions=range(1, 10), batches=(1,), repeats: int = 9) -> dict:
    """{(batch, k): verify(k) at that batch}: plain calls over k positions, no context, no cache
    (`step_costs` with cached=False): how the verification cost grows with positions and batch."""
    return pass_ratios(pass_times(target, positions, batches, repeats))


def cached_verify_costs(target, positions=range(1, 10), context: int = 120, repeats: int = 7) -> dict:
    """{k: verify(k)}: cached passes over k new positions after `context` (`step_costs`), what `speculate` pays."""
    return step_costs(target, positions=positions, context=context, repeats=repeats)


def draft_cost(target, draft, repeats: int = 20, context: int = 100) -> float:
    """c: a cached one-position draft pass / the same target pass, after `context` (`step_costs`)."""
    return step_costs(target, draft, positions=(1,), context=context, repeats=repeats)["c"]


@torch.no_grad()
def head_agreement(target, heads, prompt, n: int) -> list[float]:
    """Offline, unconditional accuracy of each self-drafting head: on the target's own greedy
    continuation of `prompt` (n tokens), the fraction of positions t where head k's argmax on
    the hidden state h_t equals the token k+1 places after the one h_t predicts."""
    seq = torch.cat([prompt.to(target.device), plain(target, prompt, n).to(target.device)])
    _, h = target(seq[None], hidden=True)
    guesses = heads(h[0], target.head).argmax(-1)  # (T, n_heads)
    start = len(prompt) - 1  # from the state that predicted the first new token on
    out = []
    for k in range(guesses.shape[1]):
        offset = k + 2  # head k (0-based) at position t guesses token t + k + 2
        rows = range(start, len(seq) - offset)
        out.append(float(sum(int(guesses[t, k]) == int(seq[t + offset]) for t in rows) / len(rows)))
    return out


def loop_costs(target, draft, prompt, n: int, K: int, temperature: float = 0.0, seed: int = 0,
               repeats: int = 2) -> dict:
    """The round-cost model's terms for `speculate` with the draft model, measured inside the loops
    they describe (`specdec.timing.loop_work`: plain decoding and the speculative loop, each run
    with every model call timed; the fastest of `repeats` runs each, same seed): all in units of
    `unit`, the seconds of a plain step's target pass (the mean over the plain run, prefill left out):
    - s: a plain step's own work (sampling, Python), so a plain step costs 1 + s;
    - c: the draft's time per draft pass (after a round that accepted every draft the first pass
      also feeds the last draft, so this is a little above a one-token pass), the draft's prefill
      left out;
    - verify: the verification pass; b: a round's own work (sampling, the acceptance test, rollback,
      the read back to the host, Python), so a round costs K c + verify + b;
    - o = (K c + verify + b) / (1 + s) - (K c + verify) (`specdec.timing.per_round_overhead`, the
      course's one definition): what a round costs beyond K c + verify, in plain steps, so a round
      costs K c + verify + o plain steps; its own work minus a plain step's for the same passes;
    - prefill_plain, prefill_spec: what each run pays once, before its steps or rounds: the target's
      pass over the prompt, and in the speculative run the draft's too (its first call, which also
      drafts, less one draft pass).
    Also "rounds". K = 0: the engine's round is a plain step (c nan, verify 1, b = s, o = 0).
    None of it uses the time of a whole run, so none of it is fitted to the speedup."""
    from specdec.timing import loop_work, per_round_overhead

    device = target.device
    gen = lambda: torch.Generator(device=device).manual_seed(seed)  # noqa: E731
    base = loop_work(lambda t, d: plain(t, prompt, n, temperature, gen()), target, draft, repeats, device)
    steps = base["target"][1:]  # the first call is the prompt's prefill
    unit = statistics.fmean(sec for _, sec in steps)
    s = base["own"] / n / unit
    prefill_plain = base["target"][0][1] / unit
    if K == 0:
        return dict(unit=unit, s=s, c=float("nan"), verify=1.0, b=s, o=0.0, rounds=n,
                    prefill_plain=prefill_plain, prefill_spec=prefill_plain)
    stats = {}

    def run(t, d):
        out, stats["st"] = speculate(t, DraftModel(d), prompt, n, K, temperature, gen())
        return out

    spec = loop_work(run, target, draft, repeats, device)
    rounds = stats["st"]["rounds"]
    passes = K * rounds - 1  # the draft's first call is its prefill (with its first draft)
    c = sum(sec for _, sec in spec["draft"][1:]) / passes / unit if passes else float("nan")
    verify = statistics.fmean(sec for _, sec in spec["target"][1:]) / unit
    b = spec["own"] / rounds / unit
    prefill_spec = (spec["target"][0][1] + spec["draft"][0][1]) / unit - c
    return dict(unit=unit, s=s, c=c, verify=verify, b=b, o=per_round_overhead(K * c + verify, b, s),
                rounds=rounds, prefill_plain=prefill_plain, prefill_spec=prefill_spec)


def round_overhead(target, draft, prompt, Ks, n: int = 64, temperature: float = 0.0, seed: int = 0) -> np.ndarray:
    """o for each K of Ks, in plain decoding steps (`loop_costs`: what a round costs beyond K c + verify,
    its own work timed inside the loop minus a plain step's own work for the same passes); 0 for K = 0
    (the engine's K = 0 round is a plain step)."""
    return np.array([loop_costs(target, draft, prompt, n, int(K), temperature, seed)["o"] for K in Ks])
