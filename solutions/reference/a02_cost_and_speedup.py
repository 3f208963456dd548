# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 02_cost_and_speedup.

GENERATED from source/02_cost_and_speedup/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import math
import matplotlib.pyplot as plt
import numpy as np
from specdec.plots import best_speedup_heatmap, break_even_frontier, optimal_K_map
from specdec.widgets import speedup_explorer_from


def round_cost(K, c):
    """Cost of one round in target-pass units: one target pass plus K draft passes."""
    return 1.0 + K * c


def speedup(alpha, K, c):
    """Expected tokens per round / round cost; broadcasts over alpha, K and c."""
    alpha, K, c = np.asarray(alpha, dtype=float), np.asarray(K), np.asarray(c, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_alpha = np.log1p(alpha - 1.0)  # log(alpha), accurate near alpha = 1
        # (1 - alpha**(K+1)) / (1 - alpha), written with expm1 so nothing cancels near alpha = 1
        tokens = np.expm1((K + 1) * log_alpha) / np.expm1(log_alpha)
    tokens = np.where(alpha == 1.0, K + 1.0, tokens)  # the 0/0 limit: K drafts + the bonus token
    S = tokens / round_cost(K, c)
    return S.item() if S.ndim == 0 else S


def loses(alpha, K, c):
    """True where speculative decoding is slower than plain decoding (speedup < 1)."""
    return speedup(alpha, K, c) < 1.0


def break_even_alpha(K, c):
    """The alpha in [0, 1] at which speedup(alpha, K, c) = 1; nan when c >= 1 (nothing wins)."""
    if c >= 1.0:
        return float("nan")
    lo, hi = 0.0, 1.0  # speedup(lo) <= 1 <= speedup(hi), and speedup increases with alpha
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if speedup(mid, K, c) < 1.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def optimal_K(alpha, c, K_max=16):
    """The K in 0..K_max that maximises speedup(alpha, K, c); 0 means do not speculate."""
    S = speedup(alpha, np.arange(K_max + 1), c)
    return int(np.argmax(S))  # argmax returns the first maximum: the smallest K on ties
