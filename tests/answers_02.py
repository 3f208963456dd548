"""Learner answers for 02_cost_and_speedup: CORRECT ones written differently from the
reference, and WRONG ones with a phrase their hint must contain. A function may call helpers
of this module: tests/support/notebooks.py pastes them into the notebook cell along with it."""
import numpy as np

# ---------------------------------------------------------------- correct


def round_cost_np(K, c):
    return np.add(1, np.multiply(K, c))


def speedup_closed_form(alpha, K, c):
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tokens = np.where(a == 1, np.asarray(K) + 1.0, (1 - a ** (np.asarray(K) + 1)) / (1 - a))
    out = tokens / (1 + np.asarray(K) * np.asarray(c))
    return float(out) if np.ndim(out) == 0 else out


def speedup_power_sum(alpha, K, c):
    a, K, c = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(K), np.asarray(c, float))
    k = np.arange(int(K.max()) + 1)
    tokens = np.sum(np.where(k <= K[..., None], a[..., None] ** k, 0.0), axis=-1)
    out = tokens / (1 + K * c)
    return out[()] if out.ndim == 0 else out


def loses_mean_of_powers(alpha, K, c):
    """The criterion of the notebook: mean(alpha..alpha**K) < c (K = 0 never loses)."""
    a, K, c = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(K), np.asarray(c, float))
    out = np.zeros(a.shape, dtype=bool)
    for idx in np.ndindex(a.shape):
        if K[idx] > 0:
            powers = a[idx] ** np.arange(1, K[idx] + 1)
            out[idx] = powers.mean() < c[idx]
    return bool(out) if out.ndim == 0 else out


def break_even_roots(K, c):
    """Solve sum_{k=1}^K alpha^k = K c with numpy's polynomial roots."""
    if c >= 1:
        return float("nan")
    coeffs = [1.0] * K + [-K * c]  # alpha^K + ... + alpha - K c, highest power first
    roots = np.roots(coeffs)
    real = [r.real for r in roots if abs(r.imag) < 1e-9 and -1e-12 <= r.real <= 1 + 1e-12]
    return float(min(max(real[0], 0.0), 1.0))


def optimal_K_loop(alpha, c, K_max=16):
    best_K, best_S = 0, 1.0
    for K in range(1, K_max + 1):
        tokens = sum(alpha ** k for k in range(K + 1))
        S = tokens / (1 + K * c)
        if S > best_S + 1e-15:
            best_K, best_S = K, S
    return best_K


CORRECT = {
    "round_cost": [round_cost_np],
    "speedup": [speedup_closed_form, speedup_power_sum],
    "loses": [loses_mean_of_powers],
    "break_even_alpha": [break_even_roots],
    "optimal_K": [optimal_K_loop],
}

# ---------------------------------------------------------------- wrong


def round_cost_no_target(K, c):
    return np.multiply(K, c)


def round_cost_inverted(K, c):
    with np.errstate(divide="ignore"):
        return 1 + np.divide(K, c)


def _tokens(a, K):
    a = np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a == 1, np.asarray(K) + 1.0, (1 - a ** (np.asarray(K) + 1)) / (1 - a))


def speedup_no_draft_cost(alpha, K, c):
    return _tokens(alpha, K) * np.ones_like(np.asarray(c, dtype=float))


def speedup_inverted_c(alpha, K, c):
    with np.errstate(divide="ignore", invalid="ignore"):
        return _tokens(alpha, K) / (1 + np.asarray(K) / np.asarray(c, dtype=float))


def speedup_K_times(alpha, K, c):
    return np.asarray(K, dtype=float) / (1 + np.asarray(K) * np.asarray(c)) + 0 * np.asarray(alpha)


def speedup_exponent_K(alpha, K, c):
    return _tokens(alpha, np.asarray(K) - 1) / (1 + np.asarray(K) * np.asarray(c))


def loses_le(alpha, K, c):
    return speedup_closed_form(alpha, K, c) <= 1


def loses_alpha_below_c(alpha, K, c):
    return np.asarray(alpha) <= np.asarray(c)


def break_even_is_c(K, c):
    return float("nan") if c >= 1 else float(c)


def break_even_inverted(K, c):
    """Bisection with the cost read as 1 + K/c."""
    def S(a):
        return float(_tokens(a, K)) / (1 + K / c) if c > 0 else 0.0
    if S(1.0) <= 1:
        return float("nan")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if S(mid) < 1 else (lo, mid)
    return (lo + hi) / 2


def optimal_K_never_zero(alpha, c, K_max=16):
    S = [speedup_closed_form(alpha, K, c) for K in range(1, K_max + 1)]
    return int(np.argmax(S)) + 1


def optimal_K_free_draft(alpha, c, K_max=16):
    S = [float(_tokens(alpha, K)) for K in range(K_max + 1)]
    return int(np.argmax(S))


WRONG = {
    "round_cost": [(round_cost_no_target, "one target pass"), (round_cost_inverted, "target/draft")],
    "speedup": [(speedup_no_draft_cost, "not free"), (speedup_inverted_c, "target/draft"),
                (speedup_K_times, "every draft is accepted"), (speedup_exponent_K, "exponent K")],
    "loses": [(loses_le, "not a loss"), (loses_alpha_below_c, "MEAN")],
    "break_even_alpha": [(break_even_is_c, "only for K = 1"), (break_even_inverted, "target/draft")],
    "optimal_K": [(optimal_K_never_zero, "do not speculate"), (optimal_K_free_draft, "not free")],
}


def break_even_speedup_tolerance(K, c):
    """Follows the spec literally: bisect until the SPEEDUP is within 1e-7 of 1 (alpha may be
    further off than 1e-7 where the curve is steep)."""
    if c >= 1:
        return float("nan")
    lo, hi = 0.0, 1.0
    while True:
        mid = (lo + hi) / 2
        s = sum(mid ** k for k in range(K + 1)) / (1 + K * c)
        if abs(s - 1) <= 1e-7:
            return mid
        lo, hi = (mid, hi) if s < 1 else (lo, mid)


def break_even_coarse(K, c):
    """Only 20 halvings: about 1e-6 off."""
    if c >= 1:
        return float("nan")
    lo, hi = 0.0, 1.0
    for _ in range(20):
        mid = (lo + hi) / 2
        s = sum(mid ** k for k in range(K + 1)) / (1 + K * c)
        lo, hi = (mid, hi) if s < 1 else (lo, mid)
    return (lo + hi) / 2


CORRECT["break_even_alpha"].append(break_even_speedup_tolerance)
WRONG["break_even_alpha"].append((break_even_coarse, "not within 1e-7"))


# ---------------------------------------------------------------- audit of issue 12: more answers


def break_even_brentq(K, c):
    from scipy.optimize import brentq
    if c >= 1:
        return float("nan")
    def excess(a):
        return sum(a ** k for k in range(K + 1)) / (1 + K * c) - 1
    return 0.0 if excess(0.0) >= 0 else brentq(excess, 0.0, 1.0)


def break_even_width_tolerance(K, c):
    """Bisect until the interval is below 1e-7: the midpoint is within 5e-8."""
    if c >= 1:
        return float("nan")
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-7:
        mid = (lo + hi) / 2
        s = sum(mid ** k for k in range(K + 1)) / (1 + K * c)
        lo, hi = (mid, hi) if s < 1 else (lo, mid)
    return (lo + hi) / 2


def break_even_k1_shortcut(K, c):
    """alpha* = c exactly for K = 1 (the notebook says so), bisection otherwise."""
    if c >= 1:
        return float("nan")
    if K == 1:
        return float(c)
    return break_even_width_tolerance(K, c)


def optimal_K_shortcut(alpha, c, K_max=16):
    """alpha <= c: nothing wins; otherwise K = 1 already wins, so search 1..K_max."""
    if alpha <= c:
        return 0
    S = [sum(alpha ** k for k in range(K + 1)) / (1 + K * c) for K in range(1, K_max + 1)]
    return 1 + int(np.argmax(S))


CORRECT["break_even_alpha"] += [break_even_brentq, break_even_width_tolerance, break_even_k1_shortcut]
CORRECT["optimal_K"].append(optimal_K_shortcut)


def speedup_shape_one(alpha, K, c):
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    return _tokens(a, K) / (1 + np.asarray(K) * np.asarray(c))


def speedup_in_place(alpha, K, c):
    """Right values, but clips the caller's alpha array in place."""
    if isinstance(alpha, np.ndarray):
        np.clip(alpha, 0.0, 0.999, out=alpha)
        a = np.asarray(alpha)
    else:
        a = min(alpha, 0.999)
    return speedup_closed_form(a, K, c)


def loses_list(alpha, K, c):
    s = speedup_closed_form(alpha, K, c)
    return (s < 1).tolist() if np.ndim(s) else bool(s < 1)


def break_even_none(K, c):
    return None if c >= 1 else break_even_width_tolerance(K, c)


def optimal_K_float(alpha, c, K_max=16):
    return float(np.argmax(speedup_closed_form(alpha, np.arange(K_max + 1), c)))


def optimal_K_largest_on_ties(alpha, c, K_max=16):
    S = speedup_closed_form(alpha, np.arange(K_max + 1), c)
    return int(K_max - np.argmax(S[::-1]))


WRONG["speedup"] += [(speedup_shape_one, "one number for scalar inputs"), (speedup_in_place, "in place")]
WRONG["loses"].append((loses_list, "returned a list"))
WRONG["break_even_alpha"].append((break_even_none, "float('nan')"))
WRONG["optimal_K"] += [(optimal_K_float, "must return one int"), (optimal_K_largest_on_ties, "smallest K on ties")]


def optimal_K_fixed_range(alpha, c, K_max=16):
    """Ignores K_max: always searches 0..16."""
    return int(np.argmax(speedup_closed_form(alpha, np.arange(17), c)))


WRONG["optimal_K"].append((optimal_K_fixed_range, "K_max argument"))
