"""Learner answers for 05_speculation_in_practice: CORRECT ones written differently from the
reference, and WRONG ones with a phrase their hint must contain. A function may call helpers
of this module: tests/notebooks.py pastes them into the notebook cell along with it."""
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


def general_power_sum(alpha, K, c, verify_cost):
    a, K, c, v = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(K), np.asarray(c, float),
                                     np.asarray(verify_cost, float))
    k = np.arange(int(K.max()) + 1)
    tokens = np.sum(np.where(k <= K[..., None], a[..., None] ** k, 0.0), axis=-1)
    out = tokens / (K * c + v)
    return out[()] if out.ndim == 0 else out


def general_via_cost(alpha, K, c, verify_cost):
    a = np.asarray(alpha, dtype=float)
    K = np.asarray(K)
    with np.errstate(all="ignore"):
        tokens = np.where(np.isclose(a, 1.0, rtol=0, atol=0), K + 1, -np.expm1((K + 1) * np.log(a)) / (1 - a))
    cost = np.multiply(K, c) + verify_cost
    return np.divide(tokens, cost)


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


CORRECT = {
    "expected_tokens_positional": [positional_loop, positional_horner],
    "speedup_general": [general_power_sum, general_via_cost],
    "ngram_propose": [ngram_backwards_str, ngram_numpy],
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


def general_double_count(alpha, K, c, verify_cost):
    a = np.asarray(alpha, float)
    with np.errstate(all="ignore"):
        tokens = np.where(a == 1, np.asarray(K) + 1.0, (1 - a ** (np.asarray(K) + 1)) / (1 - a))
    return tokens / (1 + np.asarray(K) * c + verify_cost)


def general_times_positions(alpha, K, c, verify_cost):
    a = np.asarray(alpha, float)
    with np.errstate(all="ignore"):
        tokens = np.where(a == 1, np.asarray(K) + 1.0, (1 - a ** (np.asarray(K) + 1)) / (1 - a))
    return tokens / (np.asarray(K) * c + (np.asarray(K) + 1) * verify_cost)


def general_nan_at_one(alpha, K, c, verify_cost):
    with np.errstate(all="ignore"):
        return (1 - np.asarray(alpha, float) ** (np.asarray(K) + 1)) / (1 - np.asarray(alpha, float)) / (
            np.asarray(K) * c + verify_cost)


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


WRONG = {
    "expected_tokens_positional": [(positional_no_one, "+1 is missing"), (positional_sum, "running product"),
                                   (positional_off_by_one, "off by one"), (positional_mean, "averaging")],
    "speedup_general": [(general_double_count, "IS the target pass"), (general_times_positions, "do not multiply"),
                        (general_nan_at_one, "alpha = 1")],
    "ngram_propose": [(ngram_itself, "n-gram itself"), (ngram_first, "FIRST occurrence"),
                      (ngram_uncapped, "longer than K"), (ngram_matches_itself, "never finds a match"),
                      (ngram_no_overlap, "may overlap")],
}
