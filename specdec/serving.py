"""A small, seeded discrete-event simulation of a continuous-batching server that may speculate
(notebook 07, section 4), and the pass times it runs on (`PassTime`).

Requests arrive as a Poisson process at `rate` per second. Each brings a prompt (its context to
start with; its prefill is not modelled: it is paid once per request, with or without speculation)
and wants `output_tokens` tokens. The server runs steps back to back; every request that has
arrived by the start of a step joins it, up to `max_batch` (continuous batching: a request joins or
leaves at any step boundary). At each step the server picks K with `choose_K(B, context)` for the
B requests in the batch and their mean context (0: plain decoding), and the step takes
`step_time(B, K, context)` seconds: the K draft passes, one verification pass over B(K+1)
positions and the per-round overhead, all as the caller's cost model says. Each request then gains
1 + A tokens, A = the accepted drafts of a round, drawn independently per request from the
truncated geometric law of notebook 01: P(A >= k) = alpha^k for k <= K; its context grows by as
much. A plain step leaves the draft behind (it never saw those tokens); with `catch_up` given, the
next speculative step first pays the draft's pass over what it missed. A request finishes at the
end of the step in which it has its tokens; its latency is that time minus its arrival.

`simulate` returns the mean and 99th-percentile latency, the throughput, the mean K the policy
used, the mean context and the share of time spent catching up. Everything random comes from one
numpy Generator seeded by `seed`, so a run is reproducible and two policies compared with the same
seed see the same arrivals, prompts and acceptance draws per request and step order (common
random numbers).

What it leaves out: prefill, memory limits on the batch other than `max_batch` (a KV cache that
fills up, preemption), and acceptance that varies by request or position.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from specdec.madeby import MadeBy, register


class PassTime:
    """Seconds of one pass of a model over `batch` rows that each score `tokens` new positions after
    `context` cached positions: `t(batch, tokens, context)`, the first three arguments of notebook
    05's `roofline_time`. With n = batch * tokens positions scored in all (rounded up to a multiple
    of `tile` when given: kernels that work in tiles, CUDA graphs captured for padded batch sizes):

        fixed + table(n) + max(floor + per_cached * batch * context,  per_position * n + per_pair * n * context)

    the larger of a bytes time (the weights, `floor`, and every row's cache, `per_cached` seconds a
    cached position) and a flops time (`per_position` a scored position, `per_pair` for each scored
    position's attention to one cached position), plus a launch cost `fixed`, plus `table(n)`, a
    measured time interpolated linearly between `knots` ("n:seconds n:seconds ...", extended by the
    last slope). A flat pass (floor), a compute-bound one (per_position), the roofline with the
    cache (all four), an affine one, a step-shaped one (tile) or a measured one (knots).

    Callable, and made by a factory of `specdec.madeby.factories`, so a checker's pass-time model can
    cross to the learner's kernel while grading (coursekit.judge.wire) as a description, never as
    code: its arguments are plain numbers and one string."""

    def __init__(self, floor: float = 0.0, per_position: float = 0.0, fixed: float = 0.0, per_cached: float = 0.0,
                 per_pair: float = 0.0, tile: int = 0, knots: str = ""):
        self.floor, self.per_position, self.fixed = float(floor), float(per_position), float(fixed)
        self.per_cached, self.per_pair = float(per_cached), float(per_pair)
        self.tile, self.knots = int(tile), str(knots)
        points = sorted((float(n), float(s)) for n, s in (kv.split(":") for kv in self.knots.split()))
        self._n = np.array([p[0] for p in points])
        self._s = np.array([p[1] for p in points])
        self._slope = (float((self._s[-1] - self._s[-2]) / (self._n[-1] - self._n[-2]))
                       if len(points) > 1 else 0.0)
        args = {k: v for k, v in (("floor", self.floor), ("per_position", self.per_position), ("fixed", self.fixed),
                                  ("per_cached", self.per_cached), ("per_pair", self.per_pair), ("tile", self.tile),
                                  ("knots", self.knots)) if v}
        self.made_by = MadeBy("pass_time", args)

    def __call__(self, batch, tokens=1, context=0) -> float:
        batch, context = float(batch), float(context)
        n = batch * float(tokens)
        if self.tile:
            n = math.ceil(n / self.tile - 1e-9) * self.tile
        table = 0.0
        if len(self._n):
            table = (float(np.interp(n, self._n, self._s)) if n <= self._n[-1]
                     else float(self._s[-1] + self._slope * (n - self._n[-1])))
        memory = self.floor + self.per_cached * batch * context
        compute = self.per_position * n + self.per_pair * n * context
        return self.fixed + table + max(memory, compute)

    @classmethod
    def roofline(cls, params: float, kv_bytes_per_token: float, attn_flops_per_pair: float, bandwidth: float,
                 flops: float, bytes_per_param: float = 2.0) -> "PassTime":
        """Notebook 05's roofline for one model on one device: its weights and every row's cache
        read once per pass, 2 flops per parameter per scored position plus its attention to each
        cached position."""
        return cls(floor=params * bytes_per_param / bandwidth, per_cached=kv_bytes_per_token / bandwidth,
                   per_position=2 * params / flops, per_pair=attn_flops_per_pair / flops)

    def __repr__(self) -> str:
        return "PassTime(" + ", ".join(f"{k}={v!r}" for k, v in self.made_by.kwargs) + ")"

    def __eq__(self, other) -> bool:
        return isinstance(other, PassTime) and self.made_by == other.made_by

    def __hash__(self) -> int:
        return hash(self.made_by)


register("pass_time", PassTime)


@dataclass
class Served:
    """What one simulated run measured."""
    rate: float  # requests per second offered
    mean_latency: float  # seconds
    p99_latency: float  # seconds
    throughput: float  # tokens per second delivered while requests were in the system
    mean_K: float  # the K the policy chose, averaged over steps
    mean_batch: float  # requests per step, averaged over steps
    steps: int
    mean_context: float = 0.0  # cached positions per row (prompt plus what it generated), averaged over steps
    catch_up: float = 0.0  # share of the busy time spent letting the draft catch up after plain steps


def accepted_drafts(rng: np.random.Generator, alpha: float, K: int, n: int) -> np.ndarray:
    """n draws of the accepted drafts of one round: min(K, the number of successes before the first
    failure), successes with probability alpha (notebook 01's truncated geometric law)."""
    if K <= 0 or n == 0:
        return np.zeros(n, dtype=np.int64)
    if alpha >= 1.0:
        return np.full(n, K, dtype=np.int64)
    if alpha <= 0.0:
        return np.zeros(n, dtype=np.int64)
    return np.minimum(rng.geometric(1.0 - alpha, size=n) - 1, K)


def simulate(rate: float, step_time: Callable[[int, int, float], float], choose_K: Callable[[int, float], int],
             alpha: float, output_tokens: int = 128, requests: int = 2000, max_batch: int = 256, seed: int = 0,
             warmup: int = 200, prompt_tokens: int | tuple[int, int] = 0,
             catch_up: Callable[[int, int, float], float] | None = None) -> Served:
    """Serve `requests` Poisson arrivals at `rate` per second; latencies of all but the first
    `warmup` requests (the server starts empty) go into the mean and the p99.

    Each request's context is its prompt (`prompt_tokens`: a number, or (low, high) for a length
    drawn uniformly per request) plus what it has generated; a step of B rows with K drafts takes
    `step_time(B, K, context)` seconds at the batch's mean context (exact for pass times linear in
    every row's context, as the roofline's are) and `choose_K(B, context)` picks its K.
    `catch_up(rows, tokens, context)`: the seconds of the draft's pass over the tokens it skipped.
    A plain step (K = 0) does not run the draft, so its rows' tokens are missing from the draft's
    cache; the next step that speculates first feeds the draft every lagging row's missing tokens
    in one pass (rows padded to the longest lag) and pays that pass. None: switching is free."""
    if rate <= 0 or requests <= warmup:
        raise ValueError("rate must be positive and requests more than warmup")
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=requests))
    if isinstance(prompt_tokens, tuple):
        prompts = rng.integers(prompt_tokens[0], prompt_tokens[1] + 1, size=requests)
    else:
        prompts = np.full(requests, int(prompt_tokens), dtype=np.int64)
    remaining = np.full(requests, output_tokens, dtype=np.int64)
    context = prompts.astype(np.int64)
    lag = np.zeros(requests, dtype=np.int64)  # tokens the draft has not been fed
    finished = np.full(requests, np.nan)
    active: list[int] = []
    nxt, t, steps, k_sum, b_sum, ctx_sum, tokens, caught = 0, 0.0, 0, 0, 0, 0.0, 0, 0.0
    while nxt < requests or active:
        while nxt < requests and arrivals[nxt] <= t and len(active) < max_batch:
            active.append(nxt)
            nxt += 1
        if not active:  # idle until the next arrival
            t = float(arrivals[nxt])
            continue
        B = len(active)
        idx = np.asarray(active)
        mean_ctx = float(context[idx].mean())
        K = max(0, int(choose_K(B, mean_ctx)))
        if K and catch_up is not None and lag[idx].any():
            behind = idx[lag[idx] > 0]
            extra = float(catch_up(len(behind), int(lag[behind].max()), mean_ctx))
            t += extra
            caught += extra
        if K:
            lag[idx] = 0
        t += float(step_time(B, K, mean_ctx))
        gained = np.minimum(1 + accepted_drafts(rng, alpha, K, B), remaining[idx])
        tokens += int(gained.sum())
        remaining[idx] -= gained
        context[idx] += gained
        if not K:
            lag[idx] += gained
        done = idx[remaining[idx] <= 0]
        finished[done] = t
        active = [i for i in active if remaining[i] > 0]
        steps += 1
        k_sum += K
        b_sum += B
        ctx_sum += mean_ctx
    latency = (finished - arrivals)[warmup:]
    busy = t - float(arrivals[0])
    return Served(rate=rate, mean_latency=float(latency.mean()), p99_latency=float(np.percentile(latency, 99)),
                  throughput=tokens / busy if busy > 0 else float("nan"), mean_K=k_sum / max(steps, 1),
                  mean_batch=b_sum / max(steps, 1), steps=steps, mean_context=ctx_sum / max(steps, 1),
                  catch_up=caught / busy if busy > 0 else 0.0)


def sweep(rates, step_time, policies: dict[str, Callable[[int], int]], alpha: float, **kw) -> dict[str, list[Served]]:
    """Each policy at each rate, with the same seed (the same arrivals) for all policies."""
    return {name: [simulate(r, step_time, choose, alpha, **kw) for r in rates] for name, choose in policies.items()}


def crossover(rates, worse: list[Served], better: list[Served], key: str = "mean_latency") -> float | None:
    """The first rate at which `worse` (e.g. fixed-K speculation) has a higher `key` than `better`
    (e.g. no speculation), interpolated linearly between the two rates around the sign change;
    None if it never does in `rates`."""
    diff = [getattr(w, key) - getattr(b, key) for w, b in zip(worse, better)]
    for i, d in enumerate(diff):
        if d > 0:
            if i == 0:
                return float(rates[0])
            r0, r1, d0 = float(rates[i - 1]), float(rates[i]), diff[i - 1]
            return r0 + (r1 - r0) * (-d0) / (d - d0)
    return None


def batch_pass_times(target, draft, batches=(1, 4, 16), positions=range(1, 10), contexts=(8, 192),
                     repeats: int = 5) -> dict:
    """Seconds of one cached pass at each batch size: {("target", B, T, L): s} for T new positions per
    row after L cached ones and {("draft", B, 1, L): s} for the draft's one-position pass; every
    (B, T) at the first context of `contexts`, the smallest and largest T (and the draft's pass) at
    the others, which is what `measured_pass_time` needs to fit the context's cost. The cached text
    is specdec.timing.COST_TEXT, rolled back before each call; the fastest of `repeats` interleaved
    repeats (specdec.timing.fastest, capped at one while grading)."""
    import torch

    from specdec.model import encode
    from specdec.timing import COST_TEXT, capped_repeats, fastest

    device = target.device
    positions = tuple(positions)
    ids = encode(COST_TEXT)[: max(contexts) + max(positions)].to(device)
    fns = {}
    for B in batches:
        rows = ids[None].expand(B, -1)
        for L in contexts:
            shapes = positions if L == contexts[0] else sorted({min(positions), max(positions)})
            for name, model in (("target", target), ("draft", draft)):
                cache = model.new_batch_cache(B)
                with torch.no_grad():
                    model.extend_batch(rows[:, :L], cache)
                for T in (shapes if name == "target" else (1,)):
                    def run(model=model, cache=cache, T=T, rows=rows, L=L):
                        cache.rollback(torch.full((rows.shape[0],), L, device=device))
                        with torch.no_grad():
                            return model.extend_batch(rows[:, L:L + T], cache)
                    fns[(name, B, T, L)] = run
    return fastest(fns, capped_repeats(repeats), device)


def measured_pass_time(times: dict, name: str = "target") -> PassTime:
    """A `PassTime` read off `batch_pass_times`, in the roofline's shape (notebook 05):
    t(batch, tokens, context) = table(n) + max(per_cached * batch * context, per_pair * n * context).
    table(n): the time at the first context L0 as a function of the positions scored in all (batch x
    new positions per row), interpolated between the measured points and extended by the last slope.
    The context's cost is fitted from the other contexts: `per_cached`, a cost per row and cached
    position whatever the row scores (reading the cache), from the one-position passes; `per_pair`, a
    cost per scored and cached position pair (attention's arithmetic), from the widest passes; each the
    median over the batches of (t(L) - t(L0)) / (L - L0) over batch (or n), at least 0. On a CPU the
    first dominates while rows score few positions. The table is shifted to context 0."""
    mine = {(B, T, L): s for (m, B, T, L), s in times.items() if m == name}
    L0 = min(L for _, _, L in mine)
    grown = [(B, T, (s - mine[(B, T, L0)]) / (L - L0)) for (B, T, L), s in mine.items()
             if L != L0 and (B, T, L0) in mine]
    T_max = max((T for _, T, _ in grown), default=1)
    per_cached = max(float(np.median([g / B for B, T, g in grown if T == 1])), 0.0) if grown else 0.0
    wide = [g / (B * T) for B, T, g in grown if T == T_max and T > 1]
    per_pair = max(float(np.median(wide)), 0.0) if wide else 0.0

    def context_cost(B, T, L):
        return max(per_cached * B * L, per_pair * B * T * L)

    pts = sorted((B * T, s - context_cost(B, T, L0)) for (B, T, L), s in mine.items() if L == L0)
    n = np.array([p[0] for p in pts], dtype=float)
    s = np.maximum.accumulate(np.array([p[1] for p in pts], dtype=float))  # a pass never gets cheaper with more work
    n, keep = np.unique(n, return_index=True)
    s = np.maximum.accumulate(s[keep])
    return PassTime(per_cached=per_cached, per_pair=per_pair, knots=" ".join(f"{a:g}:{b:.6g}" for a, b in zip(n, s)))


def batch_round_overhead(batched_generate, target, draft, prompts, K: int, new_tokens: int, repeats: int = 2) -> dict:
    """The per-round overhead o of a batched loop, in seconds, with notebook 05's meaning: what a round
    costs beyond its passes and beyond a plain step's own work. `batched_generate(target, draft,
    prompts, K, new_tokens)` runs twice under `specdec.timing.loop_work` (every model call timed
    apart): with K = 0 (its plain step: t, the target pass of a step, and s, the step's own work) and
    with K (P, a round's passes, target and draft, and b, its own work: sampling, acceptance,
    rollbacks, host reads, Python). A round costs (P + b) / (t + s) plain steps, so
    o = (P + b) t / (t + s) - P seconds: a step of the goodput model, P + o, over a plain one, t, is
    then the loop's own ratio. Rounds are the target's calls over K + 1 positions a row (the rest are
    prefills); the draft's calls over one or two positions are its passes. Prefill's own work is
    spread over the rounds."""
    from specdec.timing import loop_work, per_round_overhead

    device = target.device
    work = {k: loop_work(lambda t, d, k=k: batched_generate(t, d, prompts, k, new_tokens), target, draft, repeats,
                         device) for k in (0, K)}
    plain_steps = [sec for n, sec in work[0]["target"] if n == 1]
    rounds = [sec for n, sec in work[K]["target"] if n == K + 1]
    drafts = [sec for n, sec in work[K]["draft"] if n <= 2]
    if not plain_steps or not rounds:
        raise ValueError("no plain steps or no rounds found among the target's calls")
    t = float(np.mean(plain_steps))
    s = work[0]["own"] / len(plain_steps)
    P = (sum(rounds) + sum(drafts)) / len(rounds)
    b = work[K]["own"] / len(rounds)
    # notebook 05's o, in plain steps, from the same function as 04, 05 and make bench; here in seconds
    return dict(t=t, s=s, P=P, b=b, rounds=len(rounds), o=t * per_round_overhead(P / t, b / t, s / t))
