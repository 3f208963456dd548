"""Hidden-test checkers for 05_speculation_in_practice: expected_tokens_positional,
speedup_general, ngram_propose, alpha_from_counters. Deterministic: values compared with the
reference (tolerances for floats, exact equality for token lists) on seeded random inputs.

speedup_general is called on a grid without the overhead (four arguments, the default), then on
the same grid with overheads passed fifth and as overhead=..., each grid in one exchange with the
learner's kernel; a function still written with four arguments gets a hint that names the
missing argument, not a bare TypeError.
"""
from __future__ import annotations

import re

import numpy as np

from solutions.checks._common import (
    HINT_EXPONENT_K, HINT_NO_DISCOUNT, HINT_NO_TARGET_TOKEN, SEED, CheckFailure, Exercise, as_float_array,
    broadcasts_like_numpy, call, call_many, close, declare, diagnose, fail, require_scalar, tokens_per_round,
)
from solutions.reference import a05_speculation_in_practice as ref

# ---------------------------------------------------------------- expected_tokens_positional

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
        (HINT_NO_TARGET_TOKEN, lambda a: float(np.cumprod(a).sum()) if a else 0.0),
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
HINT_GEN_SIGNATURE = ("speedup_general takes an overhead argument: define it as speedup_general(alpha, K, c, "
                      "verify_cost, overhead=0.0), so that it can be passed fifth or as overhead=..., and add "
                      "it to the round's cost.")
HINT_GEN_NO_OVERHEAD = ("overhead is ignored: the round costs K*c + verify_cost + overhead (the round's work "
                        "beyond its passes), not K*c + verify_cost.")
HINT_GEN_PER_TOKEN = ("the overhead is paid once per ROUND, not once per emitted token (or verified position): "
                      "the round costs K*c + verify_cost + overhead, whatever it emits.")
HINT_GEN_SUBTRACTED = ("the overhead is time, paid once per round: add it to the round's cost, K*c + "
                       "verify_cost + overhead, do not subtract it from the speedup.")
HINT_GEN_ON_C = ("the overhead is paid once per round, not with every draft pass: the round costs "
                 "K*c + verify_cost + overhead, not K*(c + overhead) + verify_cost.")
HINT_GEN_SCALED = ("the overhead is in plain decoding steps, added once to the round's cost (K*c + "
                   "verify_cost + overhead), not a fraction that scales it.")

ALPHAS = (0.0, 0.2, 0.5, 0.7, 0.85, 0.95, 0.999999, 1.0)
KS = (0, 1, 2, 3, 5, 8)
CS = (0.0, 0.05, 0.3)
VS = (1.0, 1.3, 2.5, 6.0)
OS = (0.0, 0.04, 0.2, 1.5)  # per-round overheads in plain steps: none, a quiet CPU's, about an H200's, a slow loop's
ON_ERROR = {ZeroDivisionError: "at alpha = 1 the closed form is 0/0; a round then emits exactly K+1 tokens."}
# The TypeError of a function still written with the old four arguments, or with no default for overhead.
_OLD_SIGNATURE = re.compile(r"raised TypeError: .*\(\) (takes (from )?\d+ (to \d+ )?positional arguments? but "
                            r"\d+ (was|were) given|got an unexpected keyword argument 'overhead'|missing 1 required "
                            r"positional argument: 'overhead')")


def _general_calls(speedup_general, calls: list, labels: list) -> list[float]:
    """The scalar values of the calls [(args, kwargs), ...], in one exchange; a function without the
    `overhead` argument gets HINT_GEN_SIGNATURE instead of a bare TypeError."""
    __tracebackhide__ = True
    try:
        values = call_many(speedup_general, calls, name="speedup_general", on_error=ON_ERROR)
    except CheckFailure as failure:
        if _OLD_SIGNATURE.search(str(failure)):
            fail(HINT_GEN_SIGNATURE)
        raise
    return [require_scalar(value, label) for value, label in zip(values, labels)]


def _general_label(args: tuple, keyword: bool = False) -> str:
    """The call as the learner would write it: speedup_general(a, K, c, v[, o or overhead=o])."""
    a, K, c, v, *o = args
    shown = [f"{a:g}", f"{K}", f"{c:g}", f"{v:g}"] + [f"overhead={x:g}" if keyword else f"{x:g}" for x in o]
    return f"speedup_general({', '.join(shown)})"


def _general_grid(got: list, grid: list, mistakes: list, keyword: bool = False) -> None:
    """Compare with the reference on `grid` (argument tuples); on a mismatch name the mistake."""
    __tracebackhide__ = True
    want = [ref.speedup_general(*args) for args in grid]
    if close(got, want, rtol=1e-7, atol=1e-10):
        return
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=1e-7, atol=1e-10)]
    hint = diagnose(got, mistakes, grid, rtol=1e-6)
    if hint:
        fail(f"speedup_general: {hint}")
    if any(np.isnan(got[i]) and grid[i][0] == 1.0 for i in bad):
        fail("speedup_general returns nan at alpha = 1: the closed form is 0/0 there, and a round "
             "emits exactly K+1 tokens (use np.where, as in notebook 01).")
    cost = "K*c + verify_cost + overhead" if len(grid[0]) == 5 else "K*c + verify_cost"
    fail(f"{_general_label(grid[bad[0]], keyword)} is wrong: expected tokens per round "
         f"(1 - alpha**(K+1)) / (1 - alpha), divided by {cost}.")


def check_speedup_general(speedup_general) -> None:
    __tracebackhide__ = True
    # 1. Without an overhead (the default): the four-argument calls of notebook 05's own cells.
    grid = [(a, K, c, v) for a in ALPHAS for K in KS for c in CS for v in VS]
    got = _general_calls(speedup_general, [(args, {}) for args in grid], [_general_label(args) for args in grid])
    _general_grid(got, grid, [
        (HINT_GEN_DOUBLE, lambda a, K, c, v: tokens_per_round(a, K) / (1 + K * c + v)),
        (HINT_GEN_TIMES, lambda a, K, c, v: tokens_per_round(a, K) / (K * c + (K + 1) * v)),
        (HINT_GEN_IGNORED, lambda a, K, c, v: tokens_per_round(a, K) / (1 + K * c)),
        (HINT_EXPONENT_K, lambda a, K, c, v: tokens_per_round(a, K - 1) / (K * c + v)),
        (HINT_NO_DISCOUNT, lambda a, K, c, v: (K + 1) / (K * c + v)),
    ])
    # 2. With overheads, passed fifth and then by keyword: both must give the reference's values.
    grid = [(a, K, c, v, o) for a in ALPHAS for K in KS for c in CS for v in VS for o in OS]
    mistakes = [
        (HINT_GEN_NO_OVERHEAD, lambda a, K, c, v, o: tokens_per_round(a, K) / (K * c + v)),
        (HINT_GEN_PER_TOKEN, lambda a, K, c, v, o: tokens_per_round(a, K) / (K * c + v + o * tokens_per_round(a, K))),
        (HINT_GEN_PER_TOKEN, lambda a, K, c, v, o: tokens_per_round(a, K) / (K * c + v + o * (K + 1))),
        (HINT_GEN_SUBTRACTED, lambda a, K, c, v, o: tokens_per_round(a, K) / (K * c + v) - o),
        (HINT_GEN_ON_C, lambda a, K, c, v, o: tokens_per_round(a, K) / (K * (c + o) + v)),
        (HINT_GEN_SCALED, lambda a, K, c, v, o: tokens_per_round(a, K) / ((K * c + v) * (1 + o))),
    ]
    for keyword in (False, True):
        calls = [((a, K, c, v), {"overhead": o}) if keyword else ((a, K, c, v, o), {}) for a, K, c, v, o in grid]
        got = _general_calls(speedup_general, calls, [_general_label(args, keyword) for args in grid])
        _general_grid(got, grid, mistakes, keyword)
    # 3. Broadcasting, without and with an array of overheads.
    alpha = np.array([0.0, 0.5, 0.9, 1.0])[:, None, None]
    K = np.arange(0, 9)[None, :, None]
    verify = np.array([1.0, 1.5, 4.0])[None, None, :]
    got = as_float_array(call(speedup_general, alpha, K, 0.1, verify), "speedup_general(<arrays>)")
    broadcasts_like_numpy(got, ref.speedup_general(alpha, K, 0.1, verify), "speedup_general",
                          "(4,1,1), (1,9,1), a float and (1,1,3)", "alpha = 1")
    overhead = np.array([0.0, 0.2])[:, None, None, None]
    got = as_float_array(call(speedup_general, alpha, K, 0.1, verify, overhead), "speedup_general(<arrays>)")
    broadcasts_like_numpy(got, ref.speedup_general(alpha, K, 0.1, verify, overhead), "speedup_general",
                          "(4,1,1), (1,9,1), a float, (1,1,3) and an overhead of (2,1,1,1)", "alpha = 1")


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
         + note + ".", generic=True)


def check_alpha_from_counters(alpha_from_counters) -> None:
    """Whole K (every round proposed the same number of drafts), edges included: alpha within 1e-6."""
    __tracebackhide__ = True
    _check_counters(alpha_from_counters, _counter_cases(np.random.default_rng(SEED + 12)), COUNTER_MISTAKES,
                    capped=False)


def check_alpha_from_counters_capped(alpha_from_counters) -> None:
    """A fractional K = drafted / drafts: the closed form alpha (1 - alpha**K) / (1 - alpha) with the real K."""
    __tracebackhide__ = True
    _check_counters(alpha_from_counters, _capped_cases(), CAPPED_MISTAKES + COUNTER_MISTAKES, capped=True)


# ---------------------------------------------------------------- roofline: roofline_time, verification_cost, knee_tokens
#
# One forward pass in which each of `batch` sequences scores `tokens` new positions after `context` cached ones:
#   bytes = params * bytes_per_param + batch * context * kv_bytes_per_token
#   flops = batch * tokens * (2 * params + attn_flops_per_pair * context)
#   time  = max(bytes / bandwidth, flops / peak flops)
# Every known mistake is a change to one of those lines (a `_Roofline` below); the three checkers
# compare with the reference on seeded random models, machines and shapes, and name the change
# that reproduces every value the learner returned. Deterministic (no statistical test): a correct
# answer cannot fail by chance.

ROOF_RTOL = 1e-6  # float32 arithmetic (7 digits) is right; every known mistake is off by far more somewhere

HINT_RT_WEIGHTS_PER_TOKEN = ("the weights are read once per pass, not once per scored token: every token of every "
                             "sequence in the batch reuses the same weight bytes (only the key/value cache grows "
                             "with the batch).")
HINT_RT_NO_KV = ("the bytes leave out the key/value cache: every sequence also reads context x kv_bytes_per_token "
                 "cached bytes in each pass.")
HINT_RT_KV_ONCE = ("the key/value cache is read once per sequence, not once for the whole batch: each sequence has "
                   "its own context, so the cache bytes are batch x context x kv_bytes_per_token.")
HINT_RT_NO_BATCH = ("the flops forget the batch: a pass scores batch x tokens positions (B(K+1) when B sequences "
                    "verify K drafts each), not the K+1 tokens of one sequence.")
HINT_RT_SUM = ("the roofline takes the larger of the two times, max(bytes / bandwidth, flops / peak flops), not "
               "their sum: memory traffic and arithmetic overlap.")
HINT_RT_NO_ATTN = ("the flops leave out attention: each new token also spends attn_flops_per_pair on every one of "
                   "the context tokens in its cache.")
HINT_RT_HALF_FLOPS = ("a parameter costs 2 flops per scored token (one multiply and one add), so the weight flops "
                      "are 2 x params per token, not params.")
HINT_RT_PARAM_BYTES = "the weight bytes are params x bytes_per_param, not the parameter count."
HINT_RT_SECONDS = "return seconds: bytes / (bytes per second) and flops / (flop per second), with no unit scaling."
HINT_VC_BATCH_ONE = ("the baseline is a one-token pass of the SAME batch, roofline_time(batch, 1, ...), the plain "
                     "decoding step that the round replaces, not a batch-1 pass.")
HINT_VC_K_BASE = ("the baseline scores 1 token per sequence, not K: verification scores K+1 positions per sequence "
                  "and is priced in plain decoding steps.")
HINT_VC_CONSTANT = ("verify_cost is 1 only while the (K+1)-token pass stays memory-bound and K+1 only when both "
                    "passes are compute-bound: take the ratio of the two roofline times.")
HINT_VC_INVERTED = ("the ratio is upside down: verify_cost is the (K+1)-token pass divided by the one-token pass, "
                    "at least 1.")
HINT_KN_PER_SEQ = ("this is the knee in tokens per sequence; return the total tokens per pass (batch x tokens per "
                   "sequence) at which flops / peak flops reaches bytes / bandwidth.")
HINT_KN_ROUNDED = "return the crossing point as a real number, not rounded to a whole token."
HINT_KN_INVERTED = ("the hardware ratio is inverted: at the knee tokens x flops per token / peak flops = bytes / "
                    "bandwidth, so the tokens are peak flops x bytes / (bandwidth x flops per token).")


class _Roofline:
    """The course's roofline with at most one known mistake switched on."""

    def __init__(self, weights_per_token=False, kv="batch", batch_flops=True, combine=max, attention=True,
                 flops_per_param=2, param_bytes=True):
        self.weights_per_token, self.kv, self.batch_flops, self.combine = weights_per_token, kv, batch_flops, combine
        self.attention, self.flops_per_param, self.param_bytes = attention, flops_per_param, param_bytes

    def bytes(self, batch, tokens, context, m):
        weights = m["params"] * (m["bytes_per_param"] if self.param_bytes else 1)
        if self.weights_per_token:
            weights *= batch * tokens
        kv = {"batch": batch, "once": 1, "none": 0}[self.kv] * context * m["kv_bytes_per_token"]
        return float(weights + kv)

    def flops_per_token(self, context, m):
        return float(self.flops_per_param * m["params"] + (m["attn_flops_per_pair"] * context if self.attention else 0))

    def time(self, batch, tokens, context, m, hw):
        flops = (batch if self.batch_flops else 1) * tokens * self.flops_per_token(context, m)
        return float(self.combine(self.bytes(batch, tokens, context, m) / hw["bandwidth"], flops / hw["flops"]))

    def verification_cost(self, batch, K, context, m, hw):
        return self.time(batch, K + 1, context, m, hw) / self.time(batch, 1, context, m, hw)

    def knee(self, batch, context, m, hw):
        """Total tokens per pass where the two terms are equal (nan where the mistake has no crossing)."""
        per_token = self.flops_per_token(context, m) / hw["flops"]  # seconds of flops per scored token
        if self.weights_per_token:  # both terms grow with the tokens: solve T per_token = (T W + kv) / bandwidth
            slope = per_token - self.bytes(1, 1, 0, m) / hw["bandwidth"]
            kv = (self.bytes(batch, 1, context, m) - self.bytes(1, 1, 0, m) * batch) / hw["bandwidth"]
            return kv / slope if slope > 0 else float("nan")
        tokens = self.bytes(batch, 1, context, m) / hw["bandwidth"] / per_token  # tokens per pass
        return tokens * batch if not self.batch_flops else tokens  # a per-sequence solve, times the batch


def _add(a, b):
    return a + b


ROOFLINE_MISTAKES = [  # (hint, the roofline with that mistake), tried in this order
    (HINT_RT_WEIGHTS_PER_TOKEN, _Roofline(weights_per_token=True)),
    (HINT_RT_NO_KV, _Roofline(kv="none")),
    (HINT_RT_KV_ONCE, _Roofline(kv="once")),
    (HINT_RT_NO_BATCH, _Roofline(batch_flops=False)),
    (HINT_RT_SUM, _Roofline(combine=_add)),
    (HINT_RT_NO_ATTN, _Roofline(attention=False)),
    (HINT_RT_HALF_FLOPS, _Roofline(flops_per_param=1)),
    (HINT_RT_PARAM_BYTES, _Roofline(param_bytes=False)),
]


def _machines(rng, n):
    """n random (model, hardware) pairs: transformers from 1M to 200B parameters, grouped-query attention,
    1-4 bytes per parameter; machines from 10 GB/s to 10 TB/s with 5 to 2000 flops per byte."""
    out = []
    for _ in range(n):
        layers, head_dim = int(rng.integers(2, 81)), int(rng.choice([32, 64, 128]))
        kv_heads = int(rng.choice([1, 2, 4, 8, 16]))
        q_heads = kv_heads * int(rng.choice([1, 2, 4, 8]))
        bpp = int(rng.choice([1, 2, 4]))
        model = dict(params=int(10 ** rng.uniform(6, 11.3)), bytes_per_param=bpp,
                     kv_bytes_per_token=2 * layers * kv_heads * head_dim * bpp,
                     attn_flops_per_pair=4 * layers * q_heads * head_dim)
        bandwidth = float(10 ** rng.uniform(10, 13))
        out.append((model, dict(bandwidth=bandwidth, flops=bandwidth * float(10 ** rng.uniform(0.7, 3.3)))))
    return out


LLAMA_LIKE = (dict(params=8_030_261_248, bytes_per_param=2, kv_bytes_per_token=131_072, attn_flops_per_pair=524_288),
              dict(bandwidth=3.35e12, flops=989e12))
BATCHES, CONTEXTS = (1, 2, 3, 8, 16, 64, 256), (0, 1, 100, 1024, 4096, 32_768)


def _shapes(rng, n):
    """n (batch, tokens, context) triples, Python ints."""
    return [(int(rng.choice(BATCHES)), int(rng.choice([1, 2, 3, 5, 9, 17, 64])), int(rng.choice(CONTEXTS)))
            for _ in range(n)]


def _roof_values(fn, name, calls):
    __tracebackhide__ = True
    values = call_many(fn, [(args, {}) for args in calls], name=name,
                       on_error={KeyError: "use the dict keys of the notebook (model: params, bytes_per_param, "
                                           "kv_bytes_per_token, attn_flops_per_pair; hardware: bandwidth, flops).",
                                 ZeroDivisionError: "context may be 0 (no cache yet) and batch 1; nothing in the "
                                                    "formulas divides by either."})
    return [require_scalar(v, f"{name}({b}, {t}, {c}, model, hardware)") for v, (b, t, c, *_) in zip(values, calls)]


def _roof_diagnose(got, calls, mistakes, rtol=ROOF_RTOL):
    """The hint of the first (hint, wrong function) that reproduces every got value it defines."""
    return diagnose(got, mistakes, calls, rtol=rtol)


def _roof_calls(seed, per_machine=24, machines=14):
    draw = np.random.default_rng(seed)
    pairs = [LLAMA_LIKE] + _machines(draw, machines)
    calls = []
    for model, hw in pairs:
        calls += [(b, t, c, model, hw) for b, t, c in _shapes(draw, per_machine)]
        calls += [(1, 1, 0, model, hw), (64, 5, 32_768, model, hw), (256, 9, 1024, model, hw)]
    return calls


def check_roofline_time(roofline_time) -> None:
    """roofline_time on a Llama-3-8B-like model on an H100-like machine and 14 random (model, machine)
    pairs, 27 shapes each (batch 1-256, tokens 1-64, context 0-32768), within 1e-6 relative.

    Which wrong answer still passes: one that agrees to 1e-6 on every sampled shape and goes wrong
    only elsewhere (a special case for batches above 256, say), or one that breaks on numpy arrays
    (arrays are not part of the API: the notebook calls it with numbers). Which correct answer
    fails: none written to the notebook's formulas (if/else instead of max, numpy or math, .get,
    float32, other units converted back to seconds all pass); a different model of the pass, such
    as counting the new tokens' own keys and values in the bytes, fails on purpose, because the
    notebook states which model is graded."""
    __tracebackhide__ = True
    calls = _roof_calls(SEED + 21)
    got = _roof_values(roofline_time, "roofline_time", calls)
    want = [ref.roofline_time(*args) for args in calls]
    if close(got, want, rtol=ROOF_RTOL, atol=0):
        return
    hint = _roof_diagnose(got, calls, [(h, r.time) for h, r in ROOFLINE_MISTAKES])
    if hint:
        fail(f"roofline_time: {hint}")
    ratios = np.array(got) / np.array(want)
    if np.all(np.isfinite(ratios)) and np.allclose(ratios, ratios[0], rtol=1e-6) and \
            any(np.isclose(ratios[0], s, rtol=1e-6) for s in (1e3, 1e6, 1e9, 1e-3, 1e-6, 1e-9, 1e12)):
        fail(f"roofline_time: {HINT_RT_SECONDS}")
    b, t, c, _, _ = calls[next(i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=ROOF_RTOL, atol=0))]
    fail(f"roofline_time({b}, {t}, {c}, model, hardware) is wrong: bytes = params x bytes_per_param + batch x context "
         "x kv_bytes_per_token, flops = batch x tokens x (2 params + attn_flops_per_pair x context), and the time is "
         "the larger of bytes / bandwidth and flops / peak flops.")


def check_verification_cost(verification_cost) -> None:
    """verification_cost(batch, K, context, model, hardware) for K = 0..16 on the shapes of
    check_roofline_time, within 1e-6 relative. The mistakes of roofline_time are named here too,
    because a learner's verification_cost calls the learner's roofline_time.

    Which wrong answer still passes: one right wherever a pass is memory-bound and wrong only in a
    compute-bound regime never sampled (the samples include both regimes on every machine, so none
    is known), or one that treats K = 0 specially and wrongly only at K = 0 would fail (K = 0 is
    sampled). Which correct answer fails: none known; an inline formula, an if/else or a helper of
    its own all pass."""
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED + 22)
    calls = [(b, int(rng.choice([0, 1, 2, 3, 4, 6, 8, 16])), c, m, hw) for b, _, c, m, hw in _roof_calls(SEED + 23)]
    got = _roof_values(verification_cost, "verification_cost", calls)
    want = [ref.verification_cost(*args) for args in calls]
    if close(got, want, rtol=ROOF_RTOL, atol=0):
        return
    rt = _Roofline()
    hint = _roof_diagnose(got, calls, [
        (HINT_RT_NO_BATCH, ROOFLINE_MISTAKES[3][1].verification_cost),  # the "K+1 instead of B(K+1)" mistake first
        (HINT_VC_BATCH_ONE, lambda b, K, c, m, hw: rt.time(b, K + 1, c, m, hw) / rt.time(1, 1, c, m, hw)),
        (HINT_VC_K_BASE, lambda b, K, c, m, hw: rt.time(b, K + 1, c, m, hw) / rt.time(b, K, c, m, hw)),
        (HINT_VC_K_BASE, lambda b, K, c, m, hw: rt.time(b, K + 1, c, m, hw) / rt.time(b, max(K, 1), c, m, hw)),
        (HINT_VC_K_BASE, lambda b, K, c, m, hw: rt.time(b, K, c, m, hw) / rt.time(b, 1, c, m, hw) if K else 1.0),
        (HINT_VC_CONSTANT, lambda b, K, c, m, hw: 1.0),
        (HINT_VC_CONSTANT, lambda b, K, c, m, hw: K + 1.0),
        (HINT_VC_INVERTED, lambda b, K, c, m, hw: 1.0 / rt.verification_cost(b, K, c, m, hw)),
    ] + [(h, r.verification_cost) for h, r in ROOFLINE_MISTAKES])
    if hint:
        fail(f"verification_cost: {hint}")
    b, K, c, _, _ = calls[next(i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=ROOF_RTOL, atol=0))]
    fail(f"verification_cost({b}, {K}, {c}, model, hardware) is wrong: it is roofline_time(batch, K+1, ...) / "
         "roofline_time(batch, 1, ...), both passes over the same batch and context.")


def check_knee_tokens(knee_tokens) -> None:
    """knee_tokens(batch, context, model, hardware) on the machines of check_roofline_time, within 1e-6
    relative (bisection to 1e-9, brentq and the closed form all meet it).

    Which wrong answer still passes: the sum-instead-of-max mistake, which cannot reach the knee (the
    knee is where the two terms are equal, whatever combines them), and a knee found by bisection on
    a wrong roofline whose mistake vanishes where the terms are equal. Which correct answer fails: a
    knee rounded to whole tokens (named: the exercise asks for the real crossing), and a bisection
    stopped early, above 1e-6 relative."""
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED + 24)
    calls = [(b, c, m, hw) for b, _, c, m, hw in _roof_calls(SEED + 25, per_machine=10)]
    calls += [(int(rng.choice(BATCHES)), int(rng.choice(CONTEXTS)), m, hw) for m, hw in _machines(rng, 40)]
    values = call_many(knee_tokens, [(args, {}) for args in calls], name="knee_tokens",
                       on_error={KeyError: "use the dict keys of the notebook (model: params, bytes_per_param, "
                                           "kv_bytes_per_token, attn_flops_per_pair; hardware: bandwidth, flops)."})
    got = [require_scalar(v, f"knee_tokens({b}, {c}, model, hardware)") for v, (b, c, *_) in zip(values, calls)]
    want = [ref.knee_tokens(*args) for args in calls]
    if close(got, want, rtol=ROOF_RTOL, atol=0):
        return
    rt = _Roofline()
    hint = _roof_diagnose(got, calls, [
        (HINT_KN_PER_SEQ, lambda b, c, m, hw: rt.knee(b, c, m, hw) / b),
        (HINT_KN_INVERTED, lambda b, c, m, hw: rt.bytes(b, 1, c, m) * hw["bandwidth"] / (hw["flops"] * rt.flops_per_token(c, m))),
    ] + [(h, r.knee) for h, r in ROOFLINE_MISTAKES if r.combine is max and not r.weights_per_token])
    if hint:
        fail(f"knee_tokens: {hint}")
    if all(np.isfinite(g) and g == round(g) and abs(g - w) <= 1 for g, w in zip(got, want)):
        fail(f"knee_tokens: {HINT_KN_ROUNDED}")
    b, c, _, _ = calls[next(i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=ROOF_RTOL, atol=0))]
    fail(f"knee_tokens({b}, {c}, model, hardware) is wrong: it is the total tokens T per pass (all sequences) at which "
         "T x flops per token / peak flops equals bytes / bandwidth.")


# ---------------------------------------------------------------- the contract

# Each exercise's hidden tests in cell order (the capped cell of alpha_from_counters repeats a named mistake of
# the whole-K cell: one mistake, one sentence).
CONTRACT = declare(
    globals(),
    Exercise("expected_tokens_positional", "check_expected_tokens_positional"),
    Exercise("speedup_general", "check_speedup_general"),
    Exercise("roofline_time", "check_roofline_time"),
    Exercise("verification_cost", "check_verification_cost"),
    Exercise("knee_tokens", "check_knee_tokens"),
    Exercise("ngram_propose", "check_ngram_propose"),
    Exercise("alpha_from_counters", ("check_alpha_from_counters", "check_alpha_from_counters_capped")),
)
