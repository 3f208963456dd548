"""Learner answers for 05_speculation_in_practice: CORRECT ones written differently from the
reference, and WRONG ones with a phrase their hint must contain. A function may call helpers
of this module: tests/support/notebooks.py pastes them into the notebook cell along with it."""
import numpy as np

# ---------------------------------------------------------------- correct


def positional_loop(alphas):
    total, survive = 1.0, 1.0
    for a in alphas:
        survive *= float(a)
        total += survive
    return total


def positional_horner(alphas):
    """Nested form: 1 + a1 (1 + a2 (1 + a3 (...)))."""
    out = 1.0
    for a in reversed(list(alphas)):
        out = 1.0 + float(a) * out
    return out


def general_power_sum(alpha, K, c, verify_cost, overhead=0.0):
    a, K, c, v, o = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(K), np.asarray(c, float),
                                        np.asarray(verify_cost, float), np.asarray(overhead, float))
    k = np.arange(int(K.max()) + 1)
    tokens = np.sum(np.where(k <= K[..., None], a[..., None] ** k, 0.0), axis=-1)
    out = tokens / (K * c + v + o)
    return out[()] if out.ndim == 0 else out


def general_via_cost(alpha, K, c, verify_cost, overhead=0):
    a = np.asarray(alpha, dtype=float)
    K = np.asarray(K)
    with np.errstate(all="ignore"):
        tokens = np.where(np.isclose(a, 1.0, rtol=0, atol=0), K + 1, -np.expm1((K + 1) * np.log(a)) / (1 - a))
    cost = np.multiply(K, c) + verify_cost + overhead
    return np.divide(tokens, cost)


def general_cost_parts(alpha, K, c, verify_cost, overhead=np.zeros(())):
    """The round's three costs stacked along a new axis and summed; a 0-d array as the default overhead."""
    a, K = np.asarray(alpha, dtype=float), np.asarray(K, dtype=float)
    parts = np.broadcast_arrays(K * np.asarray(c, dtype=float), np.asarray(verify_cost, dtype=float),
                                np.asarray(overhead, dtype=float))
    cost = np.stack(parts).sum(axis=0)
    with np.errstate(all="ignore"):
        tokens = np.where(a == 1.0, K + 1.0, (1.0 - a ** (K + 1.0)) / (1.0 - a))
    out = tokens / cost
    return float(out) if out.ndim == 0 else out


def general_rescaled(alpha, K, c, verify_cost, overhead=0.0):
    """The speedup without overhead, rescaled by the share of the round the passes take."""
    passes = np.multiply(K, c) + np.asarray(verify_cost, dtype=float)
    return general_via_cost(alpha, K, c, verify_cost) * passes / (passes + overhead)


def ngram_backwards_str(context, K, n=2):
    """Search with a sliding tuple, newest first."""
    ctx = tuple(context)
    if K < 1 or len(ctx) < n + 1:
        return []
    key = ctx[-n:]
    for end in range(len(ctx) - 1, n - 1, -1):  # end = index just past a candidate occurrence
        if end < len(ctx) and ctx[end - n:end] == key:
            return list(ctx[end:end + K])
    return []


def ngram_numpy(context, K, n=2):
    ctx = np.asarray(list(context), dtype=np.int64)
    if K == 0 or len(ctx) <= n:
        return []
    windows = np.lib.stride_tricks.sliding_window_view(ctx[:-1], n)  # occurrences ending before the last token
    hits = np.nonzero((windows == ctx[-n:]).all(axis=1))[0]
    if len(hits) == 0:
        return []
    start = int(hits[-1]) + n
    return ctx[start:start + K].tolist()


def alpha_brentq(num_drafts, num_draft_tokens, num_accepted_tokens):
    """scipy's brentq on the closed form, the edges first."""
    from scipy.optimize import brentq
    K = num_draft_tokens / num_drafts
    m = num_accepted_tokens / num_drafts
    if m == 0:
        return 0.0
    if m == K:
        return 1.0
    return brentq(lambda a: a * (1 - a ** K) / (1 - a) - m, 0.0, 1.0 - 1e-12)


def alpha_newton(num_drafts, num_draft_tokens, num_accepted_tokens):
    """Newton on a**(K+1) - (1 + m) a + m = 0 (the closed form times 1 - a) from a = 0: the function
    is convex and falls at 0, so the iterates climb to the smaller root without overshooting."""
    K = num_draft_tokens / num_drafts
    m = num_accepted_tokens / num_drafts
    if m >= K:
        return 1.0
    a = 0.0
    for _ in range(200):
        step = (a ** (K + 1) - (1 + m) * a + m) / ((K + 1) * a ** K - (1 + m))
        a -= step
        if abs(step) < 1e-13:
            break
    return a


def alpha_roots(num_drafts, num_draft_tokens, num_accepted_tokens):
    """Whole K: the real root in [0, 1] of a**K + ... + a - m (numpy's companion matrix); a fractional
    K has no polynomial, so that case uses Newton on the closed form."""
    K = num_draft_tokens / num_drafts
    m = num_accepted_tokens / num_drafts
    if m == 0:
        return 0.0
    if m == K:
        return 1.0
    if K != int(K):
        return alpha_newton(num_drafts, num_draft_tokens, num_accepted_tokens)
    roots = np.roots([1.0] * int(K) + [-m])
    real = roots[(abs(roots.imag) < 1e-9) & (roots.real >= -1e-12) & (roots.real <= 1 + 1e-12)].real
    return float(np.clip(real[0], 0.0, 1.0))


def alpha_bisect_20(num_drafts, num_draft_tokens, num_accepted_tokens):
    """Twenty bisection steps on the sum written as a loop over a real exponent: alpha to about 5e-7."""
    K = num_draft_tokens / num_drafts
    m = num_accepted_tokens / num_drafts
    lo, hi = 0.0, 1.0
    for _ in range(20):
        mid = (lo + hi) / 2
        if mid * (1 - mid ** K) / (1 - mid) < m:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def alpha_from_mean_length(num_drafts, num_draft_tokens, num_accepted_tokens):
    """Tokens per round (1 - a**(K+1)) / (1 - a) = the mean acceptance length: the same equation plus 1 on
    each side, solved by bisection on the sum written out term by term (whole K only here)."""
    K = num_draft_tokens / num_drafts
    length = 1 + num_accepted_tokens / num_drafts
    if K != int(K):
        return alpha_bisect_20(num_drafts, num_draft_tokens, num_accepted_tokens)
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(mid ** k for k in range(int(K) + 1)) < length else (lo, mid)
    return (lo + hi) / 2


def positional_float32(alphas):
    """Single precision throughout (about 7 digits): correct to within float32's rounding."""
    a = np.asarray(alphas, dtype=np.float32)
    return float(np.float32(1) + np.cumprod(a, dtype=np.float32).sum(dtype=np.float32))



def roofline_if_else(batch, tokens, context, model, hardware):
    """Explicit if/else instead of max, dict access via .get, the two times named."""
    memory = (model.get("params") * model.get("bytes_per_param")
              + batch * context * model.get("kv_bytes_per_token")) / hardware.get("bandwidth")
    compute = batch * tokens * (2.0 * model.get("params") + context * model.get("attn_flops_per_pair")) / hardware.get("flops")
    if compute > memory:
        return compute
    return memory


def roofline_units(batch, tokens, context, model, hardware):
    """GB and GFLOP throughout, numpy, converted back to seconds."""
    gigabytes = np.float64(model["params"]) * model["bytes_per_param"] / 1e9 \
        + np.float64(batch) * context * model["kv_bytes_per_token"] / 1e9
    gflops = np.float64(batch) * tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context) / 1e9
    return float(np.maximum(gigabytes / (hardware["bandwidth"] / 1e9), gflops / (hardware["flops"] / 1e9)))


def roofline_float32(batch, tokens, context, model, hardware):
    """Single precision (about 7 digits), numpy's max."""
    f = np.float32
    weights = f(model["params"]) * f(model["bytes_per_param"])
    cache = f(batch) * f(context) * f(model["kv_bytes_per_token"])
    flops = f(batch) * f(tokens) * (f(2) * f(model["params"]) + f(model["attn_flops_per_pair"]) * f(context))
    return np.max([(weights + cache) / f(hardware["bandwidth"]), flops / f(hardware["flops"])])


def _pass_seconds(batch, tokens, context, model, hardware):
    """A learner's own helper: the roofline time of one pass."""
    nbytes = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    nflops = batch * tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context)
    return max(nbytes / hardware["bandwidth"], nflops / hardware["flops"])


def verification_via_helper(batch, K, context, model, hardware):
    return _pass_seconds(batch, K + 1, context, model, hardware) / _pass_seconds(batch, 1, context, model, hardware)


def verification_by_regime(batch, K, context, model, hardware):
    """Both passes share the bytes time: 1 while memory-bound, else the flops time over the step's time."""
    memory = (model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]) / hardware["bandwidth"]
    per_token = (2 * model["params"] + model["attn_flops_per_pair"] * context) / hardware["flops"]
    step = max(memory, batch * per_token)
    verify = max(memory, batch * (K + 1) * per_token)
    return verify / step


def knee_bisection(batch, context, model, hardware):
    """Bisection on total tokens (real numbers) until the flops time meets the bytes time, to 1e-12 relative."""
    memory = (model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]) / hardware["bandwidth"]

    def compute(total):
        return total * (2 * model["params"] + model["attn_flops_per_pair"] * context) / hardware["flops"]

    lo, hi = 0.0, 1.0
    while compute(hi) < memory:
        hi *= 2
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if compute(mid) < memory else (lo, mid)
    return (lo + hi) / 2


def knee_ridge(batch, context, model, hardware):
    """The hardware's ridge (flops per byte) times the bytes a pass moves per flop it spends on a token."""
    ridge = hardware["flops"] / hardware["bandwidth"]
    moved = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    return ridge * moved / (2 * model["params"] + model["attn_flops_per_pair"] * context)

CORRECT = {
    "expected_tokens_positional": [positional_loop, positional_horner, positional_float32],
    "speedup_general": [general_power_sum, general_via_cost, general_rescaled, general_cost_parts],
    "ngram_propose": [ngram_backwards_str, ngram_numpy],
    "alpha_from_counters": [alpha_brentq, alpha_newton, alpha_roots, alpha_bisect_20, alpha_from_mean_length],
    "roofline_time": [roofline_if_else, roofline_units, roofline_float32],
    "verification_cost": [verification_via_helper, verification_by_regime],
    "knee_tokens": [knee_bisection, knee_ridge],
}

# ---------------------------------------------------------------- wrong


def positional_no_one(alphas):
    return float(np.cumprod(np.asarray(alphas, float)).sum())


def positional_sum(alphas):
    return 1.0 + float(np.sum(alphas))


def positional_off_by_one(alphas):
    total, survive = 1.0, 1.0
    for a in alphas:
        total += survive  # adds the product BEFORE multiplying in this position's alpha
        survive *= a
    return total


def positional_mean(alphas):
    if len(alphas) == 0:
        return 1.0
    a = float(np.mean(alphas))
    return sum(a ** k for k in range(len(alphas) + 1))


def _tokens(alpha, K):
    a, K = np.asarray(alpha, float), np.asarray(K)
    with np.errstate(all="ignore"):
        return np.where(a == 1, K + 1.0, (1 - a ** (K + 1)) / (1 - a))


def general_old_signature(alpha, K, c, verify_cost):
    """Notebook 05's exercise before the overhead: right without it, no fifth argument."""
    return _tokens(alpha, K) / (np.asarray(K) * c + verify_cost)


def general_overhead_required(alpha, K, c, verify_cost, overhead):
    """Right formula, but overhead has no default: the four-argument calls fail."""
    return _tokens(alpha, K) / (np.asarray(K) * c + verify_cost + overhead)


def general_overhead_ignored(alpha, K, c, verify_cost, overhead=0.0):
    return _tokens(alpha, K) / (np.asarray(K) * c + verify_cost)


def general_overhead_per_token(alpha, K, c, verify_cost, overhead=0.0):
    """Charges the overhead for every emitted token."""
    tokens = _tokens(alpha, K)
    return tokens / (np.asarray(K) * c + verify_cost + overhead * tokens)


def general_overhead_per_position(alpha, K, c, verify_cost, overhead=0.0):
    """Charges the overhead for each of the K+1 verified positions."""
    return _tokens(alpha, K) / (np.asarray(K) * c + verify_cost + overhead * (np.asarray(K) + 1))


def general_overhead_subtracted(alpha, K, c, verify_cost, overhead=0.0):
    """Takes the overhead off the speedup (tokens per step) instead of adding it to the cost."""
    return _tokens(alpha, K) / (np.asarray(K) * c + verify_cost) - overhead


def general_overhead_on_c(alpha, K, c, verify_cost, overhead=0.0):
    """Adds the overhead to every draft pass."""
    return _tokens(alpha, K) / (np.asarray(K) * (c + overhead) + verify_cost)


def general_overhead_fraction(alpha, K, c, verify_cost, overhead=0.0):
    """Reads the overhead as a fraction of the round's passes."""
    return _tokens(alpha, K) / ((np.asarray(K) * c + verify_cost) * (1 + overhead))


def general_double_count(alpha, K, c, verify_cost, overhead=0.0):
    return _tokens(alpha, K) / (1 + np.asarray(K) * c + verify_cost + overhead)


def general_times_positions(alpha, K, c, verify_cost, overhead=0.0):
    return _tokens(alpha, K) / (np.asarray(K) * c + (np.asarray(K) + 1) * verify_cost + overhead)


def general_nan_at_one(alpha, K, c, verify_cost, overhead=0.0):
    with np.errstate(all="ignore"):
        return (1 - np.asarray(alpha, float) ** (np.asarray(K) + 1)) / (1 - np.asarray(alpha, float)) / (
            np.asarray(K) * c + verify_cost + overhead)


def ngram_itself(context, K, n=2):
    ctx = list(context)
    if K <= 0 or len(ctx) <= n:
        return []
    for s in range(len(ctx) - n - 1, -1, -1):
        if ctx[s:s + n] == ctx[-n:]:
            return ctx[s:s + K]  # the matched n-gram and onwards
    return []


def ngram_first(context, K, n=2):
    ctx = list(context)
    if K <= 0 or len(ctx) <= n:
        return []
    for s in range(len(ctx) - n):
        if ctx[s:s + n] == ctx[-n:]:
            return ctx[s + n:s + n + K]
    return []


def ngram_uncapped(context, K, n=2):
    ctx = list(context)
    if K <= 0 or len(ctx) <= n:
        return []
    for s in range(len(ctx) - n - 1, -1, -1):
        if ctx[s:s + n] == ctx[-n:]:
            return ctx[s + n:]  # everything that followed
    return []


def ngram_matches_itself(context, K, n=2):
    ctx = list(context)
    for s in range(len(ctx) - n, -1, -1):  # includes the suffix itself, where nothing follows
        if ctx[s:s + n] == ctx[-n:]:
            return ctx[s + n:s + n + K]
    return []


def ngram_no_overlap(context, K, n=2):
    ctx = list(context)
    if K <= 0 or len(ctx) <= n:
        return []
    for s in range(len(ctx) - 2 * n, -1, -1):  # refuses matches that overlap the suffix
        if ctx[s:s + n] == ctx[-n:]:
            return ctx[s + n:s + n + K]
    return []


def _bisect(g, target):
    """Bisection for an increasing g on [0, 1), the way a learner would write it."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if g(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _accepted(a, K):
    return a * (1 - a ** K) / (1 - a)


def alpha_acceptance_rate(num_drafts, num_draft_tokens, num_accepted_tokens):
    return num_accepted_tokens / num_draft_tokens  # vLLM's "acceptance rate"


def alpha_tokens_per_round(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = num_draft_tokens / num_drafts
    return _bisect(lambda a: (1 - a ** (K + 1)) / (1 - a), num_accepted_tokens / num_drafts)


def alpha_mean_length(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = num_draft_tokens / num_drafts
    return _bisect(lambda a: _accepted(a, K), 1 + num_accepted_tokens / num_drafts)  # mean acceptance length


def alpha_K_plus_one(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = num_draft_tokens / num_drafts + 1
    return _bisect(lambda a: _accepted(a, K), num_accepted_tokens / num_drafts)


def alpha_total_K(num_drafts, num_draft_tokens, num_accepted_tokens):
    return _bisect(lambda a: _accepted(a, num_draft_tokens), num_accepted_tokens / num_drafts)


def alpha_exponent_K(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = num_draft_tokens / num_drafts
    return _bisect(lambda a: (1 - a ** K) / (1 - a) - 1, num_accepted_tokens / num_drafts)


def alpha_untruncated(num_drafts, num_draft_tokens, num_accepted_tokens):
    m = num_accepted_tokens / num_drafts
    return m / (1 + m)  # a / (1 - a) = m: the mean of a geometric chain that never stops at K


def alpha_one_rejection_per_round(num_drafts, num_draft_tokens, num_accepted_tokens):
    return num_accepted_tokens / (num_accepted_tokens + num_drafts)


def alpha_floor_division(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = num_draft_tokens // num_drafts
    return _bisect(lambda a: _accepted(a, K), num_accepted_tokens // num_drafts)


def alpha_no_edge_case(num_drafts, num_draft_tokens, num_accepted_tokens):
    from scipy.optimize import brentq
    K = num_draft_tokens / num_drafts
    m = num_accepted_tokens / num_drafts
    return brentq(lambda a: _accepted(a, K) - m, 0.0, 1.0 - 1e-12)  # no root inside when every draft was accepted


def alpha_whole_K(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = int(num_draft_tokens / num_drafts)  # drops the fraction of capped rounds
    return _bisect(lambda a: sum(a ** k for k in range(1, K + 1)), num_accepted_tokens / num_drafts)


def alpha_mixture(num_drafts, num_draft_tokens, num_accepted_tokens):
    K = num_draft_tokens / num_drafts
    whole, frac = int(K), K - int(K)
    return _bisect(lambda a: sum(a ** k for k in range(1, whole + 1)) + frac * a ** (whole + 1),
                   num_accepted_tokens / num_drafts)


def positional_array(alphas):
    """Right value, wrong type: a 1-element array (f"{x:.2f}" fails on it in the notebook)."""
    return 1.0 + np.atleast_1d(np.cumprod(np.asarray(alphas, float)).sum())


def general_array(alpha, K, c, verify_cost, overhead=0.0):
    """Right values, but a 1-element array for scalar inputs."""
    a, K = np.atleast_1d(np.asarray(alpha, float)), np.asarray(K)
    with np.errstate(all="ignore"):
        tokens = np.where(a == 1, K + 1.0, (1 - a ** (K + 1)) / (1 - a))
    return tokens / (K * np.asarray(c) + np.asarray(verify_cost) + np.asarray(overhead))


def ngram_longest_continuation(context, K, n=2):
    """Skips the most recent match when fewer than K tokens follow it and looks further back."""
    ctx = list(context)
    if K <= 0 or len(ctx) <= n:
        return []
    best = []
    for s in range(len(ctx) - n - 1, -1, -1):
        if ctx[s:s + n] == ctx[-n:]:
            follow = ctx[s + n:s + n + K]
            if len(follow) == K:
                return follow
            best = best or follow
    return best



def _wrong_pass(batch, tokens, context, model, hardware, *, weights_per_token=False, kv="batch", batch_flops=True,
                combine=max, attention=True, flops_per_param=2, param_bytes=True):
    """A learner's roofline with one slip (used by the wrong answers below)."""
    weights = model["params"] * (model["bytes_per_param"] if param_bytes else 1) * (batch * tokens if weights_per_token else 1)
    cache = {"batch": batch, "once": 1, "none": 0}[kv] * context * model["kv_bytes_per_token"]
    flops = (batch if batch_flops else 1) * tokens * (
        flops_per_param * model["params"] + (model["attn_flops_per_pair"] * context if attention else 0))
    return combine((weights + cache) / hardware["bandwidth"], flops / hardware["flops"])


def roofline_weights_per_token(batch, tokens, context, model, hardware):
    weights = batch * tokens * model["params"] * model["bytes_per_param"]  # every token loads the weights
    cache = batch * context * model["kv_bytes_per_token"]
    flops = batch * tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context)
    return max((weights + cache) / hardware["bandwidth"], flops / hardware["flops"])


def roofline_no_kv(batch, tokens, context, model, hardware):
    flops = batch * tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context)
    return max(model["params"] * model["bytes_per_param"] / hardware["bandwidth"], flops / hardware["flops"])


def roofline_kv_once(batch, tokens, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + context * model["kv_bytes_per_token"]  # one cache for all
    flops = batch * tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context)
    return max(nbytes / hardware["bandwidth"], flops / hardware["flops"])


def roofline_no_batch_flops(batch, tokens, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    flops = tokens * (2 * model["params"] + model["attn_flops_per_pair"] * context)  # tokens of one sequence
    return max(nbytes / hardware["bandwidth"], flops / hardware["flops"])


def roofline_sum(batch, tokens, context, model, hardware):
    return _wrong_pass(batch, tokens, context, model, hardware, combine=lambda a, b: a + b)


def roofline_no_attention(batch, tokens, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    return max(nbytes / hardware["bandwidth"], batch * tokens * 2 * model["params"] / hardware["flops"])


def roofline_one_flop_per_param(batch, tokens, context, model, hardware):
    return _wrong_pass(batch, tokens, context, model, hardware, flops_per_param=1)


def roofline_param_count_as_bytes(batch, tokens, context, model, hardware):
    return _wrong_pass(batch, tokens, context, model, hardware, param_bytes=False)


def roofline_milliseconds(batch, tokens, context, model, hardware):
    return 1e3 * _wrong_pass(batch, tokens, context, model, hardware)


def roofline_array(batch, tokens, context, model, hardware):
    """Right value, wrong type: a 1-element array."""
    return np.atleast_1d(np.max([_wrong_pass(batch, tokens, context, model, hardware)]))


def verification_no_batch(batch, K, context, model, hardware):
    """The K+1 tokens of one sequence instead of B(K+1): the batch drops out of the flops."""
    memory = (model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]) / hardware["bandwidth"]
    per_token = (2 * model["params"] + model["attn_flops_per_pair"] * context) / hardware["flops"]
    return max(memory, (K + 1) * per_token) / max(memory, per_token)


def verification_batch_one_baseline(batch, K, context, model, hardware):
    return _wrong_pass(batch, K + 1, context, model, hardware) / _wrong_pass(1, 1, context, model, hardware)


def verification_K_baseline(batch, K, context, model, hardware):
    return _wrong_pass(batch, K + 1, context, model, hardware) / _wrong_pass(batch, max(K, 1), context, model, hardware)


def verification_compute_bound(batch, K, context, model, hardware):
    return K + 1.0  # "scoring K+1 tokens costs K+1 passes"


def verification_inverted(batch, K, context, model, hardware):
    return _wrong_pass(batch, 1, context, model, hardware) / _wrong_pass(batch, K + 1, context, model, hardware)


def verification_no_kv(batch, K, context, model, hardware):
    return (_wrong_pass(batch, K + 1, context, model, hardware, kv="none")
            / _wrong_pass(batch, 1, context, model, hardware, kv="none"))


def verification_weights_per_token(batch, K, context, model, hardware):
    return (_wrong_pass(batch, K + 1, context, model, hardware, weights_per_token=True)
            / _wrong_pass(batch, 1, context, model, hardware, weights_per_token=True))


def knee_per_sequence(batch, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    per_pass = hardware["flops"] * nbytes / hardware["bandwidth"] / (2 * model["params"] + model["attn_flops_per_pair"] * context)
    return per_pass / batch  # tokens per sequence


def knee_no_kv(batch, context, model, hardware):
    return (hardware["flops"] / hardware["bandwidth"] * model["params"] * model["bytes_per_param"]
            / (2 * model["params"] + model["attn_flops_per_pair"] * context))


def knee_kv_once(batch, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + context * model["kv_bytes_per_token"]
    return hardware["flops"] / hardware["bandwidth"] * nbytes / (2 * model["params"] + model["attn_flops_per_pair"] * context)


def knee_no_attention(batch, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    return hardware["flops"] / hardware["bandwidth"] * nbytes / (2 * model["params"])


def knee_inverted(batch, context, model, hardware):
    nbytes = model["params"] * model["bytes_per_param"] + batch * context * model["kv_bytes_per_token"]
    return hardware["bandwidth"] / hardware["flops"] * nbytes / (2 * model["params"] + model["attn_flops_per_pair"] * context)


def knee_rounded(batch, context, model, hardware):
    import math
    return float(math.ceil(knee_ridge(batch, context, model, hardware)))  # "the first whole token count past the knee"


def knee_bisect_per_sequence_times_batch(batch, context, model, hardware):
    """Bisection on tokens per sequence with a roofline whose flops forget the batch, then times the batch."""
    lo, hi = 0.0, 1e12
    for _ in range(200):
        mid = (lo + hi) / 2
        memory = _wrong_pass(batch, 0, context, model, hardware, batch_flops=False)
        if _wrong_pass(batch, mid, context, model, hardware, batch_flops=False, combine=lambda a, b: b) < memory:
            lo = mid
        else:
            hi = mid
    return batch * (lo + hi) / 2

WRONG = {
    "expected_tokens_positional": [(positional_no_one, "+1 is missing"), (positional_sum, "running product"),
                                   (positional_off_by_one, "off by one"), (positional_mean, "averaging"),
                                   (positional_array, "one number (a float)")],
    "speedup_general": [(general_old_signature, "takes an overhead argument"),
                        (general_overhead_required, "takes an overhead argument"),
                        (general_overhead_ignored, "overhead is ignored"),
                        (general_overhead_per_token, "not once per emitted token"),
                        (general_overhead_per_position, "not once per emitted token"),
                        (general_overhead_subtracted, "do not subtract it"),
                        (general_overhead_on_c, "not with every draft pass"),
                        (general_overhead_fraction, "not a fraction"),
                        (general_double_count, "IS the target pass"), (general_times_positions, "do not multiply"),
                        (general_nan_at_one, "alpha = 1"), (general_array, "one number for scalar inputs")],
    "ngram_propose": [(ngram_itself, "n-gram itself"), (ngram_first, "FIRST occurrence"),
                      (ngram_uncapped, "longer than K"), (ngram_matches_itself, "never finds a match"),
                      (ngram_no_overlap, "may overlap"), (ngram_longest_continuation, "older match")],
    "alpha_from_counters": [(alpha_acceptance_rate, "acceptance rate"), (alpha_tokens_per_round, "counts tokens per round"),
                            (alpha_mean_length, "mean acceptance length"), (alpha_K_plus_one, "K+1 emission"),
                            (alpha_total_K, "not the total"), (alpha_exponent_K, "exponent off by one"),
                            (alpha_untruncated, "untruncated"), (alpha_one_rejection_per_round, "one rejection in every round"),
                            (alpha_floor_division, "integer division"), (alpha_no_edge_case, "every draft accepted"),
                            (alpha_whole_K, "not a whole number"), (alpha_mixture, "mixes rounds")],
    "roofline_time": [(roofline_weights_per_token, "once per pass, not once per scored token"),
                      (roofline_no_kv, "leave out the key/value cache"), (roofline_kv_once, "once per sequence"),
                      (roofline_no_batch_flops, "forget the batch"), (roofline_sum, "not their sum"),
                      (roofline_no_attention, "leave out attention"), (roofline_one_flop_per_param, "2 flops"),
                      (roofline_param_count_as_bytes, "not the parameter count"), (roofline_milliseconds, "return seconds"),
                      (roofline_array, "one number for scalar inputs")],
    "verification_cost": [(verification_no_batch, "B(K+1)"), (verification_batch_one_baseline, "SAME batch"),
                          (verification_K_baseline, "not K"), (verification_compute_bound, "ratio of the two roofline times"),
                          (verification_inverted, "upside down"), (verification_no_kv, "key/value cache"),
                          (verification_weights_per_token, "once per pass")],
    "knee_tokens": [(knee_per_sequence, "tokens per sequence"), (knee_no_kv, "leave out the key/value cache"),
                    (knee_kv_once, "once per sequence"), (knee_no_attention, "leave out attention"),
                    (knee_inverted, "inverted"), (knee_rounded, "not rounded"),
                    (knee_bisect_per_sequence_times_batch, "forget the batch")],
}
