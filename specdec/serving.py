"""A small, seeded discrete-event simulation of a continuous-batching server that may speculate
(notebook 07, section 4), and the pass times it runs on.

Requests arrive as a Poisson process at `rate` per second. Each wants `output_tokens` tokens (its
prompt's prefill is not modelled: it is paid once per request, with or without speculation). The
server runs steps back to back; every request that has arrived by the start of a step joins it,
up to `max_batch` (continuous batching: a request joins or leaves at any step boundary). At each
step the server picks K with `choose_K(B)` for the B requests in the batch (0: plain decoding),
and the step takes `step_time(B, K)` seconds: the K draft passes, one verification pass over
B(K+1) positions and the per-round overhead, all as the caller's cost model says. Each request
then gains 1 + A tokens, A = the accepted drafts of a round, drawn independently per request from
the truncated geometric law of notebook 01: P(A >= k) = alpha^k for k <= K. A request finishes at
the end of the step in which it has its tokens; its latency is that time minus its arrival.

`simulate` returns the mean and 99th-percentile latency, the throughput and the mean K the
policy used. Everything random comes from one numpy Generator seeded by `seed`, so a run is
reproducible and two policies compared with the same seed see the same arrivals and the same
acceptance draws per request and step order (common random numbers).

What it leaves out: prefill, memory limits on the batch other than `max_batch`, preemption, and
acceptance that varies by request or position.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


class PassTime:
    """Seconds of a pass that scores n positions in all: fixed + max(floor, per_position * n). A
    flat pass (floor), a compute-bound one (per_position), the roofline's shape (both) or an
    affine one (fixed and per_position). Callable, and made by a factory of
    `specdec.model.factories`, so a checker's pass-time model can cross to the learner's kernel
    while grading (coursekit.judge.wire) as a description, never as code."""

    def __init__(self, floor: float = 0.0, per_position: float = 0.0, fixed: float = 0.0):
        from specdec.model import MadeBy

        self.floor, self.per_position, self.fixed = float(floor), float(per_position), float(fixed)
        self.made_by = MadeBy("pass_time", {"floor": self.floor, "per_position": self.per_position, "fixed": self.fixed})

    def __call__(self, n) -> float:
        return self.fixed + max(self.floor, self.per_position * float(n))

    def __repr__(self) -> str:
        return f"PassTime(floor={self.floor:g}, per_position={self.per_position:g}, fixed={self.fixed:g})"


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


def simulate(rate: float, step_time: Callable[[int, int], float], choose_K: Callable[[int], int], alpha: float,
             output_tokens: int = 128, requests: int = 2000, max_batch: int = 256, seed: int = 0,
             warmup: int = 200) -> Served:
    """Serve `requests` Poisson arrivals at `rate` per second; latencies of all but the first
    `warmup` requests (the server starts empty) go into the mean and the p99."""
    if rate <= 0 or requests <= warmup:
        raise ValueError("rate must be positive and requests more than warmup")
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=requests))
    remaining = np.full(requests, output_tokens, dtype=np.int64)
    finished = np.full(requests, np.nan)
    active: list[int] = []
    nxt, t, steps, k_sum, b_sum, tokens = 0, 0.0, 0, 0, 0, 0
    while nxt < requests or active:
        while nxt < requests and arrivals[nxt] <= t and len(active) < max_batch:
            active.append(nxt)
            nxt += 1
        if not active:  # idle until the next arrival
            t = float(arrivals[nxt])
            continue
        B = len(active)
        K = max(0, int(choose_K(B)))
        t += float(step_time(B, K))
        idx = np.asarray(active)
        gained = 1 + accepted_drafts(rng, alpha, K, B)
        tokens += int(np.minimum(gained, remaining[idx]).sum())
        remaining[idx] -= gained
        done = idx[remaining[idx] <= 0]
        finished[done] = t
        active = [i for i in active if remaining[i] > 0]
        steps += 1
        k_sum += K
        b_sum += B
    latency = (finished - arrivals)[warmup:]
    busy = t - float(arrivals[0])
    return Served(rate=rate, mean_latency=float(latency.mean()), p99_latency=float(np.percentile(latency, 99)),
                  throughput=tokens / busy if busy > 0 else float("nan"), mean_K=k_sum / max(steps, 1),
                  mean_batch=b_sum / max(steps, 1), steps=steps)


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


def batch_pass_times(target, draft, batches=(1, 4, 16), positions=range(1, 10), context: int = 64,
                     repeats: int = 5) -> dict:
    """Seconds of one cached pass at each batch size: {("target", B, T): s} for T new positions per
    row and {("draft", B): s} for the draft's one-position pass, with `context` positions (of
    specdec.timing.COST_TEXT) already in every row's cache (rolled back before each call); the
    fastest of `repeats` interleaved repeats (specdec.timing.fastest, capped at one while grading)."""
    import torch

    from specdec.model import encode
    from specdec.timing import COST_TEXT, capped_repeats, fastest

    device = target.device
    ids = encode(COST_TEXT)[: context + max(positions)].to(device)
    fns = {}
    for B in batches:
        rows = ids[None].expand(B, -1)
        for name, model in (("target", target), ("draft", draft)):
            cache = model.new_batch_cache(B)
            with torch.no_grad():
                model.extend_batch(rows[:, :context], cache)
            for T in (positions if name == "target" else (1,)):
                def run(model=model, cache=cache, T=T, rows=rows):
                    cache.rollback(torch.full((rows.shape[0],), context, device=device))
                    with torch.no_grad():
                        return model.extend_batch(rows[:, context:context + T], cache)
                fns[(name, B, T) if name == "target" else (name, B)] = run
    return fastest(fns, capped_repeats(repeats), device)


def time_of_tokens(times: dict, name: str = "target") -> Callable[[float], float]:
    """A pass's seconds as a function of the positions it scores in all (batch x new positions per
    row), interpolated linearly between the measured points and extended by the last slope: the
    roofline's picture of a pass (notebook 05), read off this machine's timings."""
    if name == "target":
        pts = sorted((B * T, s) for (m, B, T), s in ((k, v) for k, v in times.items() if k[0] == "target"))
    else:
        pts = sorted((B, s) for (m, B), s in ((k, v) for k, v in times.items() if k[0] == name))
    n = np.array([p[0] for p in pts], dtype=float)
    s = np.maximum.accumulate(np.array([p[1] for p in pts], dtype=float))  # a pass never gets cheaper with more work
    n, keep = np.unique(n, return_index=True)
    s = np.maximum.accumulate(s[keep])
    slope = (s[-1] - s[-2]) / (n[-1] - n[-2]) if len(n) > 1 else 0.0

    def seconds(tokens: float) -> float:
        tokens = float(tokens)
        if tokens <= n[-1]:
            return float(np.interp(tokens, n, s))
        return float(s[-1] + slope * (tokens - n[-1]))
    return seconds
