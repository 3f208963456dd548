# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 01_acceptance_chain.

GENERATED from source/01_acceptance_chain/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import numpy as np
import matplotlib.pyplot as plt
from specdec.plots import monte_carlo_check


def accepted_pmf(alpha, K):
    """P(N = n) for n = 0..K accepted draft tokens in one round; shape (K+1,), sums to 1."""
    n = np.arange(K + 1)
    pmf = alpha ** n * (1.0 - alpha)   # n acceptances, then one rejection
    pmf[K] = alpha ** K                # all K accepted: nothing left to reject (truncation)
    return pmf


def expected_tokens(alpha, K):
    """Expected tokens emitted per round, sum_{k=0}^{K} alpha**k; float, or array shaped like alpha."""
    alpha = np.asarray(alpha, dtype=float)
    # Slot k (k = 0..K) is filled when the first k drafts were accepted: probability alpha**k.
    # Summing the powers is exact at alpha = 1 and has no 0/0 or cancellation near it.
    total = (alpha[..., None] ** np.arange(K + 1)).sum(axis=-1)
    return float(total) if total.ndim == 0 else total


def simulate_tokens(alpha, K, rounds, rng):
    """Tokens emitted in each of `rounds` simulated rounds (ints in 1..K+1), shape (rounds,)."""
    accepted = rng.random((rounds, K)) < alpha       # i.i.d. acceptance of each draft position
    still_going = np.cumprod(accepted, axis=1)       # 1 until the first rejection, then 0
    return still_going.sum(axis=1) + 1               # accepted prefix + correction/bonus token
