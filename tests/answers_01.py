"""Learner answers for 01_acceptance_chain, written differently from the reference.

CORRECT: each must get full marks. WRONG: each known mistake, with a phrase its hint must
contain. tests/test_checkers.py calls the checkers on them directly; tests/test_grading.py puts
some of them into notebooks and grades those with nbgrader.
"""
import math

import numpy as np

# ---------------------------------------------------------------- correct, differently written


def pmf_loop(alpha, K):
    out = []
    for n in range(K):
        out.append(alpha ** n * (1 - alpha))
    out.append(alpha ** K)
    return np.array(out)


def pmf_survival(alpha, K):
    survive = np.concatenate([alpha ** np.arange(K + 1), [0.0]])  # P(N >= n)
    return survive[:-1] - survive[1:]


def expected_closed_form(alpha, K):
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        closed = (1 - a ** (K + 1)) / (1 - a)
    out = np.where(a == 1.0, K + 1.0, closed)
    return out.item() if out.ndim == 0 else out


def expected_noisy(alpha, K):
    """Correct, but lets numpy warn about 0/0 at alpha = 1 and warns on its own: a passing cell
    must not lose its points because of text on stderr."""
    import warnings
    warnings.warn("learner's own warning")
    a = np.asarray(alpha, dtype=float)
    out = np.where(a == 1.0, K + 1.0, (1 - a ** (K + 1)) / (1 - a))
    return out.item() if out.ndim == 0 else out


def expected_loop(alpha, K):
    if np.ndim(alpha):
        return np.array([expected_loop(a, K) for a in np.ravel(alpha)]).reshape(np.shape(alpha))
    return sum(alpha ** k for k in range(K + 1))


def expected_from_pmf(alpha, K):
    a = np.asarray(alpha, dtype=float)[..., None]
    n = np.arange(K + 1)
    pmf = np.where(n < K, a ** n * (1 - a), a ** K)
    return (pmf * (n + 1)).sum(-1)


def simulate_loop(alpha, K, rounds, rng):
    out = np.empty(rounds, dtype=int)
    for r in range(rounds):
        n = 0
        while n < K and rng.random() < alpha:
            n += 1
        out[r] = n + 1
    return out


def simulate_geometric(alpha, K, rounds, rng):
    if alpha >= 1.0:
        return np.full(rounds, K + 1)
    first_rejection = rng.geometric(1 - alpha, size=rounds)  # 1, 2, ...: trials until a rejection
    return np.minimum(first_rejection - 1, K) + 1


def simulate_argmin(alpha, K, rounds, rng):
    rejected = rng.random((rounds, K)) >= alpha
    any_rejected = rejected.any(axis=1)
    return np.where(any_rejected, rejected.argmax(axis=1), K).astype(np.int64) + 1


CORRECT = {
    "accepted_pmf": [pmf_loop, pmf_survival],
    "expected_tokens": [expected_closed_form, expected_noisy, expected_loop, expected_from_pmf],
    "simulate_tokens": [simulate_loop, simulate_geometric, simulate_argmin],
}

# ---------------------------------------------------------------- known mistakes


def pmf_untruncated(alpha, K):
    n = np.arange(K + 1)
    return alpha ** n * (1 - alpha)


def pmf_short(alpha, K):
    return alpha ** np.arange(K) * (1 - alpha)


def expected_exponent_K(alpha, K):
    a = np.asarray(alpha, dtype=float)
    return np.where(a == 1.0, K, (1 - a ** K) / (1 - np.where(a == 1.0, 0.5, a)))


def expected_K_alpha(alpha, K):
    return K * np.asarray(alpha, dtype=float)


def expected_accepted_only(alpha, K):
    return sum(np.asarray(alpha, dtype=float) ** k for k in range(1, K + 1))


def expected_untruncated(alpha, K):
    return 1 / (1 - np.asarray(alpha, dtype=float))


def expected_nan_at_one(alpha, K):
    a = np.asarray(alpha, dtype=float)
    return (1 - a ** (K + 1)) / (1 - a)


def expected_math_only(alpha, K):
    return (1 - math.pow(alpha, K + 1)) / (1 - alpha) if alpha != 1 else K + 1.0


def simulate_accepted_count(alpha, K, rounds, rng):
    return np.cumprod(rng.random((rounds, K)) < alpha, axis=1).sum(axis=1)


def simulate_untruncated(alpha, K, rounds, rng):
    if alpha >= 1.0:
        return np.full(rounds, K + 1)
    return rng.geometric(1 - alpha, size=rounds)


def simulate_no_bonus(alpha, K, rounds, rng):
    n = np.cumprod(rng.random((rounds, K)) < alpha, axis=1).sum(axis=1)
    return np.where(n == K, K, n + 1)


def simulate_inverted(alpha, K, rounds, rng):
    return np.cumprod(rng.random((rounds, K)) > alpha, axis=1).sum(axis=1) + 1


def simulate_global_rng(alpha, K, rounds, rng):
    return np.cumprod(np.random.random((rounds, K)) < alpha, axis=1).sum(axis=1) + 1


WRONG = {
    "accepted_pmf": [
        (pmf_untruncated, "truncation"),
        (pmf_short, "K+1"),
    ],
    "expected_tokens": [
        (expected_exponent_K, "exponent K instead of K+1"),
        (expected_K_alpha, "K*alpha"),
        (expected_accepted_only, "counts only the accepted drafts"),
        (expected_untruncated, "untruncated"),
    ],
    "expected_tokens_edges": [
        (expected_nan_at_one, "0/0"),
        (expected_math_only, "array"),
    ],
    "simulate_tokens": [
        (simulate_accepted_count, "counts accepted drafts"),
        (simulate_untruncated, "more than K+1"),
        (simulate_no_bonus, "bonus"),
        (simulate_inverted, "1 - alpha"),
        (simulate_global_rng, "rng argument"),
    ],
}


def expected_unguarded(alpha, K):
    """The closed form with plain Python floats: ZeroDivisionError at alpha = 1."""
    if isinstance(alpha, float):
        return (1 - alpha ** (K + 1)) / (1 - alpha)
    a = np.asarray(alpha, dtype=float)
    return np.where(a == 1, K + 1.0, (1 - a ** (K + 1)) / (1 - np.where(a == 1, 0.5, a)))


WRONG["expected_tokens_edges"].append((expected_unguarded, "0/0 at alpha = 1"))


# ---------------------------------------------------------------- audit of issue 12: more answers


def expected_narrow_guard(alpha, K):
    """Correct: a guard narrower than about 1e-8 errs less than the closed form's own rounding there."""
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.abs(1 - a) < 1e-10, K + 1.0, (1 - a ** (K + 1)) / (1 - a))
    return out.item() if out.ndim == 0 else out


def simulate_geometric_capped(alpha, K, rounds, rng):
    """Correct: rng.geometric counts the trials up to the first rejection, capped at K+1 tokens."""
    if alpha == 1:
        return np.full(rounds, K + 1)
    return np.minimum(rng.geometric(1 - alpha, size=rounds), K + 1)


CORRECT["expected_tokens"].append(expected_narrow_guard)
CORRECT["simulate_tokens"].append(simulate_geometric_capped)


def expected_isclose_guard(alpha, K):
    """np.isclose(alpha, 1) returns K+1 on a whole interval (|1 - alpha| <= 1e-5) below 1."""
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.isclose(a, 1.0), K + 1.0, (1 - a ** (K + 1)) / (1 - a))
    return out.item() if out.ndim == 0 else out


def expected_tolerance_guard(alpha, K):
    """abs(1 - alpha) < 1e-6: passed the old grid (1 - (1 - 1e-6) is just above 1e-6)."""
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(np.abs(1 - a) < 1e-6, K + 1.0, (1 - a ** (K + 1)) / (1 - a))
    return out.item() if out.ndim == 0 else out


def expected_list_for_arrays(alpha, K):
    if np.ndim(alpha):
        return np.vectorize(lambda a: sum(a ** k for k in range(K + 1)))(alpha).tolist()
    return sum(alpha ** k for k in range(K + 1))


def expected_shape_one(alpha, K):
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    return (a[..., None] ** np.arange(K + 1)).sum(axis=-1)


def expected_in_place(alpha, K):
    """Overwrites the caller's array with the result."""
    if isinstance(alpha, np.ndarray):
        alpha[...] = (alpha[..., None] ** np.arange(K + 1)).sum(axis=-1)
        return alpha
    return sum(alpha ** k for k in range(K + 1))


def expected_no_return(alpha, K):
    total = sum(np.asarray(alpha, dtype=float) ** k for k in range(K + 1))  # noqa: F841 - forgot `return`


def simulate_fixed_seed(alpha, K, rounds, rng):
    rng = np.random.default_rng(1234)
    return np.cumprod(rng.random((rounds, K)) < alpha, axis=1).sum(axis=1) + 1


WRONG["expected_tokens"] += [(expected_shape_one, "one number for scalar inputs"),
                             (expected_no_return, "returned None")]
WRONG["expected_tokens_edges"] += [(expected_isclose_guard, "tolerance guard"),
                                   (expected_tolerance_guard, "tolerance guard"),
                                   (expected_list_for_arrays, "returned a list"),
                                   (expected_in_place, "in place")]
WRONG["simulate_tokens"].append((simulate_fixed_seed, "ignores its rng argument"))


# Learners graded with stock nbgrader besides those derived from CORRECT and WRONG (tests/support/e2e.py):
# the warnings must be dropped before they reach a graded cell's stderr, and a mistake in one
# hidden test of an exercise costs that exercise's points only.
END_TO_END = {
    "noisy": {"expected_tokens": expected_noisy},
    "wrong_guard": {"expected_tokens": expected_isclose_guard},
}


# ---------------------------------------------------------------- issue 32: one mistake, one sentence


def expected_exponent_K_guarded(alpha, K):
    """The exponent K with a correct guard at alpha = 1 (K + 1): alone, the edge cell would blame the guard
    ("not accurate just below alpha = 1"); it must repeat the exponent's hint instead."""
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a == 1.0, K + 1.0, (1 - a ** K) / (1 - a))
    return float(out) if out.ndim == 0 else out


WRONG["expected_tokens"].append((expected_exponent_K_guarded, "exponent K instead of K+1"))
