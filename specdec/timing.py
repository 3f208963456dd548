"""One way to time, and one definition of the costs the speedup formula needs (notebooks 04, 05, `make bench`).

`interleaved(fns, repeats)` times every function once per repeat, in an order that rotates from
repeat to repeat, and synchronises the GPU before the clock starts and before it stops (a timer
must measure work, not kernel launches). A function's cost is its FASTEST time: other work on the
machine only ever adds time. Costs are ratios of those minima.

`step_costs` defines, once, the two ratios of the speedup formula (see `step_times` for what a
step is):
    c         = time of one draft step / time of one target step (draft/target: small c = cheap draft)
    verify(k) = time of one target step scoring k positions / one scoring 1 position
so a round of K drafts costs K c + verify(K+1) plain decoding steps.

What it leaves out: pinning threads or CPU frequency, and any statistics beyond the minimum
(`make bench` adds its own spread checks on top of the raw times).

While a notebook is graded its timings only need to run, not to be precise: the grading sandbox
calls `limit_repeats(1)`. This module imports torch only when a function runs, so that call is cheap.
"""
from __future__ import annotations

import time
from typing import Callable, Hashable

COST_TEXT = "class Config:\n    def __init__(self, path):\n        self.path = path\n" * 4
_max_repeats: int | None = None


def limit_repeats(n: int | None) -> None:
    """Cap every `repeats` argument of this module at n (None: no cap)."""
    global _max_repeats
    _max_repeats = n


def capped_repeats(repeats: int) -> int:
    """`repeats`, capped by `limit_repeats` (and at least 1)."""
    return max(1, repeats if _max_repeats is None else min(repeats, _max_repeats))


def sync(device=None) -> None:
    """Wait for the GPU's queued work (no-op on CPU)."""
    import torch

    if torch.cuda.is_available() and (device is None or torch.device(device).type == "cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable, device=None):
    """(seconds, fn()) with the GPU synchronised before the clock starts and before it stops."""
    sync(device)
    t0 = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - t0, result


def interleaved(fns: dict[Hashable, Callable], repeats: int, device=None) -> dict[Hashable, list[float]]:
    """{name: [seconds of each repeat]}: each repeat times every function once, starting one
    function later than the repeat before, so slow phases of the machine hit them all alike."""
    names = list(fns)
    times = {name: [] for name in names}
    for r in range(capped_repeats(repeats)):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(timed(fns[name], device)[0])
    return times


def fastest(fns: dict[Hashable, Callable], repeats: int, device=None) -> dict[Hashable, float]:
    """{name: fastest time in seconds} over `repeats` interleaved repeats."""
    return {name: min(ts) for name, ts in interleaved(fns, repeats, device).items()}


def step_times(target, draft=None, positions=range(1, 10), context: int = 120, batch: int = 1,
               cached: bool = True, repeats: int = 9, calls: int = 1) -> dict[Hashable, list[float]]:
    """Raw interleaved times of decoding steps: {("target", k): [seconds per repeat], ("draft", 1): [...]}.

    A step is the model call that gives a decoding loop the rows of k new positions after `context`
    committed tokens (of COST_TEXT):
    - cached=True: one pass over the k new positions with `context` positions in the model's KV
      cache (rolled back before every call), batch 1: what the engine and `make bench` run;
    - cached=False: the plain call `model(ids)` over context + k positions on `batch` copies of
      the sequence: what notebook 04's loops run, and the roofline shape of notebook 05.
    Each timing covers `calls` back-to-back steps (more resolution for very short steps)."""
    import torch

    from specdec.model import encode

    ks = sorted(set(positions) | {1})
    device = target.device
    ids = encode(COST_TEXT)[None, :context + max(ks)].to(device)
    assert ids.shape[1] == context + max(ks) <= target.config.max_len, "context + positions too long"
    assert cached is False or batch == 1, "the KV cache holds one sequence"
    models = {"target": target} if draft is None else {"target": target, "draft": draft}
    caches = {}
    if cached:
        for name, model in models.items():
            caches[name] = model.new_cache()
            with torch.no_grad():
                model.extend(ids[:, :context], caches[name])

    def step(name, k):
        model = models[name]

        def run():
            with torch.no_grad():
                for _ in range(calls):
                    if cached:
                        caches[name].rollback(context)
                        out = model.extend(ids[:, context:context + k], caches[name])
                    else:
                        out = model(ids[:, :context + k].expand(batch, -1))
            return out
        return run

    shapes = [("target", k) for k in ks] + ([("draft", 1)] if draft is not None else [])
    return interleaved({shape: step(*shape) for shape in shapes}, repeats, device)


def costs_from(times: dict, part: slice = slice(None)) -> dict:
    """{"c": c (when a draft was timed), k: verify(k)} from `step_times`' raw times, using the
    repeats in `part` (the benchmark compares halves): ratios of fastest times."""
    one = min(times[("target", 1)][part])
    out = {k: min(ts[part]) / one for (name, k), ts in times.items() if name == "target"}
    if ("draft", 1) in times:
        out["c"] = min(times[("draft", 1)][part]) / one
    return out


def step_costs(target, draft=None, positions=range(1, 10), context: int = 120, batch: int = 1,
               cached: bool = True, repeats: int = 9, calls: int = 1) -> dict:
    """{"c": draft step / target step (when a draft is given), k: verify(k) for k in positions (and 1)}:
    the costs of the speedup formula, in units of one plain decoding step (see `step_times`)."""
    return costs_from(step_times(target, draft, positions, context, batch, cached, repeats, calls))
