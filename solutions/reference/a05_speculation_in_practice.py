# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 05_speculation_in_practice.

GENERATED from source/05_speculation_in_practice/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import matplotlib.pyplot as plt
import numpy as np
import torch
from specdec.heads import load_heads
from specdec.model import decode, encode, load
from specdec.practice import (
    DraftModel, Heads, PromptLookup, cached_verify_costs, compare, draft_cost, head_agreement, pass_ratios,
    pass_times, round_overhead, speculate, vllm_counters,
)


def expected_tokens_positional(alphas):
    """1 + sum_k prod_{i<=k} alphas[i]: expected tokens per round with position-wise acceptance."""
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    return float(1.0 + np.cumprod(alphas).sum())


def speedup_general(alpha, K, c, verify_cost, overhead=0.0):
    """Expected tokens per round / (K c + verify_cost + overhead), with i.i.d. acceptance alpha;
    overhead: the round's work beyond its passes, in plain decoding steps, paid once per round."""
    alpha, K, c, verify_cost, overhead = (np.asarray(x, dtype=float) for x in (alpha, K, c, verify_cost, overhead))
    with np.errstate(divide="ignore", invalid="ignore"):
        tokens = np.where(alpha == 1.0, K + 1.0, (1.0 - alpha ** (K + 1)) / (1.0 - alpha))
    out = tokens / (K * c + verify_cost + overhead)
    return float(out) if out.ndim == 0 else out


def roofline_time(batch, tokens, context, model, hardware):
    """Seconds of one pass: max(bytes / bandwidth, flops / peak flops) for `batch` sequences that each
    score `tokens` new positions after `context` cached ones."""
    weight_bytes = model["params"] * model["bytes_per_param"]  # read once per pass, whatever the batch
    cache_bytes = batch * context * model["kv_bytes_per_token"]  # every sequence reads its own cache
    flops = batch * tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context)
    return float(max((weight_bytes + cache_bytes) / hardware["bandwidth"], flops / hardware["flops"]))


def verification_cost(batch, K, context, model, hardware):
    """Time of a pass over K+1 positions per sequence / a pass over 1, same batch and context."""
    return roofline_time(batch, K + 1, context, model, hardware) / roofline_time(batch, 1, context, model, hardware)


def knee_tokens(batch, context, model, hardware):
    """Total tokens per pass (all sequences) at which flops / peak flops equals bytes / bandwidth."""
    bytes_time = (model["params"] * model["bytes_per_param"]
                  + batch * context * model["kv_bytes_per_token"]) / hardware["bandwidth"]
    flops_per_token = 2 * model["params"] + model["attn_flops_per_pair"] * context
    return float(bytes_time * hardware["flops"] / flops_per_token)


def ngram_propose(context, K, n=2):
    """Prompt lookup: up to K tokens that followed the most recent earlier occurrence of the last n tokens."""
    context = [int(t) for t in context]
    if K <= 0 or n <= 0 or len(context) <= n:
        return []
    suffix = context[-n:]
    for start in range(len(context) - n - 1, -1, -1):  # latest first; the suffix itself is excluded
        if context[start:start + n] == suffix:
            return context[start + n:start + n + K]
    return []


def alpha_from_counters(num_drafts, num_draft_tokens, num_accepted_tokens):
    """The alpha whose chain accepts alpha + ... + alpha**K = num_accepted_tokens / num_drafts drafts
    per round, with K = num_draft_tokens / num_drafts (a real K uses the closed form)."""
    K = num_draft_tokens / num_drafts  # drafts per round, fractional when rounds were capped
    per_round = num_accepted_tokens / num_drafts  # accepted drafts per round, in [0, K]
    if per_round <= 0:
        return 0.0
    if per_round >= K:
        return 1.0

    def accepted_per_round(a):  # a + a**2 + ... + a**K, closed form (K may be fractional); a < 1 here
        return a * (1.0 - a ** K) / (1.0 - a)

    lo, hi = 0.0, 1.0  # accepted_per_round rises with a: bisect until floats stop moving
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return mid
        if accepted_per_round(mid) < per_round:
            lo = mid
        else:
            hi = mid
