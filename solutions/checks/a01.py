"""Hidden-test checkers for 01_acceptance_chain: accepted_pmf, expected_tokens, simulate_tokens.

Each public `check_*` is called from one hidden test cell with the learner's function; it
returns None when the function agrees with the reference and raises CheckFailure with a
one-sentence hint otherwise.
"""
from __future__ import annotations

import numpy as np

from solutions.checks._common import (
    HINT_EXPONENT_K, HINT_NO_TARGET_TOKEN, SEED, Exercise, as_float_array, call, close, counts_match_pmf, declare,
    diagnose, fail, require_ndarray, require_scalar, unchanged,
)
from solutions.reference import a01_acceptance_chain as ref

ALPHAS = (0.0, 0.05, 0.2, 0.4, 0.5, 0.62, 0.75, 0.8, 0.9, 0.95, 0.99)
KS = (1, 2, 3, 4, 5, 7, 8, 12)

HINT_K_ALPHA = ("K*alpha treats every draft as counted independently, but a round stops at the "
                "first rejection: draft k only counts if drafts 1..k were all accepted "
                "(probability alpha**k), and the target always adds one token.")
HINT_UNTRUNCATED_MEAN = ("this is the mean of an untruncated geometric law: a round proposes only K "
                         "drafts, so the sum of alpha**k stops at k = K.")


# ---------------------------------------------------------------- accepted_pmf

def check_accepted_pmf(accepted_pmf) -> None:
    """Values and shape of the truncated geometric pmf on a grid of (alpha, K)."""
    __tracebackhide__ = True
    for K in KS:
        for alpha in ALPHAS + (1.0,):
            label = f"accepted_pmf({alpha:g}, {K})"
            got = as_float_array(call(accepted_pmf, alpha, K), label)
            want = ref.accepted_pmf(alpha, K)
            if got.shape != want.shape:
                if got.shape == (K,):
                    fail(f"{label} returned {K} entries; it needs K+1, one for each n = 0..K "
                         "(n = K means every draft was accepted).")
                fail(f"{label} must return an array of shape (K+1,) = ({K + 1},), not {got.shape}.")
            if close(got, want, rtol=1e-9, atol=1e-12):
                continue
            n = np.arange(K + 1)
            mistakes = [
                ("the last entry must be alpha**K, the probability that all K drafts are accepted "
                 "(there is no rejection after the last draft); without that truncation the pmf "
                 "does not sum to 1.", lambda: alpha ** n * (1 - alpha)),
                ("alpha and 1 - alpha are swapped: each accepted draft contributes a factor alpha "
                 "and the first rejection a factor (1 - alpha).",
                 lambda: np.append((1 - alpha) ** n[:-1] * alpha, (1 - alpha) ** K)),
            ]
            hint = diagnose([got], mistakes, [()])
            if hint:
                fail(f"{label}: {hint}")
            if not np.isclose(got.sum(), 1.0):
                fail(f"{label} does not sum to 1; P(N = n) must cover n = 0..K exactly once.")
            fail(f"{label} differs from P(N = n) = alpha**n (1 - alpha) for n < K and alpha**K for n = K.")


# ---------------------------------------------------------------- expected_tokens

EXPECTED_MISTAKES = [
    (HINT_EXPONENT_K, lambda a, K: (1 - a ** K) / (1 - a)),
    (HINT_K_ALPHA, lambda a, K: K * a),
    ("1 + " + HINT_K_ALPHA, lambda a, K: 1 + K * a),
    (HINT_NO_TARGET_TOKEN, lambda a, K: (1 - a ** (K + 1)) / (1 - a) - 1),
    (HINT_UNTRUNCATED_MEAN, lambda a, K: 1 / (1 - a)),
    (HINT_UNTRUNCATED_MEAN + " It also counts only accepted drafts; add the target's token.", lambda a, K: a / (1 - a)),
]


def check_expected_tokens(expected_tokens) -> None:
    """Values on a grid of alpha in [0, 1) and K in 1..12 (scalar inputs)."""
    __tracebackhide__ = True
    grid = [(alpha, K) for K in KS for alpha in ALPHAS]
    got = []
    for alpha, K in grid:
        label = f"expected_tokens({alpha:g}, {K})"
        got.append(require_scalar(call(expected_tokens, alpha, K), label))
    want = [ref.expected_tokens(alpha, K) for alpha, K in grid]
    if close(got, want, rtol=1e-7, atol=1e-10):
        return
    hint = diagnose(got, EXPECTED_MISTAKES, grid)
    if hint:
        fail(f"expected_tokens: {hint}")
    bad_alpha, bad_K = next(x for x, g, w in zip(grid, got, want) if not close(g, w, rtol=1e-7, atol=1e-10))
    fail(f"expected_tokens({bad_alpha:g}, {bad_K}) is wrong: it should be the sum of alpha**k over "
         "the K+1 emission slots k = 0..K.", generic=True)


# Continuity just below alpha = 1. At alpha = 1 - gap the closed form (1 - alpha**(K+1)) / (1 - alpha),
# guarded at alpha == 1 only, has a relative rounding error of about 1.1e-16 / ((K+1) * gap) (the
# subtraction 1 - alpha**(K+1) cancels; 1 - alpha is exact); summing the powers is exact to a few
# ulps. The tolerance 1e-14 / gap (at least 1e-9) leaves a margin of about 100 over that rounding,
# so every correct way of writing the function passes. A tolerance guard (np.isclose(alpha, 1),
# abs(1 - alpha) < 1e-6, ...) returns K+1 on a whole interval below 1, where the exact value is
# about K+1 - K(K+1)/2 * gap: off by a relative K/2 * gap, which this tolerance catches for every
# gap above about 1.5e-7 / sqrt(K). A narrower guard errs less than the closed form's own rounding.
EDGE_GAPS = (1e-3, 1e-4, 1e-5, 3e-6, 1e-6, 5e-7, 2e-7, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12)


def _edge_rtol(gap: float) -> float:
    return max(1e-9, 1e-14 / gap)


HINT_TOLERANCE_GUARD = ("returns exactly K+1 just below alpha = 1: a tolerance guard such as np.isclose(alpha, 1) "
                        "or abs(1 - alpha) < eps replaces a whole interval by K+1, which is off there by about "
                        "K(K+1)/2 * (1 - alpha); guard alpha == 1 exactly, or sum the powers.")


def check_expected_tokens_edges(expected_tokens) -> None:
    """alpha = 0 and alpha = 1 exactly, continuity just below 1, and array inputs."""
    __tracebackhide__ = True
    for K in (1, 3, 8):
        at_zero = require_scalar(call(expected_tokens, 0.0, K), f"expected_tokens(0.0, {K})")
        if not close(at_zero, 1.0):
            fail(f"expected_tokens(0.0, {K}) must be exactly 1: with alpha = 0 every round emits only "
                 "the target's own token.")
        zero_div = {ZeroDivisionError: "the closed form is 0/0 at alpha = 1; return K+1 there (all drafts "
                                       "plus the bonus token) or sum the powers alpha**k instead."}
        at_one = require_scalar(call(expected_tokens, 1.0, K, on_error=zero_div), f"expected_tokens(1.0, {K})")
        if close(at_one, float(K)):
            fail(f"expected_tokens(1.0, {K}) returned K: {HINT_EXPONENT_K}")
        if not close(at_one, K + 1.0):
            fail(f"expected_tokens(1.0, {K}) must be K+1 = {K + 1} (all drafts accepted plus the bonus "
                 "token); the closed form is 0/0 there, so guard alpha == 1 or sum the powers.")
        for gap in EDGE_GAPS:
            alpha = 1.0 - gap
            label = f"expected_tokens(1 - {gap:g}, {K})"
            got = require_scalar(call(expected_tokens, alpha, K), label)
            if close(got, ref.expected_tokens(alpha, K), rtol=_edge_rtol(gap), atol=0.0):
                continue
            if got == K + 1.0:
                fail(f"{label} {HINT_TOLERANCE_GUARD}")
            fail(f"{label} is not accurate just below alpha = 1: the function must be continuous there "
                 "(no special case for a whole interval; sum the powers, or guard alpha == 1 exactly).")
    alphas = np.array([[0.0, 0.1, 0.5, 0.9], [0.99, 1.0, 0.3, 0.75], [0.2, 0.6, 0.8, 0.95]])
    for K in (1, 4, 10):
        label = f"expected_tokens(<array>, {K})"
        passed = alphas.copy()
        out = call(expected_tokens, passed, K)
        unchanged(label, alpha=(alphas, passed))
        got = as_float_array(require_ndarray(out, label), label)
        want = ref.expected_tokens(alphas, K)
        if got.shape != want.shape:
            fail(f"expected_tokens(alpha_array, {K}) must return an array shaped like alpha "
                 f"{alphas.shape}, not {got.shape}: use numpy operations that broadcast.")
        if not close(got, want, rtol=1e-7, atol=1e-10):
            fail(f"expected_tokens(alpha_array, {K}) disagrees with its scalar values for some alpha "
                 "(check alpha = 0 and alpha = 1 inside an array).", generic=True)


# ---------------------------------------------------------------- simulate_tokens

# Distribution cases: (alpha, K). With SIM_ROUNDS rounds each and level 1e-7 per case, a
# correct simulate_tokens fails a case with probability <= 1e-7 (exact binomial tests with a
# Bonferroni split over the K+1 bins, see counts_match_pmf), so the 4 random cases together
# fail a correct answer with probability <= 4e-7 < 1e-6. The two degenerate cases (alpha = 0
# and 1) are deterministic. The power is large: 20,000 rounds resolve a bin probability to
# about +-0.004 at this level, while the known mistakes move some bin by 0.1 or more.
SIM_CASES = ((0.0, 3), (1.0, 4), (0.3, 2), (0.5, 1), (0.7, 5), (0.9, 8))
SIM_ROUNDS = 20_000
SIM_LEVEL = 1e-7


def _emitted_pmf(alpha, K):
    return ref.accepted_pmf(alpha, K)  # P(emitted = n + 1) = P(N = n)


def check_simulate_tokens(simulate_tokens) -> None:
    """Shape, range, use of the rng, and the distribution of emitted tokens per round."""
    __tracebackhide__ = True
    for case, (alpha, K) in enumerate(SIM_CASES):
        label = f"simulate_tokens({alpha:g}, {K}, {SIM_ROUNDS}, rng)"
        out = call(simulate_tokens, alpha, K, SIM_ROUNDS, np.random.default_rng(SEED + case))
        out = as_float_array(out, label)
        if out.shape != (SIM_ROUNDS,):
            fail(f"{label} must return one count per round, shape ({SIM_ROUNDS},), not {out.shape}.")
        if not np.all(out == np.round(out)):
            fail(f"{label} returned non-integer counts; each entry is a number of tokens.")
        if out.min() < 1:
            fail(f"{label} returned counts below 1: it counts accepted drafts (0..K), but each round "
                 "emits accepted + 1 tokens (the target's correction or bonus), so 1..K+1.")
        if out.max() > K + 1:
            fail(f"{label} returned more than K+1 tokens in a round: a round proposes only K drafts, "
                 "so stop after K acceptances (the geometric law is truncated at K).")
        values = np.arange(1, K + 2)
        if counts_match_pmf(out, values, _emitted_pmf(alpha, K), SIM_LEVEL):
            continue
        wrong = [
            ("it accepts with probability 1 - alpha: accept a draft when a uniform draw is below alpha.",
             _emitted_pmf(1 - alpha, K)),
            ("rounds where all K drafts were accepted must emit K+1 tokens: the target adds a bonus "
             "token from its last distribution.", _pmf_without_bonus(alpha, K)),
        ]
        for hint, pmf in wrong:
            if counts_match_pmf(out, values, pmf, 1e-3):
                fail(f"{label}: {hint}")
        fail(f"{label}: the counts do not follow the truncated geometric law (accept each draft "
             "with probability alpha, stop at the first rejection, emit accepted + 1 tokens).")
    a = call(simulate_tokens, 0.6, 4, 1000, np.random.default_rng(SEED))
    b = call(simulate_tokens, 0.6, 4, 1000, np.random.default_rng(SEED))
    if not np.array_equal(np.asarray(a), np.asarray(b)):
        fail("two calls with identically seeded rngs gave different results: draw every random "
             "number from the rng argument (not np.random or a new generator).")
    # Two correct runs with different seeds agree on all 1000 rounds with probability
    # (sum of squared pmf)**1000 = 0.26**1000, about 1e-585.
    other = call(simulate_tokens, 0.6, 4, 1000, np.random.default_rng(SEED + 100))
    if np.array_equal(np.asarray(a), np.asarray(other)):
        fail("two calls with differently seeded rngs gave identical results: the function ignores its "
             "rng argument (a generator with a fixed seed inside?); draw every random number from rng.")


def _pmf_without_bonus(alpha, K):
    """Emitted-count pmf of a simulation that emits K (not K+1) tokens when all K are accepted."""
    pmf = np.zeros(K + 1)
    pmf[:K] = ref.accepted_pmf(alpha, K)[:K]
    pmf[K - 1] += alpha ** K
    return pmf


# ---------------------------------------------------------------- the contract

# Each exercise's hidden tests in cell order (the edge cell of a wrong formula repeats the formula's named
# mistake: one mistake, one sentence).
CONTRACT = declare(
    globals(),
    Exercise("accepted_pmf", "check_accepted_pmf"),
    Exercise("expected_tokens", ("check_expected_tokens", "check_expected_tokens_edges")),
    Exercise("simulate_tokens", "check_simulate_tokens"),
)
