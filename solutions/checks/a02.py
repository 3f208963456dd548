"""Hidden-test checkers for 02_cost_and_speedup: round_cost, speedup, loses, break_even_alpha,
optimal_K. Values only (no randomness): compared with the reference with tolerances, on grids
that stay clear of exact break-even points where floating-point rounding could flip a verdict.
"""
from __future__ import annotations

import math

import numpy as np

from solutions.checks._common import (
    HINT_EXPONENT_K, HINT_NO_DISCOUNT, Exercise, as_float_array, broadcasts_like_numpy, call, close, declare, diagnose,
    fail, require_ndarray, require_scalar, tokens_per_round, unchanged,
)
from solutions.reference import a02_cost_and_speedup as ref

ALPHAS = (0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.999999, 1.0)
KS = (0, 1, 2, 3, 4, 5, 8, 12, 16)
CS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.35, 0.6, 0.9, 1.5)

HINT_INVERTED_C = ("c is draft time / target time (small c = cheap draft); the code reads it as "
                   "target/draft, dividing by c where it should multiply.")
HINT_NO_DRAFT_COST = ("the draft passes are not free: a round costs one target pass plus K draft "
                      "passes, 1 + K*c target-pass units.")


def _scalar(fn, label, *args):
    __tracebackhide__ = True
    return require_scalar(call(fn, *args), label)


def _array_call(fn, label, **arrays):
    """Call fn on copies of the (numpy array) arguments, by position in the order given; fail if it
    changed them or returned something else than a numpy array."""
    __tracebackhide__ = True
    passed = {name: a.copy() if isinstance(a, np.ndarray) else a for name, a in arrays.items()}
    out = call(fn, *passed.values())
    unchanged(label, **{name: (a, passed[name]) for name, a in arrays.items() if isinstance(a, np.ndarray)})
    return require_ndarray(out, label)


# ---------------------------------------------------------------- round_cost

def check_round_cost(round_cost) -> None:
    """Scalars and broadcasting arrays."""
    __tracebackhide__ = True
    grid = [(K, c) for K in KS for c in CS if c > 0]
    got = [_scalar(round_cost, f"round_cost({K}, {c:g})", K, c) for K, c in grid]
    want = [ref.round_cost(K, c) for K, c in grid]
    if not close(got, want):
        hint = diagnose(got, [
            ("the round also pays for one target pass that checks the drafts: cost = 1 + K*c, not K*c.",
             lambda K, c: K * c),
            (HINT_INVERTED_C, lambda K, c: 1 + K / c),
            ("each of the K draft tokens needs its own draft pass: cost = 1 + K*c, not 1 + c.",
             lambda K, c: 1 + c),
            ("the target verifies all K drafts in ONE pass (it scores K+1 positions at once): cost = "
             "1 + K*c, not K + K*c.", lambda K, c: K + K * c),
        ], grid)
        fail(f"round_cost: {hint}" if hint else
             "round_cost(K, c) should be one target pass plus K draft passes, in target-pass units.")
    Ks = np.arange(0, 9)[:, None]
    cs = np.array([0.0, 0.05, 0.3, 1.0])[None, :]
    label = "round_cost(<array>, <array>)"
    got = as_float_array(_array_call(round_cost, label, K=Ks, c=cs), label)
    if got.shape != (9, 4) or not close(got, ref.round_cost(Ks, cs)):
        fail("round_cost(K_array, c_array) must broadcast like numpy (shape (9, 1) with (1, 4) gives (9, 4)).")


# ---------------------------------------------------------------- speedup

def check_speedup(speedup) -> None:
    """Values on a grid of (alpha, K, c), scalar inputs."""
    __tracebackhide__ = True
    grid = [(a, K, c) for a in ALPHAS for K in KS for c in CS if c > 0]
    got = [_scalar(speedup, f"speedup({a:g}, {K}, {c:g})", a, K, c) for a, K, c in grid]
    want = [ref.speedup(a, K, c) for a, K, c in grid]
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, rtol=1e-7, atol=1e-10)]
    if not bad:
        return
    hint = diagnose(got, [
        (HINT_NO_DRAFT_COST, lambda a, K, c: tokens_per_round(a, K)),
        (HINT_INVERTED_C, lambda a, K, c: tokens_per_round(a, K) / (1 + K / c)),
        (HINT_NO_DISCOUNT, lambda a, K, c: K / (1 + K * c)),
        (HINT_NO_DISCOUNT, lambda a, K, c: (K + 1) / (1 + K * c)),
        (HINT_EXPONENT_K, lambda a, K, c: tokens_per_round(a, K - 1) / (1 + K * c)),
        ("the round cost is 1 + K*c, one target pass plus K draft passes.",
         lambda a, K, c: tokens_per_round(a, K) / (K * c)),
    ], grid, rtol=1e-6)
    if hint:
        fail(f"speedup: {hint}")
    a, K, c = grid[bad[0]]
    fail(f"speedup({a:g}, {K}, {c:g}) is wrong: it should be the expected tokens per round divided "
         "by the round cost 1 + K*c (check alpha = 1 and K = 0).", generic=True)


def check_speedup_arrays(speedup) -> None:
    """Broadcasting over alpha, K and c together (what the plots and the explorer do)."""
    __tracebackhide__ = True
    alpha = np.array([0.0, 0.3, 0.6, 0.8, 0.9, 1.0])[:, None, None]
    K = np.arange(0, 17)[None, :, None]
    c = np.array([0.0, 0.02, 0.1, 0.5])[None, None, :]
    label = "speedup(<alpha array>, <K array>, <c array>)"
    got = as_float_array(_array_call(speedup, label, alpha=alpha, K=K, c=c), label)
    broadcasts_like_numpy(got, ref.speedup(alpha, K, c), "speedup", "(6,1,1), (1,17,1), (1,1,4)",
                          "alpha = 1 and K = 0")


# ---------------------------------------------------------------- loses

def _clear_of_break_even(a, K, c, margin=1e-6):
    return abs(ref.speedup(a, K, c) - 1.0) > margin or K == 0


def check_loses(loses) -> None:
    """Scalars on a grid (K = 0 included: plain decoding never loses) and a broadcast array."""
    __tracebackhide__ = True
    grid = [(a, K, c) for a in ALPHAS for K in KS for c in CS if _clear_of_break_even(a, K, c)]
    got = []
    for a, K, c in grid:
        value = call(loses, a, K, c)
        if np.ndim(value) != 0:
            fail(f"loses({a:g}, {K}, {c:g}) must return one bool for scalar inputs, not an array of shape "
                 f"{np.shape(value)} (return bool(x) or x.item()).")
        got.append(bool(value))
    want = [bool(ref.loses(a, K, c)) for a, K, c in grid]
    wrong = [(x, g) for x, g, w in zip(grid, got, want) if g != w]
    if wrong:
        if all(g == (a <= c) for (a, K, c), g in zip(grid, got)):
            a, K, c = next((x for x, _ in wrong if x[1] > 1), wrong[0][0])
            fail("alpha > c only guarantees that K = 1 wins; for larger K speculation loses when the "
                 f"MEAN of alpha, alpha**2, ..., alpha**K is below c (e.g. alpha={a:g}, K={K}, c={c:g}).")
        if all(K == 0 for (a, K, c), _ in wrong):
            fail("K = 0 is plain decoding with speedup exactly 1, which is not a loss: "
                 "loses means speedup < 1, strictly.")
        a, K, c = wrong[0][0]
        fail(f"loses({a:g}, {K}, {c:g}) is wrong: speculation loses exactly when speedup < 1.")
    alpha = np.array([0.2, 0.5, 0.8, 0.95])[:, None]
    c = np.array([0.05, 0.3, 0.7])[None, :]
    got = _array_call(loses, "loses(<array>, 4, <array>)", alpha=alpha, K=4, c=c)
    want = ref.loses(alpha, 4, c)
    if got.shape != want.shape or got.dtype != bool or not np.array_equal(got, want):
        fail("loses(alpha_array, K, c_array) must return a bool array that broadcasts like numpy.")


# ---------------------------------------------------------------- break_even_alpha

def check_break_even_alpha(break_even_alpha) -> None:
    """The root of speedup(alpha) = 1 for K >= 1 and 0 <= c < 1; nan for c >= 1."""
    __tracebackhide__ = True
    for K in (1, 2, 3, 5, 8, 16):
        for c in (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.95):
            label = f"break_even_alpha({K}, {c:g})"
            got = _scalar(break_even_alpha, label, K, c)
            want = ref.break_even_alpha(K, c)
            if math.isnan(got):
                fail(f"{label} returned nan, but with c < 1 a high enough alpha always wins "
                     "(at alpha = 1 the speedup is (K+1)/(1+K*c) > 1); if your cost divides by c, "
                     "you read c as target/draft, but c is draft time / target time.")
            if abs(got - want) <= 1e-7 or (0 <= got <= 1 and abs(ref.speedup(got, K, c) - 1.0) <= 1e-7):
                continue  # accurate in alpha, or in the speedup at the learner's alpha
            if got == 0.0 and c > 0:
                fail(f"{label} returned 0: {HINT_NO_DRAFT_COST}")
            if K > 1 and abs(got - c) < 1e-9:
                fail(f"{label} returned c: alpha = c is the break-even only for K = 1; for larger K "
                     "solve mean(alpha, alpha**2, ..., alpha**K) = c.")
            if abs(got - want) < 1e-3:
                fail(f"{label} is close to the break-even point but not within 1e-7: keep bisecting "
                     "until the interval is below 1e-8 (about 30 halvings of [0, 1]).")
            fail(f"{label} is not where speedup(alpha, K, c) crosses 1 (solve it by bisection on "
                 "[0, 1]: speedup increases with alpha; at c = 0 the answer is 0).")
    for K, c in ((1, 1.0), (3, 1.0), (4, 1.7)):
        if call(break_even_alpha, K, c) is None:
            fail(f"break_even_alpha({K}, {c:g}) returned None; return float('nan') when no alpha wins, so "
                 "that callers (plots, arithmetic) still get a number.")
        got = _scalar(break_even_alpha, f"break_even_alpha({K}, {c:g})", K, c)
        if not math.isnan(got):
            fail(f"break_even_alpha({K}, {c:g}) must be nan: with c >= 1 no alpha in [0, 1] wins.")


# ---------------------------------------------------------------- optimal_K

# Exact ties, whatever the floating-point route: alpha = 0, c = 0 (every K gives 1 + 0 / 1) and
# alpha = 1, c = 1 (every K gives (K+1) / (1+K)): the answer is K = 0 (smallest on ties). Any other
# near-tie is left out, because rounding may decide it either way.
EXACT_TIES = ((0.0, 0.0), (1.0, 1.0))


def _unambiguous(a, c, K_max):
    s = np.sort(ref.speedup(a, np.arange(K_max + 1), c))
    return s[-1] - s[-2] > 1e-9 or (a, c) in EXACT_TIES


def check_optimal_K(optimal_K) -> None:
    """argmax over K = 0..K_max, smallest on ties, 0 meaning 'do not speculate'."""
    __tracebackhide__ = True
    grid = [(a, c, K_max) for a in (0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
            for c in (0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 1.0, 1.2) for K_max in (16, 8, 3)
            if _unambiguous(a, c, K_max)]
    for a, c, K_max in grid:
        label = f"optimal_K({a:g}, {c:g}, K_max={K_max})"
        got = call(optimal_K, a, c, K_max=K_max)
        if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
            fail(f"{label} returned {type(got).__name__} {got!r}; it must return one int in 0..K_max "
                 "(for example int(np.argmax(S))).")
        got_int = int(got)
        want = ref.optimal_K(a, c, K_max)
        if got_int == want:
            continue
        if want == 0 and got_int >= 1:
            fail(f"{label}: when no K wins (here alpha <= c; at a=0, c=0 and at a=1, c=1 every K ties at 1) "
                 "the answer is K = 0, do not speculate; include K = 0 in the search and keep the "
                 "smallest K on ties.")
        if got_int > K_max:
            fail(f"{label} returned {got_int}, above K_max: search K = 0..K_max using the K_max argument, "
                 "not a fixed range.")
        if got_int < 0:
            fail(f"{label} returned {got_int}, outside 0..K_max.")
        if got_int == K_max and c > 0:
            fail(f"{label} always drafts the most it can: {HINT_NO_DRAFT_COST}")
        fail(f"{label} is not the K in 0..K_max that maximises speedup(alpha, K, c).")
    got = int(call(optimal_K, 0.8, 0.05))
    if got != ref.optimal_K(0.8, 0.05):
        fail("optimal_K(alpha, c) must default to K_max = 16.")


# ---------------------------------------------------------------- the contract

# Each exercise's hidden tests in cell order (the array cell of a wrong formula repeats the formula's named
# mistake: one mistake, one sentence).
CONTRACT = declare(
    globals(),
    Exercise("round_cost", "check_round_cost"),
    Exercise("speedup", ("check_speedup", "check_speedup_arrays")),
    Exercise("loses", "check_loses"),
    Exercise("break_even_alpha", "check_break_even_alpha"),
    Exercise("optimal_K", "check_optimal_K"),
)
