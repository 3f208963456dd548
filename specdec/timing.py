"""One way to time, and one definition of the costs the speedup formula needs (notebooks 04, 05, `make bench`).

`interleaved(fns, repeats)` times every function once per repeat, in an order that rotates from
repeat to repeat, and synchronises the GPU before the clock starts and before it stops (a timer
must measure work, not kernel launches). A function's cost is its FASTEST time: other work on the
machine only ever adds time. Costs are ratios of those minima.

`step_costs` defines, once, the two ratios of the speedup formula (see `step_times` for what a
step is):
    c         = time of one draft step / time of one target step (draft/target: small c = cheap draft)
    verify(k) = time of one target step scoring k positions / one scoring 1 position
so a round of K drafts costs K c + verify(K+1) plain decoding steps, plus the per-round overhead o.
`per_round_overhead` defines o, once, for notebooks 02, 04 and 05 and `make bench`: what a round costs
beyond K c + verify(K+1), in plain steps; the round's own work (sampling, the acceptance test,
rollbacks, host reads, Python) minus the own work a plain step would do for the same passes. It is
0 for plain decoding and can be negative. `loop_work` times the own work on the loop itself, as it
runs, with every model call timed apart, and `explain_speedup` turns a measured speedup and the
predictions without and with o into sentences that name the cause (notebook 04).

What it leaves out: pinning threads or CPU frequency, and any statistics beyond the minimum
(`make bench` adds its own spread checks on top of the raw times).

While a notebook is graded its timings only need to run, not to be precise: the grading sandbox
starts every kernel with COURSE_TIMING_REPEATS=1 in its environment (coursekit.settings), which
caps every `repeats` of this module at one. This module imports torch only when a function runs.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Hashable

COST_TEXT = "class Config:\n    def __init__(self, path):\n        self.path = path\n" * 4
_max_repeats: int | None = None
REPEATS_VARIABLE = "COURSE_TIMING_REPEATS"  # declared in coursekit.settings (TIMING_REPEATS), set while grading


def limit_repeats(n: int | None) -> None:
    """Cap every `repeats` argument of this module at n (None: no cap)."""
    global _max_repeats
    _max_repeats = n


def capped_repeats(repeats: int) -> int:
    """`repeats`, capped by `limit_repeats` or else by COURSE_TIMING_REPEATS (and at least 1)."""
    cap = _max_repeats
    if cap is None and os.environ.get(REPEATS_VARIABLE, "").isdigit():
        cap = int(os.environ[REPEATS_VARIABLE])
    return max(1, repeats if cap is None else min(repeats, cap))


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


# ------------------------------------------------------------------ the per-round overhead o
#
# A round of speculative decoding costs K draft passes, one verification pass and the loop's own
# work around them (sampling, the acceptance test, rollbacks, reading results back to the host,
# Python): b; a plain step's own work is s. `loop_work` times that work on the loop itself, as it
# runs: every model call is timed, and what is left of the loop's time is its own work. It never
# uses the loop's speedup. `per_round_overhead` turns b and s into o.
# (Until 2026-12-05 the course replayed the loop on recorded logits, with no passes. On the course's
# 2-core VM that replay timed a round's own work at about a third of what the same work costs between
# real passes, timed inside the loop; a replay leaves out whatever the passes do to the work
# around them, and the course did not find out which effect of theirs that is.)


def per_round_overhead(passes, b, s):
    """The per-round overhead o, in plain decoding steps: what a round costs beyond its passes counted
    as plain steps. `passes` = K c + verify(K+1), the round's passes as ratios of passes; `b`: the
    round's own work (sampling, the acceptance test, rollbacks, host reads, Python) and `s`: a plain
    step's own work, both in target passes, so a plain step costs 1 + s passes and a round
    passes + b passes, that is (passes + b) / (1 + s) plain steps. Then
        o = (passes + b) / (1 + s) - passes = (b - s * passes) / (1 + s):
    the round's own work minus the own work a plain step does for the same passes, in plain steps, and
    a round costs exactly passes + o plain steps (speedup: tokens per round / (passes + o)).
    Plain decoding (passes 1, b = s) gives 0 exactly; a round leaner than plain decoding per pass
    (b < s * passes) gives o < 0. Numbers or numpy arrays."""
    return (passes + b) / (1 + s) - passes


class _Timer:
    """A model that forwards every call (`model(ids)`, `extend`, `extend_batch`) to `model` and times each one (the
    GPU synchronised before and after it): `calls`, a list of (positions fed, seconds)."""

    def __init__(self, model, device=None):
        import torch

        from specdec.model import model_device

        self.model, self.calls = model, []
        # only a GPU needs waiting for: on a CPU a call has finished when it returns
        self.gpu = torch.cuda.is_available() and torch.device(device or model_device(model)).type == "cuda"

    def parameters(self, recurse: bool = True):
        return self.model.parameters()

    @property
    def device(self):
        from specdec.model import model_device

        return model_device(self.model)

    @property
    def config(self):
        return getattr(self.model, "config", None)

    def new_cache(self):
        return self.model.new_cache()

    def __getattr__(self, name):  # anything else a loop reads of its model (a method of its own, say)
        return getattr(self.model, name)

    def _time(self, fn, ids, *args, **kwargs):
        if self.gpu:
            sync()
        start = time.perf_counter()
        out = fn(ids, *args, **kwargs)
        if self.gpu:
            sync()
        self.calls.append((ids.shape[1], time.perf_counter() - start))
        return out

    def extend(self, ids, *args, **kwargs):
        return self._time(self.model.extend, ids, *args, **kwargs)

    def extend_batch(self, ids, *args, **kwargs):
        return self._time(self.model.extend_batch, ids, *args, **kwargs)

    def __call__(self, ids, *args, **kwargs):
        return self._time(self.model, ids, *args, **kwargs)


def loop_work(run: Callable, target, draft, repeats: int = 2, device=None) -> dict:
    """A decoding loop taken apart, timed inside the loop: `run(target, draft)` runs the loop once
    on the models it is given; it runs `repeats` times on models that time each of their calls, and
    the fastest repeat is kept. Returns {"seconds": its time, "own": its time outside the models'
    calls (sampling, the acceptance test, rollbacks, host reads, Python), "target" and "draft": the
    (positions fed, seconds) of each call, in order}.
    On a GPU every call is synchronised before and after, so the loop's work cannot overlap a pass
    still running: there "own" is what the loop's work costs without that overlap."""
    import torch

    best = None
    for _ in range(capped_repeats(repeats)):
        t, d = _Timer(target, device), _Timer(draft, device)
        with torch.no_grad():
            total = timed(lambda: run(t, d), device)[0]
        if best is None or total < best["seconds"]:
            inside = sum(s for _, s in t.calls) + sum(s for _, s in d.calls)
            best = {"seconds": total, "own": total - inside, "target": t.calls, "draft": d.calls}
    return best


def explain_speedup(measured: float, passes: float, with_overhead: float | None = None,
                    overhead: float | None = None, tolerance: float = 0.15,
                    unmeasured: str = "not measured here") -> list[str]:
    """What a measured speedup says about its cause, in sentences written from the numbers given:
    `measured` (plain time / speculative time), `passes` (the round-cost prediction: tokens per round
    over K c + verify(K+1), the passes alone), `with_overhead` (tokens per round over the passes plus
    the per-round overhead, when o was measured) and `overhead` (o, in plain steps a round, as
    `per_round_overhead` defines it, so that with_overhead = tokens per round / (K c + verify + o)).

    The cause it names: the passes' cost only when the round-cost prediction itself is below 1 (no
    leaner loop can save that); otherwise the overhead, with its measured value, when the measurement
    falls short of the prediction and o > 0 (an o <= 0 cannot be the cause: the round's own work is
    then no more than plain decoding's for the same passes). A last sentence says whether the model
    with o fits (the measurement within `tolerance` of `with_overhead`). `unmeasured`: what to say of o
    when it was not measured."""
    m, p, w, o = measured, passes, with_overhead, overhead
    work = "sampling, the acceptance test, rollbacks, host reads, Python"
    lean = "the loop's own work is no more than plain decoding's for the same passes"
    if p < 1:
        if m < 1:
            cause = (f"loses ({m:.2f}x) because its passes alone cost more than the tokens a round emits (tokens "
                     f"per round over K c + verification = {p:.2f}x, below 1): no leaner loop can save it; it needs "
                     "a cheaper draft, a higher acceptance rate or another K.")
        else:
            cause = (f"wins ({m:.2f}x) although its passes alone predict a loss ({p:.2f}x): the isolated timings "
                     "overstate what the passes cost inside the loop, or the machine was busy while they ran "
                     "(rerun the cell).")
    elif m < 1:
        if o is not None and o <= 0:
            cause = (f"loses ({m:.2f}x) although its passes alone predict a win ({p:.2f}x), and the per-round "
                     f"overhead cannot be the cause (o = {o:.2f} plain steps: {lean}): the loss comes from work that "
                     "neither timing counts, or from a busy machine (rerun the cell).")
        elif o is None:
            cause = (f"loses ({m:.2f}x) although its passes alone predict a win ({p:.2f}x): the draft passes and "
                     "the verification cost less than the tokens they give; what turns the win into a loss is "
                     f"the loop's work beyond the passes ({work}), which the round-cost model does not count "
                     f"({unmeasured}).")
        elif w is not None and w >= 1:
            cause = (f"loses ({m:.2f}x) although its passes alone predict a win ({p:.2f}x), and with the measured "
                     f"per-round overhead (o = {o:.2f} plain steps) the model still predicts a win ({w:.2f}x): "
                     "the loss comes from work that neither timing counts, or from a busy machine (rerun the cell).")
        else:
            cause = (f"loses ({m:.2f}x) although its passes alone predict a win ({p:.2f}x): the draft passes and "
                     "the verification cost less than the tokens they give; what turns the win into a loss is "
                     f"the per-round overhead, o = {o:.2f} plain steps a round ({work}), which the round-cost "
                     "model does not count.")
    elif m < (1 - tolerance) * p:
        if o is None:
            paid = f"the loop's work beyond the passes ({work}; {unmeasured}) costs the difference"
        elif o > 0:
            paid = f"the per-round overhead, o = {o:.2f} plain steps a round ({work}), costs the difference"
        else:
            paid = (f"not the per-round overhead (o = {o:.2f} plain steps: {lean}); the passes cost more inside "
                    "the loop than timed alone, or the machine was busy while they ran (rerun the cell)")
        cause = f"wins ({m:.2f}x), but less than its passes alone predict ({p:.2f}x): {paid}."
    elif m > (1 + tolerance) * p:
        cause = (f"wins ({m:.2f}x), more than its passes alone predict ({p:.2f}x): the isolated timings overstate "
                 "the loop's costs, or the machine was busy while they ran (rerun the cell).")
    else:
        small = ("" if o is None else f"; the per-round overhead is small here (o = {o:.2f} plain steps)" if o >= 0
                 else f"; the per-round overhead is negative here (o = {o:.2f} plain steps: {lean})")
        cause = f"wins ({m:.2f}x), about what its passes alone predict ({p:.2f}x){small}."
    lines = [cause]
    if w is not None:
        r = m / w
        if abs(r - 1) <= tolerance:
            lines.append(f"With o the model predicts {w:.2f}x against {m:.2f}x measured (ratio {r:.2f}): the "
                         "round-cost model with o fits.")
        elif r < 1:
            lines.append(f"Even with o the model predicts {w:.2f}x, more than the {m:.2f}x measured (ratio {r:.2f}): "
                         "the loop pays for something the timings do not show, or the machine was busy while it "
                         "ran (rerun the cell).")
        else:
            lines.append(f"With o the model predicts {w:.2f}x, less than the {m:.2f}x measured (ratio {r:.2f}): the "
                         "isolated timings overstate the loop's costs, or the machine was busy while they ran "
                         "(rerun the cell).")
    return lines
