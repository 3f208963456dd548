"""Hidden-test checkers for 05_speculation_in_practice: expected_tokens_positional,
speedup_general, ngram_propose. Deterministic: values compared with the reference (tolerances
for floats, exact equality for token lists) on seeded random inputs.
"""
from __future__ import annotations

import numpy as np

from solutions.checks._common import SEED, as_float_array, call, close, diagnose, fail
from solutions.checks.a02 import _tokens  # closed-form expected tokens, alpha = 1 handled
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
            if value.size != 1:
                fail(f"expected_tokens_positional must return one number, not an array of shape {value.shape}.")
            got.append(float(value.reshape(-1)[0]))
    want = [ref.expected_tokens_positional(a) for a in profiles for _ in (0, 1)]
    if close(got, want, rtol=1e-9, atol=1e-12):
        return
    inputs = [(a,) for a in profiles for _ in (0, 1)]
    hint = diagnose(got, {
        HINT_POS_NO_ONE: lambda a: float(np.cumprod(a).sum()) if a else 0.0,
        HINT_POS_SUM: lambda a: 1.0 + float(np.sum(a)),
        HINT_POS_OFF_BY_ONE: lambda a: 1.0 + float(np.concatenate([[1.0], np.cumprod(a)[:-1]]).sum()) if a else 1.0,
        HINT_POS_OFF_BY_ONE + " ": lambda a: float(np.concatenate([[1.0], np.cumprod(a)[:-1]]).sum()) if a else 1.0,
        HINT_POS_MEAN: lambda a: float(sum(np.mean(a) ** k for k in range(len(a) + 1))) if a else 1.0,
        HINT_POS_FULL_PRODUCT: lambda a: 1.0 + len(a) * float(np.prod(a)) if a else 1.0,
    }, inputs, rtol=1e-9)
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
HINT_GEN_EXPONENT = ("exponent K instead of K+1 in the expected tokens: the round also emits the "
                     "target's correction or bonus token.")
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
        value = as_float_array(call(speedup_general, a, K, c, v,
                                    on_error={ZeroDivisionError: "at alpha = 1 the closed form is 0/0; "
                                                                 "a round then emits exactly K+1 tokens."}),
                               f"speedup_general({a:g}, {K}, {c:g}, {v:g})")
        if value.size != 1:
            fail(f"speedup_general must return one number for scalar inputs, not an array of shape {value.shape}.")
        got.append(float(value.reshape(-1)[0]))
    want = [ref.speedup_general(*args) for args in grid]
    if not close(got, want, rtol=1e-7, atol=1e-10):
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=1e-7, atol=1e-10)]
        hint = diagnose(got, {
            HINT_GEN_DOUBLE: lambda a, K, c, v: _tokens(a, K) / (1 + K * c + v),
            HINT_GEN_TIMES: lambda a, K, c, v: _tokens(a, K) / (K * c + (K + 1) * v),
            HINT_GEN_IGNORED: lambda a, K, c, v: _tokens(a, K) / (1 + K * c),
            HINT_GEN_EXPONENT: lambda a, K, c, v: _tokens(a, K - 1) / (K * c + v),
            HINT_GEN_NO_DISCOUNT: lambda a, K, c, v: (K + 1) / (K * c + v),
        }, grid, rtol=1e-6)
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
    want = ref.speedup_general(alpha, K, 0.1, verify)
    if got.shape != want.shape:
        fail(f"speedup_general must broadcast its arguments like numpy: shapes (4,1,1), (1,9,1), a float "
             f"and (1,1,3) give {want.shape}, not {got.shape}.")
    if not close(got, want, rtol=1e-7, atol=1e-10):
        fail("speedup_general with array inputs disagrees with its scalar values (check alpha = 1 "
             "inside arrays: use np.where, not if-statements).")


# ---------------------------------------------------------------- ngram_propose

HINT_NG_ITSELF = ("this proposes the matched n-gram itself; propose the tokens that FOLLOWED "
                  "its earlier occurrence (the n-gram is already in the context).")
HINT_NG_LONG = "the proposal is longer than K: return at most K tokens."
HINT_NG_FIRST = ("this uses the FIRST occurrence of the n-gram; use the most recent earlier one "
                 "(the latest context is the best guess for what comes next).")
HINT_NG_OFF_BY_ONE = ("off by one: the proposal must start right after the matched n-gram, not on "
                      "its last token.")
HINT_NG_SELF = ("this never finds a match: the last n tokens always match themselves at the end of "
                "the context, where nothing follows; search the occurrences that END before the "
                "last token.")
HINT_NG_ALL_OR_NOTHING = ("when fewer than K tokens follow the match, propose those few; this "
                          "returns [] instead.")
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
                        (HINT_NG_ALL_OR_NOTHING, _all_or_nothing), (HINT_NG_IGNORES_N, _n2),
                        (HINT_NG_LONG, lambda c, K, n: _lookup(c, K, n, cap=False)),
                        (HINT_NG_NO_OVERLAP, lambda c, K, n: _lookup(c, K, n, overlap=False))):
        if all(g == wrong(list(ctx), K, n) for g, (ctx, K, n) in zip(got, cases)):
            fail(f"ngram_propose: {hint}")
    i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
    ctx, K, n = cases[i]
    shown = ctx if len(ctx) <= 12 else f"<{len(ctx)} tokens>"
    fail(f"ngram_propose({shown}, {K}, n={n}) proposed the wrong tokens: find the most recent "
         "earlier occurrence of the last n tokens and propose up to K tokens that followed it.")
