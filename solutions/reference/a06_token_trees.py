# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 06_token_trees.

GENERATED from source/06_token_trees/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import matplotlib.pyplot as plt
import numpy as np
import torch
from specdec.model import decode, encode, load
from specdec.timing import step_costs
from specdec.trees import SHAPES, Drafter, Dynamic, Template, compare_trees, path_of, rank_acceptance


def tree_attention_mask(parents):
    """(N, N) bool: mask[i, j] is True exactly when j is i or an ancestor of i."""
    parents = [int(p) for p in np.asarray(parents).reshape(-1)]
    n = len(parents)
    mask = np.zeros((n, n), dtype=bool)
    for i, parent in enumerate(parents):
        if parent >= 0:
            mask[i] = mask[parent]  # everything the parent sees (parents come first)
        mask[i, i] = True
    return mask


def verify_tree_greedy(tokens, parents, target_choice):
    """The longest path the target agrees with, then the target's own token after it (1..depth+1 ints)."""
    tokens = [int(t) for t in np.asarray(tokens).reshape(-1)]
    parents = [int(p) for p in np.asarray(parents).reshape(-1)]
    choice = [int(t) for t in np.asarray(target_choice).reshape(-1)]
    out, node = [], -1  # -1: the root (the last committed token)
    while True:
        want = choice[node + 1]  # the target's token after the path ending at `node`
        child = next((i for i, p in enumerate(parents) if p == node and tokens[i] == want), None)
        out.append(want)
        if child is None:
            return out
        node = child


def expected_tree_tokens(parents, accept_prob):
    """1 + sum over nodes of the probability that the whole path to the node is accepted."""
    parents = [int(p) for p in np.asarray(parents).reshape(-1)]
    accept_prob = np.asarray(accept_prob, dtype=float).reshape(-1)
    reach = np.zeros(len(parents))
    for i, parent in enumerate(parents):
        reach[i] = accept_prob[i] * (reach[parent] if parent >= 0 else 1.0)
    return float(1.0 + reach.sum())


def select_tree(parents, path_value, budget):
    """Indices (ascending) of the `budget` nodes of largest path value, ties to the lower index."""
    path_value = np.asarray(path_value, dtype=float).reshape(-1)
    budget = max(0, min(int(budget), len(path_value)))
    order = np.lexsort((np.arange(len(path_value)), -path_value))  # by value descending, then index
    return sorted(int(i) for i in order[:budget])


def multi_candidate_sample(p, q, candidates, rng):
    """SpecInfer's multi-step speculative sampling: (token, index of the accepted candidate or -1).

    p is the TARGET distribution, q the DRAFT distribution the candidates were drawn from (i.i.d.).
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p_cur = p / p.sum()
    for index, x in enumerate(int(c) for c in np.asarray(candidates).reshape(-1)):
        if rng.random() * q[x] < p_cur[x]:  # u < p_cur(x) / q(x), without dividing
            return x, index
        residual = np.maximum(p_cur - q, 0.0)
        total = residual.sum()
        p_cur = residual / total if total > 0 else p_cur
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def best_budget(parents, path_value, c, verify_costs, max_budget):
    """(best budget, speeds): speeds[B] = E[tokens] of select_tree's B nodes / (their depth * c + verify_costs[B + 1])."""
    parents = [int(p) for p in np.asarray(parents).reshape(-1)]
    path_value = np.asarray(path_value, dtype=float).reshape(-1)
    depth = []
    for parent in parents:  # parents come first
        depth.append(1 if parent < 0 else depth[parent] + 1)
    speeds = np.zeros(int(max_budget) + 1)
    for B in range(int(max_budget) + 1):
        keep = [int(i) for i in select_tree(parents, path_value, B)]
        expected = 1.0 + float(path_value[keep].sum())
        levels = max((depth[i] for i in keep), default=0)
        speeds[B] = expected / (levels * c + float(verify_costs[B + 1]))
    return int(np.argmax(speeds)), speeds  # argmax: the first maximum, the smallest budget on ties
