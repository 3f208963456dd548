"""Hidden-test checkers for 05_speculation_in_practice: expected_tokens_positional,
speedup_general, ngram_propose, alpha_from_counters. Deterministic: values compared with the
reference (tolerances for floats, exact equality for token lists) on seeded random inputs.
"""
from __future__ import annotations

import numpy as np

from solutions.checks._common import (
    HINT_EXPONENT_K, SEED, CheckFailure, as_float_array, broadcasts_like_numpy, call, close, diagnose, fail, require_scalar,
    tokens_per_round,
)
from solutions.reference import a05_speculation_in_practice as ref

# ---------------------------------------------------------------- expected_tokens_positional

HINT_POS_NO_ONE = ("the +1 is missing: every round also emits the target's own token (the "
                   "correction at the first rejection, or the bonus token).")
HINT_POS_SUM = ("draft k is emitted only if drafts 1..k were ALL accepted: multiply the alphas "
                "up to k (a running product), do not add them.")
HINT_POS_OFF_BY_ONE = ("off by one in the product: term k is alpha_1 * ... * alpha_k, from the "
                       "first alpha through the k-th, not through the (k-1)-th.")
HINT_POS_MEAN = ("averaging the alphas first and using the i.i.d. formula is not the same: the "
                 "product weights early positions most; multiply the position-wise alphas.")
HINT_POS_FULL_PRODUCT = ("each k has its own product alpha_1..alpha_k; this uses the product of "
                         "ALL K alphas for every term.")


def _profiles(rng):
    out = [[], [0.0], [1.0], [0.5], [1.0, 1.0, 1.0], [0.0, 0.9, 0.9], [0.9, 0.0, 0.9], [0.8, 0.6, 0.4]]
    for length in (1, 2, 3, 4, 5, 6, 8, 12):
        out.append(list(np.round(rng.uniform(0, 1, length), 6)))
        out.append(list(np.round(np.sort(rng.uniform(0.2, 1, length))[::-1], 6)))  # decaying, like heads
    return out


def check_expected_tokens_positional(expected_tokens_positional) -> None:
    __tracebackhide__ = True
    profiles = _profiles(np.random.default_rng(SEED))
    got = []
    for alphas in profiles:
        for as_array in (False, True):
            arg = np.array(alphas, dtype=float) if as_array else list(alphas)
            value = as_float_array(call(expected_tokens_positional, arg), f"expected_tokens_positional({alphas})")
            if value.ndim != 0:  # a (1,) array has the right value but breaks f"{x:.2f}" in the notebook
                fail("expected_tokens_positional must return one number (a float), not an array of shape "
                     f"{value.shape}.")
            got.append(float(value.reshape(-1)[0]))
    want = [ref.expected_tokens_positional(a) for a in profiles for _ in (0, 1)]
    # rtol 1e-6: a float32 implementation (7 digits) is right; every known mistake is off by far more.
    if close(got, want, rtol=1e-6, atol=1e-9):
        return
    inputs = [(a,) for a in profiles for _ in (0, 1)]
    hint = diagnose(got, [
        (HINT_POS_NO_ONE, lambda a: float(np.cumprod(a).sum()) if a else 0.0),
        (HINT_POS_SUM, lambda a: 1.0 + float(np.sum(a))),
        (HINT_POS_OFF_BY_ONE, lambda a: 1.0 + float(np.concatenate([[1.0], np.cumprod(a)[:-1]]).sum()) if a else 1.0),
        (HINT_POS_OFF_BY_ONE, lambda a: float(np.concatenate([[1.0], np.cumprod(a)[:-1]]).sum()) if a else 1.0),
        (HINT_POS_MEAN, lambda a: float(sum(np.mean(a) ** k for k in range(len(a) + 1))) if a else 1.0),
        (HINT_POS_FULL_PRODUCT, lambda a: 1.0 + len(a) * float(np.prod(a)) if a else 1.0),
    ], inputs, rtol=1e-6)
    if hint:
        fail(f"expected_tokens_positional: {hint}")
    empty = [g for g, a in zip(got, inputs) if not a[0]]
    if empty and not close(empty[0], 1.0):
        fail("expected_tokens_positional([]) should be 1: with K = 0 a round emits just the target's token.")
    fail("expected_tokens_positional should be 1 + sum over k of alphas[0] * ... * alphas[k-1] "
         "(check a decaying profile such as [0.9, 0.5, 0.2] by hand).")


# ---------------------------------------------------------------- speedup_general

HINT_GEN_DOUBLE = ("verify_cost already IS the target pass (over K+1 positions): the round costs "
                   "K*c + verify_cost, not 1 + K*c + verify_cost.")
HINT_GEN_TIMES = ("verify_cost is already the cost of the whole (K+1)-position pass, in units of a "
                  "one-position pass: do not multiply it by K+1.")
HINT_GEN_IGNORED = "verify_cost is ignored: the round costs K*c + verify_cost, not 1 + K*c."
HINT_GEN_NO_DISCOUNT = ("K+1 tokens per round assumes every draft is accepted; use the expected "
                        "tokens per round, (1 - alpha**(K+1)) / (1 - alpha).")

ALPHAS = (0.0, 0.2, 0.5, 0.7, 0.85, 0.95, 0.999999, 1.0)
KS = (0, 1, 2, 3, 5, 8)
CS = (0.0, 0.05, 0.3)
VS = (1.0, 1.3, 2.5, 6.0)


def check_speedup_general(speedup_general) -> None:
    __tracebackhide__ = True
    grid = [(a, K, c, v) for a in ALPHAS for K in KS for c in CS for v in VS]
    got = []
    for a, K, c, v in grid:
        value = require_scalar(call(speedup_general, a, K, c, v,
                                    on_error={ZeroDivisionError: "at alpha = 1 the closed form is 0/0; "
                                                                 "a round then emits exactly K+1 tokens."}),
                               f"speedup_general({a:g}, {K}, {c:g}, {v:g})")
        got.append(value)
    want = [ref.speedup_general(*args) for args in grid]
    if not close(got, want, rtol=1e-7, atol=1e-10):
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=1e-7, atol=1e-10)]
        hint = diagnose(got, [
            (HINT_GEN_DOUBLE, lambda a, K, c, v: tokens_per_round(a, K) / (1 + K * c + v)),
            (HINT_GEN_TIMES, lambda a, K, c, v: tokens_per_round(a, K) / (K * c + (K + 1) * v)),
            (HINT_GEN_IGNORED, lambda a, K, c, v: tokens_per_round(a, K) / (1 + K * c)),
            (HINT_EXPONENT_K, lambda a, K, c, v: tokens_per_round(a, K - 1) / (K * c + v)),
            (HINT_GEN_NO_DISCOUNT, lambda a, K, c, v: (K + 1) / (K * c + v)),
        ], grid, rtol=1e-6)
        if hint:
            fail(f"speedup_general: {hint}")
        if any(np.isnan(got[i]) and grid[i][0] == 1.0 for i in bad):
            fail("speedup_general returns nan at alpha = 1: the closed form is 0/0 there, and a round "
                 "emits exactly K+1 tokens (use np.where, as in notebook 01).")
        a, K, c, v = grid[bad[0]]
        fail(f"speedup_general({a:g}, {K}, {c:g}, {v:g}) is wrong: expected tokens per round "
             "(1 - alpha**(K+1)) / (1 - alpha), divided by K*c + verify_cost.")
    alpha = np.array([0.0, 0.5, 0.9, 1.0])[:, None, None]
    K = np.arange(0, 9)[None, :, None]
    verify = np.array([1.0, 1.5, 4.0])[None, None, :]
    got = as_float_array(call(speedup_general, alpha, K, 0.1, verify), "speedup_general(<arrays>)")
    broadcasts_like_numpy(got, ref.speedup_general(alpha, K, 0.1, verify), "speedup_general",
                          "(4,1,1), (1,9,1), a float and (1,1,3)", "alpha = 1")


# ---------------------------------------------------------------- ngram_propose

HINT_NG_ITSELF = ("this proposes the matched n-gram itself; propose the tokens that FOLLOWED "
                  "its earlier occurrence (the n-gram is already in the context).")
HINT_NG_LONG = "the proposal is longer than K: return at most K tokens."
HINT_NG_FIRST = ("this uses the FIRST occurrence of the n-gram (the earliest, as Hugging Face's and vLLM's "
                 "proposers take for their longest matching key); this exercise asks for the most recent "
                 "earlier one, the course's choice for editing workloads.")
HINT_NG_OFF_BY_ONE = ("off by one: the proposal must start right after the matched n-gram, not on "
                      "its last token.")
HINT_NG_SELF = ("this never finds a match: the last n tokens always match themselves at the end of "
                "the context, where nothing follows; search the occurrences that END before the "
                "last token.")
HINT_NG_ALL_OR_NOTHING = ("when fewer than K tokens follow the match, propose those few; this "
                          "returns [] instead.")
HINT_NG_LOOKS_BACK = ("when fewer than K tokens follow the most recent match, propose those few; do not skip "
                      "it for an older match with a longer continuation.")
HINT_NG_IGNORES_N = "the key must be the last n tokens, with the n that was passed in."
HINT_NG_NO_OVERLAP = ("an earlier occurrence may overlap the last n tokens (in `a a a` with n = 2 the "
                      "occurrence at positions 0-1 counts); only the suffix itself is excluded.")


def _cases(rng):
    cases = [([1, 2, 3, 4, 1, 2], 3, 2), ([1, 2, 3, 4, 1, 2], 9, 2), ([1, 2, 3, 4], 3, 2), ([], 3, 2),
             ([5], 2, 1), ([5, 5], 2, 1), ([5, 5, 5, 5], 3, 2), ([1, 2, 1, 2, 1, 2], 4, 2), ([1, 2, 3, 1, 2], 0, 2),
             ([7, 8, 9, 7, 8, 9, 7, 8], 5, 3), ([1, 2, 3, 9, 2, 3, 1, 2, 3], 4, 3)]
    for length in (6, 10, 20, 40, 80):
        for vocab in (2, 3, 5):
            for n in (1, 2, 3, 4):
                seq = [int(t) for t in rng.integers(0, vocab, length)]
                cases.append((seq, int(rng.integers(1, 9)), n))
    return cases


def _lookup(ctx, K, n, latest=True, shift=0, cap=True, overlap=True):
    """Prompt lookup with one known mistake switched on: the first occurrence instead of the most
    recent, a proposal shifted by `shift` tokens, no cap at K, or occurrences that overlap the
    suffix refused."""
    if K <= 0 or len(ctx) <= n:
        return []
    last = len(ctx) - n - 1 if overlap else len(ctx) - 2 * n
    for s in (range(last, -1, -1) if latest else range(0, last + 1)):
        if ctx[s:s + n] == ctx[-n:]:
            start = s + n + shift
            return ctx[start:start + K] if cap else ctx[start:]
    return []


def _all_or_nothing(ctx, K, n):
    out = ref.ngram_propose(ctx, K, n)
    return out if len(out) == K else []


def _looks_back(ctx, K, n):
    """The most recent match with K tokens after it, else the most recent match's few."""
    if K <= 0 or len(ctx) <= n:
        return []
    fallback = None
    for s in range(len(ctx) - n - 1, -1, -1):
        if ctx[s:s + n] == ctx[-n:]:
            if len(ctx) - (s + n) >= K:
                return ctx[s + n:s + n + K]
            fallback = ctx[s + n:] if fallback is None else fallback
    return fallback or []


def _n2(ctx, K, n):
    return ref.ngram_propose(ctx, K, 2)


def _as_tokens(value, label):
    __tracebackhide__ = True
    try:
        out = [int(t) for t in value]
    except (TypeError, ValueError):
        fail(f"{label} returned {type(value).__name__}; return a list of token ids (ints).")
    if any(float(t) != t for t in value):
        fail(f"{label} returned non-integer tokens; return token ids from the context.")
    return out


def check_ngram_propose(ngram_propose) -> None:
    __tracebackhide__ = True
    cases = _cases(np.random.default_rng(SEED + 5))
    got = []
    for ctx, K, n in cases:
        label = f"ngram_propose({ctx if len(ctx) < 12 else '<' + str(len(ctx)) + ' tokens>'}, {K}, n={n})"
        got.append(_as_tokens(call(ngram_propose, list(ctx), K, n), label))
    want = [ref.ngram_propose(ctx, K, n) for ctx, K, n in cases]
    if got == want:
        # the context must not be modified, and the default n is 2
        ctx = [3, 1, 4, 1, 5, 9, 2, 6, 1, 4, 1]
        before = list(ctx)
        default = _as_tokens(call(ngram_propose, ctx, 3), "ngram_propose(context, 3)")
        if ctx != before:
            fail("ngram_propose must not modify the context it was given.")
        if default != ref.ngram_propose(before, 3, 2):
            fail("ngram_propose(context, K) must use n = 2 by default.")
        return
    if any(len(g) > K for g, (_, K, _) in zip(got, cases)):
        fail(f"ngram_propose: {HINT_NG_LONG}")
    if all(g == [] for g in got):
        fail(f"ngram_propose: {HINT_NG_SELF}")
    for hint, wrong in ((HINT_NG_ITSELF, lambda c, K, n: _lookup(c, K, n, shift=-n)),
                        (HINT_NG_FIRST, lambda c, K, n: _lookup(c, K, n, latest=False)),
                        (HINT_NG_OFF_BY_ONE, lambda c, K, n: _lookup(c, K, n, shift=-1)),
                        (HINT_NG_ALL_OR_NOTHING, _all_or_nothing), (HINT_NG_LOOKS_BACK, _looks_back),
                        (HINT_NG_IGNORES_N, _n2),
                        (HINT_NG_LONG, lambda c, K, n: _lookup(c, K, n, cap=False)),
                        (HINT_NG_NO_OVERLAP, lambda c, K, n: _lookup(c, K, n, overlap=False))):
        if all(g == wrong(list(ctx), K, n) for g, (ctx, K, n) in zip(got, cases)):
            fail(f"ngram_propose: {hint}")
    i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
    ctx, K, n = cases[i]
    shown = ctx if len(ctx) <= 12 else f"<{len(ctx)} tokens>"
    fail(f"ngram_propose({shown}, {K}, n={n}) proposed the wrong tokens: find the most recent "
         "earlier occurrence of the last n tokens and propose up to K tokens that followed it.")


# ---------------------------------------------------------------- alpha_from_counters

# The notebook promises alpha within 1e-6: 20 bisection steps (5e-7), brentq, numpy roots and Newton all
# meet it, and every known mistake misses by more than 1e-2 on some of these counters.
ALPHA_TOL = 1e-6

HINT_CNT_RATE = ("this is the dashboard's acceptance rate, accepted / drafted, which is biased low: drafts "
                 "after a round's first rejection are never tested but count as drafted; solve "
                 "alpha + alpha**2 + ... + alpha**K = accepted per round instead.")
HINT_CNT_TOKENS = ("the left side counts tokens per round, (1 - alpha**(K+1)) / (1 - alpha), which includes the "
                   "target's own token, but accepted / num_drafts counts accepted drafts only: solve "
                   "alpha + ... + alpha**K = accepted per round.")
HINT_CNT_LENGTH = ("the mean acceptance length 1 + accepted / num_drafts counts the target's own token too; "
                   "accepted drafts per round are accepted / num_drafts, without the 1.")
HINT_CNT_K_PLUS_ONE = ("wrong K: a round proposes K = num_draft_tokens / num_drafts drafts; the K+1 emission "
                       "slots include the target's own token, which the accepted counter never counts.")
HINT_CNT_K_TOTAL = ("wrong K: K is the drafts per round, num_draft_tokens / num_drafts, not the total "
                    "num_draft_tokens.")
HINT_CNT_UNTRUNCATED = ("this is accepted / (accepted + num_drafts), the alpha of an untruncated chain "
                        "(alpha / (1 - alpha) accepted per round, one rejection in every round); a round stops "
                        "after K drafts, and one that accepted all K had no rejection: solve "
                        "alpha + ... + alpha**K = accepted per round.")
HINT_CNT_EXPONENT = ("exponent off by one: accepted drafts per round are alpha + ... + alpha**K = "
                     "alpha * (1 - alpha**K) / (1 - alpha), which is the tokens per round "
                     "(1 - alpha**(K+1)) / (1 - alpha) minus 1.")
HINT_CNT_FLOOR = "integer division (//) rounds the accepted drafts per round down; divide with /."
HINT_CNT_ALL = ("every draft accepted (accepted == drafted) must give alpha = 1.0: the closed form is 0/0 "
                "there, so handle that case on its own.")
HINT_CNT_NONE = "no draft accepted must give alpha = 0.0."
HINT_CNT_CAPPED = ("K = num_draft_tokens / num_drafts is not a whole number here (some rounds proposed fewer "
                   "drafts): use the closed form alpha * (1 - alpha**K) / (1 - alpha) with that real K, not a "
                   "sum over a rounded K.")
HINT_CNT_MIXTURE = ("this mixes rounds of floor(K) and ceil(K) drafts; the notebook's convention for a fractional "
                    "K is the closed form alpha * (1 - alpha**K) / (1 - alpha) with the real K.")


def _solve_increasing(g, target, lo=0.0, hi=1.0):
    """The x in [lo, hi] with g(x) = target for an increasing g; nan when there is none."""
    if not g(lo) <= target <= g(hi):
        return float("nan")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        lo, hi = (mid, hi) if g(mid) < target else (lo, mid)
    return 0.5 * (lo + hi)


def _power_sum(a, K):
    """a + a**2 + ... + a**K, for a real K > 0 too (the closed form; K at a = 1)."""
    return float(K) if a == 1.0 else a * (1.0 - a ** K) / (1.0 - a)


def _chain_alpha(K, per_round, tokens=False):
    """alpha of the chain with K drafts per round and `per_round` accepted drafts (or, with
    tokens=True, `per_round` tokens, the +1 included) per round; nan when none fits."""
    return _solve_increasing(lambda a: _power_sum(a, K) + (1.0 if tokens else 0.0), per_round)


def _mixture_alpha(D, T, A):
    K = T / D
    lo, frac = int(np.floor(K)), K - np.floor(K)
    g = lambda a: sum(a ** k for k in range(1, lo + 1)) + frac * a ** (lo + 1)  # noqa: E731
    return _solve_increasing(g, A / D)


COUNTER_MISTAKES = [
    (HINT_CNT_RATE, lambda D, T, A: A / T),
    (HINT_CNT_TOKENS, lambda D, T, A: _chain_alpha(T / D, A / D, tokens=True)),
    (HINT_CNT_LENGTH, lambda D, T, A: _chain_alpha(T / D, 1 + A / D)),
    (HINT_CNT_K_PLUS_ONE, lambda D, T, A: _chain_alpha(T / D + 1, A / D)),
    (HINT_CNT_K_TOTAL, lambda D, T, A: _chain_alpha(T, A / D)),
    (HINT_CNT_EXPONENT, lambda D, T, A: _chain_alpha(T / D - 1, A / D)),
    (HINT_CNT_UNTRUNCATED, lambda D, T, A: A / (A + D)),
    (HINT_CNT_FLOOR, lambda D, T, A: _chain_alpha(T / D, A // D)),
]
CAPPED_MISTAKES = [
    (HINT_CNT_CAPPED, lambda D, T, A: _chain_alpha(T // D, A / D)),          # int(K)
    (HINT_CNT_CAPPED, lambda D, T, A: _chain_alpha(round(T / D), A / D)),    # round(K)
    (HINT_CNT_CAPPED, lambda D, T, A: _chain_alpha(-(-T // D), A / D)),     # ceil(K)
    (HINT_CNT_MIXTURE, _mixture_alpha),
]


def _counter_cases(rng):
    """(num_drafts, num_draft_tokens, num_accepted_tokens) with a whole K = drafted / drafts: the edges
    (nothing accepted, everything accepted, one round, K = 1) and counters of simulated-looking runs
    whose accepted per round is not a whole number."""
    cases = [(10, 40, 0), (10, 40, 40), (1, 4, 2), (1, 1, 0), (1, 1, 1), (7, 7, 3), (1, 16, 15), (8, 24, 7),
             (4, 8, 3), (3, 15, 1), (250, 1000, 999), (10_007, 50_035, 21_011)]
    for K in (1, 2, 3, 4, 5, 6, 8, 12, 16):
        for D in (3, 17, 250, 10_007):
            alpha = float(rng.uniform(0.05, 0.97))
            A = int(round(D * _power_sum(alpha, K)))
            if A % D == 0 and 0 < A < K * D:
                A += 1
            cases.append((D, K * D, min(A, K * D)))
    return cases


def _capped_cases():
    """Counters whose K = drafted / drafts is not whole (rounds capped below K)."""
    return [(10, 35, 20), (4, 9, 5), (100, 370, 211), (3, 4, 2), (1000, 3999, 2500), (7, 30, 29), (6, 11, 1),
            (250, 1999, 1500), (12, 100, 60), (10, 35, 35), (10, 35, 0)]


def _counter_values(alpha_from_counters, cases):
    """The learner's alpha per case (nan where it raised), and the first error's message."""
    __tracebackhide__ = True
    got, first_error = [], None
    for D, T, A in cases:
        try:
            got.append(require_scalar(call(alpha_from_counters, D, T, A), f"alpha_from_counters({D}, {T}, {A})"))
        except CheckFailure as failure:
            if str(failure).startswith("not implemented") or "must return one number" in str(failure):
                raise
            got.append(float("nan"))
            first_error = first_error or str(failure)
    return got, first_error


def _which_mistake(got, cases, mistakes) -> str | None:
    """The hint of the first mistake that reproduces every value the learner returned where the
    mistake is defined (at least five of them)."""
    for hint, wrong in mistakes:
        try:
            pairs = [(g, wrong(*case)) for g, case in zip(got, cases)]
        except (ArithmeticError, ValueError):  # a wrong model that does not apply to these counters
            continue
        pairs = [(g, w) for g, w in pairs if np.isfinite(w) and np.isfinite(g)]
        if len(pairs) >= 5 and all(abs(g - w) <= 10 * ALPHA_TOL for g, w in pairs):
            return hint
    return None


def _alpha_ok(g, w) -> bool:
    return bool(np.isfinite(g) and abs(g - w) <= ALPHA_TOL)


def _check_counters(alpha_from_counters, cases, mistakes, capped: bool) -> None:
    __tracebackhide__ = True
    got, error = _counter_values(alpha_from_counters, cases)
    want = [ref.alpha_from_counters(*case) for case in cases]
    ok = [_alpha_ok(g, w) for g, w in zip(got, want)]
    if all(ok):
        return
    hint = _which_mistake(got, cases, mistakes)
    if hint:
        fail(f"alpha_from_counters: {hint}")
    bad = [case for case, good in zip(cases, ok) if not good]
    if all(A == T for _, T, A in bad):
        fail(f"alpha_from_counters: {HINT_CNT_ALL}")
    if all(A == 0 for _, _, A in bad):
        fail(f"alpha_from_counters: {HINT_CNT_NONE}")
    D, T, A = bad[0]
    note = f" (K = {T}/{D} is fractional here: the closed form holds for a real K)" if capped else ""
    if error and not np.isfinite(got[cases.index(bad[0])]):
        fail(error + note)
    fail(f"alpha_from_counters({D}, {T}, {A}) is wrong: with K = num_draft_tokens / num_drafts, solve "
         "alpha * (1 - alpha**K) / (1 - alpha) = num_accepted_tokens / num_drafts for alpha in [0, 1] (to 1e-6)"
         + note + ".")


def check_alpha_from_counters(alpha_from_counters) -> None:
    """Whole K (every round proposed the same number of drafts), edges included: alpha within 1e-6."""
    __tracebackhide__ = True
    _check_counters(alpha_from_counters, _counter_cases(np.random.default_rng(SEED + 12)), COUNTER_MISTAKES,
                    capped=False)


def check_alpha_from_counters_capped(alpha_from_counters) -> None:
    """A fractional K = drafted / drafts: the closed form alpha (1 - alpha**K) / (1 - alpha) with the real K."""
    __tracebackhide__ = True
    _check_counters(alpha_from_counters, _capped_cases(), CAPPED_MISTAKES + COUNTER_MISTAKES, capped=True)
