"""Hidden-test checkers for 03_rejection_sampling: acceptance_rate, residual_distribution,
speculative_sample, verify_round.

Values are compared with tolerances. Samplers are judged by the distribution of what they
return, never by the random stream: a correct sampler may draw in any order, with rng.choice,
rng.random plus a cumulative sum, or anything else that uses the rng it is given.

False-failure budget: each statistical checker runs exact binomial tests whose total level
(union bound over every bin of every case) is at most 2e-7, so a correct answer fails one
checker with probability below 2e-7 and the whole notebook below 1e-6.
"""
from __future__ import annotations

import numpy as np

from solutions.checks._common import SEED, as_float_array, call, close, counts_match_pmf, diagnose, fail
from solutions.reference import a03_rejection_sampling as ref

LEVEL = 2e-7  # total false-failure probability of one statistical checker


def _pairs(rng, V, batch=()):
    p = rng.dirichlet(np.full(V, 0.5), size=batch or None)
    q = rng.dirichlet(np.full(V, 0.5), size=batch or None)
    return p, q


# ---------------------------------------------------------------- acceptance_rate

def check_acceptance_rate(acceptance_rate) -> None:
    """sum_x min(p, q) over the last axis, with leading batch axes."""
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED)
    cases = [_pairs(rng, V, batch) for V, batch in ((5, ()), (40, ()), (7, (4,)), (6, (2, 3)))]
    fixed = np.array([0.5, 0.3, 0.2])
    cases += [(fixed, fixed.copy()), (np.array([1.0, 0, 0]), np.array([0, 0.5, 0.5]))]
    for p, q in cases:
        label = f"acceptance_rate(p, q) with p of shape {p.shape}"
        got = as_float_array(call(acceptance_rate, p.copy(), q.copy()), label)
        want = ref.acceptance_rate(p, q)
        if got.shape != want.shape:
            fail(f"{label} must return shape {want.shape} (one rate per leading index: sum over the "
                 f"last axis only), not {got.shape}.")
        if close(got, want, rtol=1e-9, atol=1e-12):
            continue
        hint = diagnose([got], {
            "that is sum max(p, q); a draft token x survives with probability min(1, p(x)/q(x)), "
            "so the acceptance rate is sum_x q(x) min(1, p(x)/q(x)) = sum_x min(p(x), q(x)).":
                lambda: np.maximum(p, q).sum(-1),
            "1 - sum |p - q| double-counts: the total variation distance is HALF the L1 distance, "
            "so acceptance = 1 - TV = 1 - 0.5 * sum |p - q|.": lambda: 1 - np.abs(p - q).sum(-1),
            "that is a mean over tokens; the acceptance rate is the SUM over x of min(p(x), q(x)).":
                lambda: np.minimum(p, q).mean(-1),
        }, [()])
        fail(f"acceptance_rate: {hint}" if hint else f"{label} is not sum_x min(p(x), q(x)).")


# ---------------------------------------------------------------- residual_distribution

def check_residual_distribution(residual_distribution) -> None:
    """norm(max(p - q, 0)) over the last axis; p itself where p == q; never NaN."""
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED + 1)
    cases = [_pairs(rng, V, batch) for V, batch in ((5, ()), (30, ()), (6, (3,)), (4, (2, 2)))]
    for p, q in cases:
        label = f"residual_distribution(p, q) with p of shape {p.shape}"
        got = as_float_array(call(residual_distribution, p.copy(), q.copy()), label)
        want = ref.residual_distribution(p, q)
        if got.shape != want.shape:
            fail(f"{label} must return an array shaped like p, {want.shape}, not {got.shape}.")
        if close(got, want, rtol=1e-9, atol=1e-12):
            continue
        leftover = np.maximum(p - q, 0)
        hint = diagnose([got], {
            "the residual is not normalised: divide max(p - q, 0) by its sum over the last axis "
            "(which equals 1 - acceptance rate) so that it is a distribution.": lambda: leftover,
            "q - p instead of p - q: the residual must put mass where the TARGET p exceeds the draft q, "
            "the tokens the draft under-proposes.":
                lambda: np.maximum(q - p, 0) / np.maximum(q - p, 0).sum(-1, keepdims=True),
            "normalise over the last axis only (each row is its own distribution).":
                lambda: leftover / leftover.sum(),
        }, [()])
        fail(f"residual_distribution: {hint}" if hint else f"{label} is not max(p - q, 0) normalised.")
    p = np.array([0.5, 0.25, 0.25])
    for q_equal in (p.copy(), np.stack([p, p])):
        p_equal = q_equal.copy()
        got = as_float_array(call(residual_distribution, p_equal, q_equal), "residual_distribution(p, p)")
        if np.isnan(got).any():
            fail("residual_distribution(p, q) returns NaN when p == q (0/0): when nothing is left over, "
                 "return p itself (that case is never sampled, but NaN breaks the sampler and its callers).")
        if not close(got, p_equal):
            fail("residual_distribution(p, q) with p == q must return p (nothing is left over, so there "
                 "is no residual to normalise), not zeros or anything else.")


# ---------------------------------------------------------------- speculative_sample

SAMPLE_CASES = (  # (p_target, q_draft); chosen so that every known mistake moves some bin by > 0.05
    (np.array([0.40, 0.30, 0.10, 0.10, 0.05, 0.05]), np.array([0.10, 0.10, 0.30, 0.30, 0.10, 0.10])),
    (np.array([0.70, 0.10, 0.10, 0.10]), np.array([0.25, 0.25, 0.25, 0.25])),
    (np.array([0.50, 0.25, 0.25, 0.00]), np.array([0.50, 0.25, 0.25, 0.00])),   # p == q
    (np.array([0.60, 0.40, 0.00, 0.00]), np.array([0.00, 0.00, 0.50, 0.50])),   # disjoint: alpha = 0
)
SAMPLE_N = 12_000


def _mixture(p, q, other):
    """Distribution of a sampler that accepts correctly but resamples from `other` on rejection."""
    alpha = np.minimum(p, q).sum()
    return np.minimum(p, q) + (1 - alpha) * other


def check_speculative_sample(speculative_sample) -> None:
    """Over SAMPLE_N draws per case: tokens distributed as p, acceptance frequency sum min(p, q).

    Level: per case, V + 1 exact binomial tests; the level LEVEL is split evenly over the cases,
    then (inside counts_match_pmf) over the bins.
    """
    __tracebackhide__ = True
    per_case = LEVEL / (2 * len(SAMPLE_CASES))
    for case, (p, q) in enumerate(SAMPLE_CASES):
        rng = np.random.default_rng(SEED + 10 + case)
        tokens = np.empty(SAMPLE_N, dtype=np.int64)
        accepted = np.empty(SAMPLE_N, dtype=bool)
        for i in range(SAMPLE_N):
            out = call(speculative_sample, p.copy(), q.copy(), rng)
            if not (isinstance(out, tuple) and len(out) == 2):
                fail("speculative_sample must return a tuple (token, accepted).")
            token, acc = out
            if not (np.issubdtype(type(token), np.integer) and 0 <= token < len(p)):
                fail(f"speculative_sample returned token {token!r}; it must be an int in 0..V-1.")
            tokens[i], accepted[i] = token, bool(acc)
        values = np.arange(len(p))
        alpha = ref.acceptance_rate(p, q)
        if accepted.all() and alpha < 0.99:
            fail("speculative_sample accepts every draft token: accept x ~ q only with probability "
                 "min(1, p[x] / q[x]).")
        if not counts_match_pmf(tokens, values, p, per_case):
            wrong = {
                "on rejection it resamples from p; it must sample from the residual "
                "norm(max(p - q, 0)), otherwise tokens that q already over-proposes are counted twice.":
                    _mixture(p, q, p),
                "the residual uses q - p; it must be max(p - q, 0), the mass where the target exceeds "
                "the draft.": _mixture(p, q, _safe_norm(np.maximum(q - p, 0))),
                "its tokens follow q, not p: the acceptance test must keep x with probability "
                "min(1, p[x] / q[x]).": q,
            }
            for hint, dist in wrong.items():
                if counts_match_pmf(tokens, values, dist, 1e-3):
                    fail(f"speculative_sample: {hint}")
            fail("speculative_sample: the emitted tokens are not distributed as p (draw x ~ q, accept "
                 "with probability min(1, p[x]/q[x]), otherwise draw from the residual).")
        if not counts_match_pmf(accepted.astype(int), np.array([0, 1]), np.array([1 - alpha, alpha]), per_case):
            fail("speculative_sample: the accepted flag is True with the wrong frequency; it should be "
                 "True exactly when the draft token was kept, which happens with probability sum min(p, q).")


def _safe_norm(v):
    s = v.sum()
    return v / s if s > 0 else v


# ---------------------------------------------------------------- verify_round

def _greedy_cases():
    """One-hot rows (temperature 0): the outcome is deterministic."""
    V, K = 5, 4
    eye = np.eye(V)
    target_argmax = np.array([2, 0, 3, 3, 1])         # K+1 positions
    cases = []
    for first_mismatch in (0, 1, 3, None):
        drafts = target_argmax[:K].copy()
        if first_mismatch is not None:
            drafts[first_mismatch] = (drafts[first_mismatch] + 1) % V
            drafts[first_mismatch + 1:] = 4 - drafts[first_mismatch + 1:]  # arbitrary afterwards
            expected = list(target_argmax[:first_mismatch]) + [int(target_argmax[first_mismatch])]
        else:
            expected = list(target_argmax)  # all accepted, plus the bonus token
        cases.append((drafts, eye[target_argmax], eye[drafts], [int(t) for t in expected]))
    return cases


VERIFY_V, VERIFY_K, VERIFY_N = 5, 3, 12_000


def check_verify_round(verify_round) -> None:
    """Greedy (one-hot) rounds exactly, then the distribution of rounds with sampled drafts."""
    __tracebackhide__ = True
    for drafts, p_rows, q_rows, expected in _greedy_cases():
        got = call(verify_round, drafts.copy(), p_rows.copy(), q_rows.copy(), np.random.default_rng(SEED))
        got = [int(t) for t in np.asarray(got).reshape(-1)]
        if got == expected:
            continue
        if len(expected) == len(drafts) + 1 and got == expected[:-1]:
            fail("verify_round forgets the bonus token: when all K drafts are accepted, append a token "
                 "sampled from p_rows[K], the target's distribution after the last draft.")
        if len(got) == len(drafts) + 1 and got[:len(drafts)] == list(drafts):
            fail("verify_round accepts every draft token: in the greedy (one-hot) case a draft that "
                 "differs from the target's choice must be rejected and replaced.")
        fail("verify_round is wrong in the greedy case (one-hot rows, the temperature-0 limit): it "
             "should keep drafts while they match the target's argmax, then emit the target's token.")
    rng_rows = np.random.default_rng(SEED + 20)
    p_rows = rng_rows.dirichlet(np.full(VERIFY_V, 0.7), size=VERIFY_K + 1)
    q_rows = 0.5 * p_rows[:VERIFY_K] + 0.5 * rng_rows.dirichlet(np.full(VERIFY_V, 0.7), size=VERIFY_K)
    rng_drafts = np.random.default_rng(SEED + 21)
    rng_learner = np.random.default_rng(SEED + 22)
    rounds = []
    for _ in range(VERIFY_N):
        drafts = np.array([rng_drafts.choice(VERIFY_V, p=q) for q in q_rows])
        out = call(verify_round, drafts.copy(), p_rows.copy(), q_rows.copy(), rng_learner)
        out = [int(t) for t in np.asarray(out).reshape(-1)]
        if not 1 <= len(out) <= VERIFY_K + 1:
            fail(f"verify_round returned {len(out)} tokens; a round emits between 1 and K+1.")
        if out[:len(out) - 1] != [int(d) for d in drafts[:len(out) - 1]]:
            fail("verify_round must stop at the first rejection: it returns the accepted prefix of the "
                 "drafts followed by ONE token (correction or bonus), but here a token before the last "
                 "one differs from the draft at its position.")
        rounds.append(out)
    lengths = np.array([len(r) for r in rounds])
    alphas = ref.acceptance_rate(p_rows[:VERIFY_K], q_rows)
    reach = np.concatenate([[1.0], np.cumprod(alphas)])                     # P(length > j)
    length_pmf = reach - np.append(reach[1:], 0.0)                          # P(length = j + 1)
    n_tests = 1 + (VERIFY_K + 1)
    per_test = LEVEL / n_tests
    if not counts_match_pmf(lengths, np.arange(1, VERIFY_K + 2), length_pmf, per_test):
        if lengths.max() <= VERIFY_K:
            fail("verify_round never emits K+1 tokens: when all K drafts are accepted it must append the "
                 "bonus token sampled from p_rows[K].")
        if (lengths == VERIFY_K + 1).all():
            fail("verify_round emits K+1 tokens every round: it must stop at the first rejection and "
                 "accept each draft only with probability min(1, p[x] / q[x]).")
        fail("verify_round: the number of tokens per round does not match the chain of acceptances "
             "(each draft kept with probability min(1, p/q), stopping at the first rejection).")
    for j in range(VERIFY_K + 1):
        at_j = np.array([r[j] for r in rounds if len(r) > j])
        if not counts_match_pmf(at_j, np.arange(VERIFY_V), p_rows[j], per_test):
            if j < VERIFY_K and counts_match_pmf(at_j, np.arange(VERIFY_V),
                                                 _mixture(p_rows[j], q_rows[j], p_rows[j]), 1e-3):
                fail("verify_round resamples a rejected position from p; it must sample from the residual "
                     "norm(max(p - q, 0)) so that the emitted token is distributed exactly as p.")
            fail(f"verify_round: the token emitted at position {j} is not distributed as p_rows[{j}] "
                 "(accepted draft, residual sample at the first rejection, or bonus token).")
