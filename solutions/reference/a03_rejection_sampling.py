# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 03_rejection_sampling.

GENERATED from source/03_rejection_sampling/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import numpy as np
import matplotlib.pyplot as plt
from specdec.plots import rejection_sampling_check


def acceptance_rate(p, q):
    """beta, the probability that a draft token x ~ q is accepted by target p at one position:
    sum_x min(p, q) over the last axis (leading axes are a batch, e.g. one row per position)."""
    return np.minimum(p, q).sum(axis=-1)


def residual_distribution(p, q):
    """norm(max(p - q, 0)) over the last axis; p itself where p == q (nothing left over)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    leftover = np.maximum(p - q, 0.0)
    mass = leftover.sum(axis=-1, keepdims=True)          # = 1 - beta, the rejection probability
    safe = np.where(mass > 0, mass, 1.0)                 # avoid 0/0; those rows return p below
    return np.where(mass > 0, leftover / safe, p)


def speculative_sample(p, q, rng):
    """One speculative step: (token, accepted), token distributed exactly as p (target); q is the draft."""
    x = rng.choice(len(q), p=q)                        # the draft proposes x ~ q (so q[x] > 0)
    if rng.random() < min(1.0, p[x] / q[x]):           # keep it with probability min(1, p/q)
        return int(x), True
    return int(rng.choice(len(p), p=residual_distribution(p, q))), False


def verify_round(draft_tokens, p_rows, q_rows, rng):
    """Accepted prefix of draft_tokens + one target token (correction or bonus); 1..K+1 ints.

    p_rows (K+1, V) are TARGET distributions, q_rows (K, V) DRAFT distributions.
    """
    emitted = []
    for i, x in enumerate(draft_tokens):
        p_target, q_draft = p_rows[i], q_rows[i]
        if rng.random() < min(1.0, p_target[x] / q_draft[x]):
            emitted.append(int(x))
            continue
        emitted.append(int(rng.choice(len(p_target), p=residual_distribution(p_target, q_draft))))
        return emitted                                   # stop at the first rejection
    bonus = rng.choice(p_rows.shape[1], p=p_rows[len(draft_tokens)])
    emitted.append(int(bonus))                           # all K accepted: the free bonus token
    assert 1 <= len(emitted) <= len(draft_tokens) + 1
    return emitted
