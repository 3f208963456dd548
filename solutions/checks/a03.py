"""Hidden-test checkers for 03_rejection_sampling: acceptance_rate, residual_distribution,
speculative_sample, verify_round.

Values are compared with tolerances. Samplers are judged by the distribution of what they
return, never by the random stream: a correct sampler may draw in any order, with rng.choice,
rng.random plus a cumulative sum, or anything else that uses the rng it is given.

False-failure budget: each statistical checker runs exact binomial tests whose total level
(union bound over every bin of every case) is at most 2e-7, so a correct answer fails one
checker with probability below 2e-7 and the whole notebook below 1e-6. The samplers are also
run twice with one seed (a correct answer always reproduces itself) and once with another (two
correct runs agree with a probability written next to each check, below 1e-40).

Notation as in the notebook: beta = sum_x min(p, q) is the acceptance probability at one
position (what `acceptance_rate` returns); alpha is its average over positions.
"""
from __future__ import annotations

import numpy as np

from solutions.checks._common import (
    SEED, SAMPLING_CALLS, Exercise, as_float_array, call, call_many, close, counts_match_pmf, declare, diagnose, fail,
    require_ndarray, token_list, unchanged,
)
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
        p_in, q_in = p.copy(), q.copy()
        out = call(acceptance_rate, p_in, q_in)
        unchanged(label, p=(p, p_in), q=(q, q_in))
        if p.ndim > 1:
            require_ndarray(out, label)
        got = as_float_array(out, label)
        want = ref.acceptance_rate(p, q)
        if got.shape != want.shape:
            fail(f"{label} must return shape {want.shape} (one rate per leading index: sum over the "
                 f"last axis only), not {got.shape}.")
        if close(got, want, rtol=1e-9, atol=1e-12):
            continue
        hint = diagnose([got], [
            ("that is sum max(p, q); a draft token x survives with probability min(1, p(x)/q(x)), "
             "so beta = sum_x q(x) min(1, p(x)/q(x)) = sum_x min(p(x), q(x)).",
             lambda: np.maximum(p, q).sum(-1)),
            ("1 - sum |p - q| double-counts: the total variation distance is HALF the L1 distance, "
             "so beta = 1 - TV = 1 - 0.5 * sum |p - q|.", lambda: 1 - np.abs(p - q).sum(-1)),
            ("that is a mean over tokens; beta is the SUM over x of min(p(x), q(x)).",
             lambda: np.minimum(p, q).mean(-1)),
        ], [()])
        fail(f"acceptance_rate: {hint}" if hint else f"{label} is not sum_x min(p(x), q(x)).")


# ---------------------------------------------------------------- residual_distribution

def check_residual_distribution(residual_distribution) -> None:
    """norm(max(p - q, 0)) over the last axis; p itself where p == q; never NaN."""
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED + 1)
    cases = [_pairs(rng, V, batch) for V, batch in ((5, ()), (30, ()), (6, (3,)), (4, (2, 2)))]
    for p, q in cases:
        label = f"residual_distribution(p, q) with p of shape {p.shape}"
        got = _residual_call(residual_distribution, p, q, label)
        want = ref.residual_distribution(p, q)
        if got.shape != want.shape:
            fail(f"{label} must return an array shaped like p, {want.shape}, not {got.shape}.")
        if close(got, want, rtol=1e-9, atol=1e-12):
            continue
        if close(got, want, rtol=1e-5, atol=1e-8):
            fail(f"{label} is close to the residual but not exact: an epsilon added to the sum (or to the "
                 "leftover) changes every value; guard the zero sum with np.where instead.")
        leftover = np.maximum(p - q, 0)
        row_mistake = [] if p.ndim == 1 else [
            ("normalise over the last axis only (each row is its own distribution).",
             lambda: leftover / leftover.sum())]
        hint = diagnose([got], [
            ("the residual is not normalised: divide max(p - q, 0) by its sum over the last axis "
             "(which equals 1 - beta, the rejection probability) so that it is a distribution.", lambda: leftover),
            ("q - p instead of p - q: the residual must put mass where the TARGET p exceeds the draft q, "
             "the tokens the draft under-proposes.",
             lambda: np.maximum(q - p, 0) / np.maximum(q - p, 0).sum(-1, keepdims=True)),
            *row_mistake,
        ], [()])
        fail(f"residual_distribution: {hint}" if hint else f"{label} is not max(p - q, 0) normalised.")
    p = np.array([0.5, 0.25, 0.25])
    for q_equal in (p.copy(), np.stack([p, p])):
        p_equal = q_equal.copy()
        got = _residual_call(residual_distribution, p_equal, q_equal, "residual_distribution(p, p)")
        if np.isnan(got).any():
            fail("residual_distribution(p, q) returns NaN when p == q (0/0): when nothing is left over, "
                 "return p itself (that case is never sampled, but NaN breaks the sampler and its callers).")
        if not close(got, p_equal):
            fail("residual_distribution(p, q) with p == q must return p (nothing is left over, so there "
                 "is no residual to normalise), not zeros or anything else.")
    # A batch where one row has p == q and the other does not: each row decides on its own.
    p_mixed = np.stack([p, np.array([0.6, 0.3, 0.1])])
    q_mixed = np.stack([p, np.array([0.3, 0.3, 0.4])])
    got = _residual_call(residual_distribution, p_mixed, q_mixed, "residual_distribution(p, q) with p of shape (2, 3)")
    if np.isnan(got).any() or not close(got, ref.residual_distribution(p_mixed, q_mixed)):
        fail("residual_distribution is wrong on a batch where only some rows have p == q: decide row by row "
             "(np.where on the row sums), not with one test for the whole batch.")
    # p and q a little apart: the leftover mass is 1e-6, all on token 1, so the residual is one-hot
    # there. A tolerance (np.allclose(p, q), or a threshold on the leftover mass) returns p instead.
    q_near = p + np.array([1e-6, -1e-6, 0.0])
    for p_case, q_case in ((p, q_near), (np.stack([p, p]), np.stack([q_near, q_near]))):
        got = _residual_call(residual_distribution, p_case.copy(), q_case.copy(), "residual_distribution(p, q)")
        if not close(got, ref.residual_distribution(p_case, q_case), rtol=1e-6, atol=1e-9):
            if close(got, p_case):
                fail("residual_distribution returns p when p and q are only close (np.allclose, or a threshold "
                     "on the leftover mass): however small max(p - q, 0) is, the residual is that leftover "
                     "normalised; return p only when nothing at all is left over.")
            fail("residual_distribution is wrong when p and q are close but not equal: normalise the small "
                 "leftover max(p - q, 0) anyway.")


def _residual_call(residual_distribution, p, q, label):
    __tracebackhide__ = True
    p_in, q_in = p.copy(), q.copy()
    out = call(residual_distribution, p_in, q_in)
    unchanged(label, p=(p, p_in), q=(q, q_in))
    return as_float_array(require_ndarray(out, label), label)


# ---------------------------------------------------------------- speculative_sample

SAMPLE_CASES = (  # (p_target, q_draft); chosen so that every known mistake moves some bin by > 0.05
    (np.array([0.40, 0.30, 0.10, 0.10, 0.05, 0.05]), np.array([0.10, 0.10, 0.30, 0.30, 0.10, 0.10])),
    (np.array([0.70, 0.10, 0.10, 0.10]), np.array([0.25, 0.25, 0.25, 0.25])),
    (np.array([0.50, 0.25, 0.25, 0.00]), np.array([0.50, 0.25, 0.25, 0.00])),   # p == q
    (np.array([0.60, 0.40, 0.00, 0.00]), np.array([0.00, 0.00, 0.50, 0.50])),   # disjoint: alpha = 0
)
# Draws per case (12,000 each before: the pair test below made most of them unnecessary). Three exact
# tests per case, each at LEVEL / 12: the token against p (V bins), the accepted flag against alpha
# (2 bins) and the pair (accepted, token) against its exact law (2V bins: min(p, q) for accepted tokens,
# (1 - alpha) * residual for rejected ones). A rejected token never lands where the residual is 0
# (where q >= p), and each named mistake puts mass there or takes it from accepted tokens. Exact binomial
# arithmetic (scipy.stats.binom over each test's acceptance interval; the bound is the best single bin's,
# multiplied over the cases, which are independent): resampling from p passes every test with
# probability below 1e-126 (cases 0 and 1 catch it; in cases 2 and 3 it is right); the residual q - p,
# the deterministic acceptance, tokens drawn from q with every flag True, and a flag always True cannot
# pass (each leaves empty a bin whose test needs counts). The first case that fails names the mistake:
# each named mistake's pair law is tested at 1e-3, in order, and no named mistake's draws can pass an
# earlier one's law (again a bin left empty that the other needs), so a named mistake misses its hint
# only when its own law fails that 1e-3 test (then the token law is tried, as before). p == q and
# disjoint supports get fewer draws: what they test is exact (every flag True, resp. False, and no token
# outside p's support) or far from the right law.
SAMPLE_N = (3_000, 3_000, 1_000, 1_000)


def _mixture(p, q, other):
    """Distribution of a sampler that accepts correctly but resamples from `other` on rejection."""
    alpha = np.minimum(p, q).sum()
    return np.minimum(p, q) + (1 - alpha) * other


def _pair_law(accepted, rejected):
    """The law of code = accepted * V + token: `rejected` (the mass of each token emitted with the flag
    False) then `accepted` (with the flag True)."""
    return np.concatenate([rejected, accepted])


def _sample_pair_laws(p, q):
    """(correct law of the pair, [(hint, law of a named mistake), ...]) for speculative_sample on (p, q)."""
    kept = np.minimum(p, q)
    alpha = kept.sum()
    residual = ref.residual_distribution(p, q)
    correct = _pair_law(kept, (1 - alpha) * residual)
    named = [
        (HINT_SAMPLE_FROM_P, _pair_law(kept, (1 - alpha) * p)),
        (HINT_SAMPLE_Q_MINUS_P, _pair_law(kept, (1 - alpha) * _safe_norm(np.maximum(q - p, 0)))),
        (HINT_SAMPLE_DETERMINISTIC, _pair_law(np.where(p >= q, q, 0.0), q[q > p].sum() * residual)),
    ]
    return correct, named


HINT_SAMPLE_FROM_P = ("on rejection it resamples from p; it must sample from the residual norm(max(p - q, 0)), "
                      "otherwise tokens that q already over-proposes are counted twice.")
HINT_SAMPLE_Q_MINUS_P = ("the residual uses q - p; it must be max(p - q, 0), the mass where the target exceeds "
                         "the draft.")
HINT_SAMPLE_DETERMINISTIC = ("it keeps x exactly when p[x] >= q[x] and rejects it otherwise; a token the draft "
                             "over-proposes must still be kept with probability p[x] / q[x].")
HINT_SAMPLE_FOLLOWS_Q = ("its tokens follow q, not p: the acceptance test must keep x with probability "
                         "min(1, p[x] / q[x]).")


def _name_sample_mistake(p, q, tokens, codes) -> None:
    """Fail with the hint of the first named mistake whose law the draws follow (at level 1e-3): the pair
    (accepted, token) first, then, for a sampler whose flag is off as well, the token alone."""
    __tracebackhide__ = True
    _, named = _sample_pair_laws(p, q)
    for hint, law in named:
        if counts_match_pmf(codes, np.arange(2 * len(p)), law, 1e-3):
            fail(f"speculative_sample: {hint}")
    token_laws = [
        (HINT_SAMPLE_FROM_P, _mixture(p, q, p)),
        (HINT_SAMPLE_Q_MINUS_P, _mixture(p, q, _safe_norm(np.maximum(q - p, 0)))),
        (HINT_SAMPLE_DETERMINISTIC, _deterministic_accept(p, q)),
        (HINT_SAMPLE_FOLLOWS_Q, q),
    ]
    for hint, dist in token_laws:
        if counts_match_pmf(tokens, np.arange(len(p)), dist, 1e-3):
            fail(f"speculative_sample: {hint}")


def _check_sample_output(out, V):
    __tracebackhide__ = True
    if not (isinstance(out, tuple) and len(out) == 2):
        fail("speculative_sample must return a tuple (token, accepted).")
    token, acc = out
    if isinstance(token, (bool, np.bool_)) or not (np.issubdtype(type(token), np.integer) and 0 <= token < V):
        fail(f"speculative_sample returned token {token!r}; it must be an int in 0..V-1.")
    return int(token), bool(acc)


def _deterministic_accept(p, q):
    """Distribution of a sampler that keeps x ~ q exactly when p[x] >= q[x] and otherwise draws the residual."""
    rejected_mass = q[q > p].sum()
    return np.where(p >= q, q, 0.0) + rejected_mass * _safe_norm(np.maximum(p - q, 0))


# Calls per reproducibility run, on the first pair. One call's outcome (token, accepted) repeats in
# an independent run with probability sum_o P(o)**2 = 0.175 for that pair, so two correct runs with
# different seeds agree on all calls with probability 0.175**200, about 1e-151.
REPRO_CALLS = 200


def check_speculative_sample(speculative_sample) -> None:
    """Over SAMPLE_N[c] draws in case c: tokens distributed as p, acceptance frequency sum min(p, q),
    and the pair (accepted, token) as its exact law.

    Level: per case, three exact tests (2V + V + 2 binomial tests in all); the level LEVEL is split
    evenly over the 3 x 4 tests, then (inside counts_match_pmf) over the bins.
    """
    __tracebackhide__ = True
    p0, q0 = SAMPLE_CASES[0]
    runs = []
    for seed in (SEED + 30, SEED + 30, SEED + 31):
        run_rng = np.random.default_rng(seed)
        outs = call_many(speculative_sample, [((p0.copy(), q0.copy(), run_rng), {}) for _ in range(REPRO_CALLS)])
        runs.append([_check_sample_output(out, len(p0)) for out in outs])
    if runs[0] != runs[1]:
        fail("two runs with identically seeded rngs gave different results: draw every random number from "
             "the rng argument (not np.random or a generator of your own).")
    if runs[0] == runs[2]:
        fail("two runs with differently seeded rngs gave identical results: the function ignores its rng "
             "argument (a generator with a fixed seed inside?); draw every random number from rng.")
    per_test = LEVEL / (3 * len(SAMPLE_CASES))
    for case, ((p, q), n) in enumerate(zip(SAMPLE_CASES, SAMPLE_N)):
        rng = np.random.default_rng(SEED + 10 + case)
        tokens = np.empty(n, dtype=np.int64)
        accepted = np.empty(n, dtype=bool)
        calls = [((p.copy(), q.copy(), rng), {}) for _ in range(n)]
        for i, (((p_in, q_in, _), _), out) in enumerate(zip(calls, call_many(speculative_sample, calls))):
            if not (np.array_equal(p_in, p) and np.array_equal(q_in, q)):
                unchanged("speculative_sample(p, q, rng)", p=(p, p_in), q=(q, q_in))
            tokens[i], accepted[i] = _check_sample_output(out, len(p))
        values = np.arange(len(p))
        codes = accepted * len(p) + tokens
        alpha = ref.acceptance_rate(p, q)
        if not counts_match_pmf(tokens, values, p, per_test):
            if accepted.all() and alpha < 0.99:
                fail("speculative_sample accepts every draft token: accept x ~ q only with probability "
                     "min(1, p[x] / q[x]).")
            _name_sample_mistake(p, q, tokens, codes)
            fail("speculative_sample: the emitted tokens are not distributed as p (draw x ~ q, accept "
                 "with probability min(1, p[x]/q[x]), otherwise draw from the residual).")
        if not counts_match_pmf(accepted.astype(int), np.array([0, 1]), np.array([1 - alpha, alpha]), per_test):
            if accepted.all():
                fail("speculative_sample: the tokens are right but the accepted flag is always True; it must "
                     "be True only when the draft token was kept, and False when the token came from the residual.")
            fail("speculative_sample: the accepted flag is True with the wrong frequency; it should be "
                 "True exactly when the draft token was kept, which happens with probability sum min(p, q).")
        correct, _ = _sample_pair_laws(p, q)
        if not counts_match_pmf(codes, np.arange(2 * len(p)), correct, per_test):
            _name_sample_mistake(p, q, tokens, codes)
            fail("speculative_sample: the tokens and the accepted flag are each right on their own, but not "
                 "together: an accepted token is the draft x ~ q, kept with probability min(1, p[x]/q[x]), and "
                 "a rejected one is a draw from the residual norm(max(p - q, 0)), never a token where q >= p.")


def _safe_norm(v):
    s = v.sum()
    return v / s if s > 0 else v


# ---------------------------------------------------------------- verify_round

def _greedy_cases():
    """One-hot rows (temperature 0): the outcome is deterministic. K = 4 and K = 1."""
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
    for drafts, rows in (([3], [3, 0]), ([1], [4, 2])):  # K = 1: accepted + bonus, then rejected
        drafts = np.array(drafts)
        expected = rows if drafts[0] == rows[0] else rows[:1]
        cases.append((drafts, eye[rows], eye[drafts], list(expected)))
    return cases


# Rounds with sampled drafts (12,000 before). Eight exact tests at LEVEL / 8 each: the number of tokens
# per round (K + 1 bins), the token at each position j against p_rows[j] (K + 1 tests of V bins), and at
# each position j < K the pair (kept or not, token) of the rounds that reach j against its exact law
# (2V bins: the draft kept as x with probability min(p_j, q_j)(x); otherwise the correction, the round's
# last token, with probability (1 - beta_j) r_j(x)). The drafts are drawn independently position by
# position, so what happens at j, given that a round reaches it, is independent of the positions before
# it: the pair test is exact whatever number of rounds reaches j. A correction never lands where r_j is
# 0 (q_j >= p_j), so one resampled from p shows at once: exact binomial arithmetic gives it a chance
# below 1e-35 of passing the pair test at position 0 alone (all VERIFY_N rounds reach it), and a chance
# of 1e-17 of giving no round of exactly the K drafts (0.013 per round: position K-1 rejects and the
# resample is the rejected draft), where its hint is found first. A bonus token added only sometimes
# gives such a round with probability 0.12 per round, one never added with 0.41.
VERIFY_V, VERIFY_K, VERIFY_N = 5, 3, 3_000
# Rounds per reproducibility run. Two correct runs with different seeds agree on every round with
# probability prod over rounds of sum_o P(o)**2 (o: the possible outputs of that round), which for
# these rows and drafts is about 1e-40 for 100 rounds (1e-20 for the first 50).
VERIFY_REPRO = 100


def _verify_call(verify_round, drafts, p_rows, q_rows, rng, label="verify_round"):
    __tracebackhide__ = True
    return _verify_calls(verify_round, [drafts], p_rows, q_rows, rng, label)[0]


def _verify_calls(verify_round, drafts_list, p_rows, q_rows, rng, label="verify_round"):
    """verify_round on each drafts array in turn (one rng), each call on its own copies; the
    emitted tokens of each call."""
    __tracebackhide__ = True
    calls = [((drafts.copy(), p_rows.copy(), q_rows.copy(), rng), {}) for drafts in drafts_list]
    outs = call_many(verify_round, calls)
    for drafts, ((d_in, p_in, q_in, _), _) in zip(drafts_list, calls):
        if not (np.array_equal(d_in, drafts) and np.array_equal(p_in, p_rows) and np.array_equal(q_in, q_rows)):
            unchanged(label, draft_tokens=(drafts, d_in), p_rows=(p_rows, p_in), q_rows=(q_rows, q_in))
    return [token_list(out, label) for out in outs]


def check_verify_round(verify_round) -> None:
    """Greedy (one-hot) rounds exactly, then the distribution of rounds with sampled drafts."""
    __tracebackhide__ = True
    for drafts, p_rows, q_rows, expected in _greedy_cases():
        got = _verify_call(verify_round, drafts, p_rows, q_rows, np.random.default_rng(SEED))
        if got == expected:
            continue
        K = len(drafts)
        if len(expected) == K + 1:  # every draft matches the target: K drafts + the bonus token
            if got == expected[:-1]:
                fail("verify_round forgets the bonus token: when all K drafts are accepted, append a token "
                     "sampled from p_rows[K], the target's distribution after the last draft.")
            if len(got) == K + 1 and got[:K] == expected[:K]:
                fail("verify_round draws the bonus token from the wrong row: it must be sampled from "
                     "p_rows[K], the TARGET's distribution after the last draft (not q_rows, not p_rows[K-1]).")
        elif len(got) == K + 1 and got[:K] == [int(d) for d in drafts]:
            fail("verify_round accepts every draft token: in the greedy (one-hot) case a draft that "
                 "differs from the target's choice must be rejected and replaced.")
        fail("verify_round is wrong in the greedy case (one-hot rows, the temperature-0 limit): it "
             "should keep drafts while they match the target's argmax, then emit the target's token.")
    rng_rows = np.random.default_rng(SEED + 20)
    p_rows = rng_rows.dirichlet(np.full(VERIFY_V, 0.7), size=VERIFY_K + 1)
    q_rows = 0.5 * p_rows[:VERIFY_K] + 0.5 * rng_rows.dirichlet(np.full(VERIFY_V, 0.7), size=VERIFY_K)

    def draft(rng):
        return np.array([rng.choice(VERIFY_V, p=q) for q in q_rows])

    repro_drafts = [draft(np.random.default_rng(SEED + 25 + i)) for i in range(VERIFY_REPRO)]
    runs = []
    for seed in (SEED + 23, SEED + 23, SEED + 24):
        run_rng = np.random.default_rng(seed)
        runs.append(_verify_calls(verify_round, repro_drafts, p_rows, q_rows, run_rng))
    if runs[0] != runs[1]:
        fail("verify_round: two runs with identically seeded rngs gave different results: draw every random "
             "number from the rng argument (not np.random or a generator of your own).")
    argmax = [int(t) for t in p_rows.argmax(axis=1)]
    hint_greedy = ("verify_round only ever emits the target's argmax: with sampled (not one-hot) rows, comparing "
                   "the draft with the target's argmax is greedy verification; accept with probability "
                   "min(1, p[x]/q[x]) and sample corrections from the residual.")
    if runs[0] == runs[2]:
        if all(r == argmax[:len(r)] for r in runs[0]):
            fail(hint_greedy)
        fail("verify_round: two runs with differently seeded rngs gave identical results: the function ignores "
             "its rng argument (a generator with a fixed seed inside?); draw every random number from rng.")
    rng_drafts = np.random.default_rng(SEED + 21)
    rng_learner = np.random.default_rng(SEED + 22)
    rounds, only_drafts = [], 0
    all_drafts = [draft(rng_drafts) for _ in range(VERIFY_N)]
    for drafts, out in zip(all_drafts, _verify_calls(verify_round, all_drafts, p_rows, q_rows, rng_learner)):
        if not 1 <= len(out) <= VERIFY_K + 1:
            fail(f"verify_round returned {len(out)} tokens; a round emits between 1 and K+1.")
        if out[:len(out) - 1] != [int(d) for d in drafts[:len(out) - 1]]:
            fail("verify_round must stop at the first rejection: it returns the accepted prefix of the "
                 "drafts followed by ONE token (correction or bonus), but here a token before the last "
                 "one differs from the draft at its position.")
        # A correct correction never equals the rejected draft (the residual has no mass where q >= p),
        # so a round of exactly the K drafts means a forgotten bonus or a wrong correction.
        only_drafts += out == [int(d) for d in drafts]
        rounds.append(out)
    if all(r == argmax[:len(r)] for r in rounds):
        fail(hint_greedy)
    hint_resample_p = ("verify_round resamples a rejected position from p; it must sample from the residual "
                       "norm(max(p - q, 0)) so that the emitted token is distributed exactly as p.")
    # At position j < K, of the rounds that reach it: code = V * (kept) + token, kept when the round goes on.
    pair_codes = [np.array([VERIFY_V * (len(r) > j + 1) + r[j] for r in rounds if len(r) > j])
                  for j in range(VERIFY_K)]
    pair_values = np.arange(2 * VERIFY_V)

    def resampled_from_p() -> bool:
        """Some position's pairs follow the law of corrections drawn from p (at 1e-3) and not the right one;
        or, as before the pair test, its tokens follow the mixture such corrections give and not p."""
        for j in range(VERIFY_K):
            if counts_match_pmf(pair_codes[j], pair_values, _round_pair_law(p_rows[j], q_rows[j], p_rows[j]), 1e-3) \
                    and not counts_match_pmf(pair_codes[j], pair_values, _round_pair_law(p_rows[j], q_rows[j]), 1e-3):
                return True
        for j in range(VERIFY_K):
            at_j = np.array([r[j] for r in rounds if len(r) > j])
            if counts_match_pmf(at_j, np.arange(VERIFY_V), _mixture(p_rows[j], q_rows[j], p_rows[j]), 1e-3) \
                    and not counts_match_pmf(at_j, np.arange(VERIFY_V), p_rows[j], 1e-3):
                return True
        return False

    if only_drafts:
        if resampled_from_p():
            fail(hint_resample_p)
        fail("verify_round returned exactly the K drafts in some rounds: either it forgot the bonus token when "
             "all K were accepted (append a token sampled from p_rows[K] every time), or a correction equalled "
             "the rejected draft, which the residual norm(max(p - q, 0)) never does.")
    lengths = np.array([len(r) for r in rounds])
    alphas = ref.acceptance_rate(p_rows[:VERIFY_K], q_rows)
    reach = np.concatenate([[1.0], np.cumprod(alphas)])                     # P(length > j)
    length_pmf = reach - np.append(reach[1:], 0.0)                          # P(length = j + 1)
    n_tests = 1 + (VERIFY_K + 1) + VERIFY_K
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
            if j < VERIFY_K and resampled_from_p():
                fail(hint_resample_p)
            fail(f"verify_round: the token emitted at position {j} is not distributed as p_rows[{j}] "
                 "(accepted draft, residual sample at the first rejection, or bonus token).")
    for j in range(VERIFY_K):
        if not counts_match_pmf(pair_codes[j], pair_values, _round_pair_law(p_rows[j], q_rows[j]), per_test):
            if resampled_from_p():
                fail(hint_resample_p)
            fail(f"verify_round: at position {j} the tokens follow p_rows[{j}], but the kept drafts and the "
                 "corrections do not follow their laws: keep draft x with probability min(1, p[x]/q[x]); at the "
                 "first rejection emit a draw from the residual norm(max(p - q, 0)), never a token where q >= p.")


def _round_pair_law(p, q, correction=None):
    """The law of V * (kept) + token at one position of verify_round, for the rounds that reach it: the
    draft x ~ q kept with probability min(1, p[x]/q[x]); otherwise the round's last token, drawn from
    `correction` (the residual when None)."""
    kept = np.minimum(p, q)
    if correction is None:
        correction = ref.residual_distribution(p, q)
    return np.concatenate([(1 - kept.sum()) * correction, kept])


# ---------------------------------------------------------------- the contract

CONTRACT = declare(
    globals(),
    Exercise("acceptance_rate", "check_acceptance_rate"),
    Exercise("residual_distribution", "check_residual_distribution"),
    Exercise("speculative_sample", "check_speculative_sample", heavy=SAMPLING_CALLS),
    Exercise("verify_round", "check_verify_round", heavy=SAMPLING_CALLS),
)
