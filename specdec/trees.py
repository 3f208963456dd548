"""Token trees on the shipped pair (notebook 06): draft a tree, verify it in one target pass, keep
the accepted path in the caches.

Greedy decoding only (temperature 0): the point here is the shape of the guess and what one
verification pass costs; exact sampling with several candidates at one position is notebook 06's
`multi_candidate_sample`, on distributions.

A tree of N draft nodes is given as in the course brief: `parents[i]` < i, -1 for a child of the
root (the last committed token). The engine never builds a mask or decides acceptance itself:
the caller passes `mask_fn(parents)` (notebook 06's `tree_attention_mask`) and
`verify_fn(tokens, parents, target_choice)` (its `verify_tree_greedy`), and, for the dynamic
tree, `select_fn(parents, path_value, budget)` (its `select_tree`). In the notebook those are
the learner's own functions; the tests pass the reference ones.

`tree_generate(target, draft, prompt, n, build, mask_fn, verify_fn)`: each round
1. the draft catches up on the committed sequence S (its cache holds a prefix of S) and builds a
   tree (`build`: `Template` for a static shape, `Dynamic` for EAGLE-2's way), one draft pass per
   level: the pass of level d re-feeds the tree's nodes above it under the tree mask (at most N
   positions; simpler than per-node cache bookkeeping, and a pass over a few positions costs
   about one position's time on this model);
2. one target pass over N+1 positions, [S[-1]] followed by the nodes, under the mask of the tree
   rooted at S[-1], from the target's cache of S[:-1]; row 0 is the target's greedy choice after
   S, row i+1 its choice after the path ending at node i;
3. `verify_fn` returns the accepted path's tokens and the target's own token after it; the
   target's cache keeps S[-1] and the accepted path's entries (`KVCache.keep`), never a rejected
   branch's, so it holds the new S[:-1].
Greedy output equals plain greedy decoding of the target token for token (tests/test_trees.py),
whatever the tree, since every emitted token is the target's argmax after its own prefix.

`compare_trees` times several trees against plain decoding side by side (notebook 06, section 6);
`rank_acceptance` measures how often the target's greedy token is the draft's r-th guess.

What it leaves out: sampling (temperature > 0), batches, and drafting without re-feeding.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from specdec.engine import _ids, plain

# Static shapes of 8 draft nodes: (parents, ranks); node i's token is the draft's ranks[i]-th most
# likely token (0: its argmax) after the path to its parent. Siblings have distinct ranks.
SHAPES = {
    "chain of 8": ([-1, 0, 1, 2, 3, 4, 5, 6], [0] * 8),
    "binary, breadth-first": ([-1, -1, 0, 0, 1, 1, 2, 2], [0, 1] * 4),
    "top-2, then a chain of 3 under each": ([-1, -1, 0, 1, 2, 3, 4, 5], [0, 1, 0, 0, 0, 0, 0, 0]),
    "chain of 4 + a second guess at each depth": ([-1, -1, 0, 0, 2, 2, 4, 4], [0, 1] * 4),
    "top-4, then a chain of 4 under the best": ([-1, -1, -1, -1, 0, 4, 5, 6], [0, 1, 2, 3, 0, 0, 0, 0]),
    "top-4, then the top-1 under each": ([-1, -1, -1, -1, 0, 1, 2, 3], [0, 1, 2, 3, 0, 0, 0, 0]),
}


def depths(parents) -> list[int]:
    """Depth of each node (1 for a child of the root)."""
    out: list[int] = []
    for parent in parents:
        out.append(1 if parent < 0 else out[int(parent)] + 1)
    return out


def chain(n: int) -> tuple[list[int], list[int]]:
    """A chain of n nodes as a static shape: the draft's greedy continuation."""
    return list(range(-1, n - 1)), [0] * n


@dataclass
class Tree:
    tokens: list[int]
    parents: list[int]
    value: list[float]  # the draft's path probability: the product of its probabilities along the path


class Drafter:
    """The draft model's side: a cache that holds a prefix of the committed sequence."""

    def __init__(self, draft, mask_fn):
        self.draft, self.mask_fn = draft, mask_fn
        self.cache, self.fed = draft.new_cache(), []
        self.passes = 0

    @torch.no_grad()
    def root(self, seq: list[int]) -> torch.Tensor:
        """Catch up on seq (at least its last token is new); the draft's logits after seq."""
        keep = 0
        limit = min(len(self.fed), len(seq) - 1, self.cache.length)
        while keep < limit and self.fed[keep] == seq[keep]:
            keep += 1
        self.cache.rollback(keep)
        logits = self.draft.extend(_ids(seq[keep:], self.draft.device), self.cache)[0, -1]
        self.fed, self.base = list(seq), len(seq)
        self.passes += 1
        return logits

    @torch.no_grad()
    def level(self, tokens: list[int], parents: list[int]) -> torch.Tensor:
        """The draft's logits after every node of the tree so far (one pass, then forgotten)."""
        mask = torch.as_tensor(np.asarray(self.mask_fn(parents), dtype=bool), device=self.draft.device)
        logits = self.draft.extend_tree(_ids(tokens, self.draft.device), mask, self.cache)[0]
        self.cache.rollback(self.base)
        self.passes += 1
        return logits

    def path_values(self, parents: list[int], own: list[float]) -> list[float]:
        """Each node's path value: the product of `own` over the nodes its mask row marks (the
        node and its ancestors)."""
        mask = np.asarray(self.mask_fn(parents), dtype=bool)
        return np.where(mask, np.asarray(own, dtype=float)[None, :], 1.0).prod(axis=1).tolist() if len(own) else []


class Template:
    """A static shape (parents, ranks): filled with the draft's top-ranked tokens, level by level."""

    def __init__(self, parents, ranks):
        self.parents, self.ranks = [int(p) for p in parents], [int(r) for r in ranks]
        self.depth = list(depths(self.parents))
        assert self.depth == sorted(self.depth), "a shape's nodes go level by level (each level's nodes after the last's)"

    def __call__(self, drafter: Drafter, seq: list[int]) -> Tree:
        n = len(self.parents)
        tokens, own = [0] * n, [0.0] * n  # own: the draft's probability of the node's token at its parent
        after = {-1: drafter.root(seq)}  # node -> the draft's logits after the path ending there
        for d in range(1, max(self.depth, default=0) + 1):
            for i in (i for i in range(n) if self.depth[i] == d):
                probs = torch.softmax(after[self.parents[i]].float(), -1)
                tokens[i] = int(probs.argsort(descending=True)[self.ranks[i]])
                own[i] = float(probs[tokens[i]])
            inner = [i for i in range(n) if self.depth[i] == d and i in self.parents]
            if inner:
                upto = [i for i in range(n) if self.depth[i] <= d]  # a prefix: nodes are in topological order
                logits = drafter.level([tokens[i] for i in upto], self.parents[:len(upto)])
                after.update({i: logits[i] for i in inner})
        return Tree(tokens, list(self.parents), drafter.path_values(self.parents, own))


class Dynamic:
    """EAGLE-2's dynamic tree: expand the `topk` most valuable nodes of each level by their `topk`
    most likely children, for `depth` levels, then keep the `budget` most valuable nodes. A node's
    value is the draft's probability of its whole path. Both choices are `select_fn`'s (the
    frontier as a selection among the level's nodes alone)."""

    def __init__(self, budget: int, select_fn: Callable, depth: int = 5, topk: int = 4):
        self.budget, self.select_fn, self.depth, self.topk = budget, select_fn, depth, topk

    def __call__(self, drafter: Drafter, seq: list[int]) -> Tree:
        tokens, parents, own = [], [], []
        frontier, logits = [-1], drafter.root(seq)[None]
        for level in range(self.depth):
            base = len(tokens)
            for row, node in enumerate(frontier):
                top = torch.softmax(logits[row].float(), -1).topk(self.topk)
                tokens += top.indices.tolist()
                own += top.values.tolist()
                parents += [node] * self.topk
            value = drafter.path_values(parents, own)
            new = list(range(base, len(tokens)))
            frontier = [new[int(j)] for j in self.select_fn([-1] * len(new), [value[i] for i in new], self.topk)]
            if level + 1 < self.depth:
                upto = frontier[-1] + 1
                logits = drafter.level(tokens[:upto], parents[:upto])[frontier]
        keep = [int(i) for i in self.select_fn(parents, value, self.budget)]
        index = {old: new for new, old in enumerate(keep)}
        return Tree([tokens[i] for i in keep], [index[parents[i]] if parents[i] >= 0 else -1 for i in keep],
                    [value[i] for i in keep])


def path_of(tokens, mask, emitted: list[int]) -> list[int]:
    """The nodes of the accepted path, found by their tokens: row i of the tree's `mask` marks the
    path to node i, so the path that spells emitted[:k] ends at the node whose row spells it."""
    tokens, mask = np.asarray(tokens), np.asarray(mask, dtype=bool)
    assert mask.shape == (len(tokens), len(tokens)), "path_of takes the tree's (N, N) mask"
    spelled = {tuple(tokens[row].tolist()): i for i, row in enumerate(mask)}
    path = [spelled.get(tuple(int(t) for t in emitted[:k])) for k in range(1, len(emitted))]
    if None in path:
        raise ValueError(f"the emitted tokens {list(emitted)} do not follow a path of the tree: every token but the "
                         "last must be a child of the one before (check verify_tree_greedy and tree_attention_mask)")
    return path


@torch.no_grad()
def tree_generate(target, draft, prompt, n: int, build, mask_fn: Callable, verify_fn: Callable):
    """Greedy speculative decoding with a tree of drafts per round; (tokens (n,), stats).

    stats: rounds, nodes (draft nodes verified), accepted (draft nodes kept), draft_passes,
    target_positions (positions the target scored), tested[i] and accepted_at[i] per node of a
    static shape (tested: its parent was accepted; accepted: it was too)."""
    device = target.device
    seq = [int(t) for t in prompt]
    assert len(seq) >= 2, "the prompt needs at least 2 tokens"
    cache = target.new_cache()
    target.extend(_ids(seq[:-1], device), cache)
    drafter = Drafter(draft, mask_fn)
    width = len(build.parents) if isinstance(build, Template) else 0
    stats = dict(rounds=0, nodes=0, accepted=0, draft_passes=0, target_positions=0,
                 tested=[0] * width, accepted_at=[0] * width)
    while len(seq) - len(prompt) < n:
        tree = build(drafter, seq)
        room = target.config.max_len - len(seq)
        assert len(tree.tokens) + 1 <= room, "the tree does not fit in the model's context"
        full = [-1] + [p + 1 for p in tree.parents]  # the tree rooted at S[-1]
        mask = torch.as_tensor(np.asarray(mask_fn(full), dtype=bool), device=device)
        start = len(seq) - 1
        logits = target.extend_tree(_ids(seq[-1:] + tree.tokens, device), mask, cache)[0]
        choice = logits.argmax(-1).tolist()
        emitted = [int(t) for t in verify_fn(tree.tokens, tree.parents, choice)]
        path = path_of(tree.tokens, mask[1:, 1:].cpu(), emitted)
        cache.keep(start, [start] + [start + 1 + i for i in path])
        seq += emitted
        stats["rounds"] += 1
        stats["nodes"] += len(tree.tokens)
        stats["accepted"] += len(path)
        stats["target_positions"] += len(tree.tokens) + 1
        for i in range(width):
            if tree.parents[i] < 0 or tree.parents[i] in path:
                stats["tested"][i] += 1
                stats["accepted_at"][i] += int(i in path)
    stats["draft_passes"] = drafter.passes
    return torch.tensor(seq[len(prompt):len(prompt) + n]), stats


@torch.no_grad()
def rank_acceptance(target, draft, prompt, n: int, ranks: int = 4) -> np.ndarray:
    """Along the target's greedy continuation of `prompt` (n tokens): the fraction of positions
    where the target's token is the draft's r-th most likely token, r = 0..ranks-1 (the
    acceptance probability of a tree node that holds the draft's rank-r guess, its parent accepted)."""
    seq = [int(t) for t in prompt]
    ids = _ids(seq + plain(target, seq, n).tolist(), target.device)
    t_choice = target(ids)[0, len(seq) - 1:-1].argmax(-1)
    d_rank = (draft(ids.to(draft.device))[0, len(seq) - 1:-1].argsort(-1, descending=True)
              == t_choice.to(draft.device)[:, None]).float().argmax(-1)
    return np.array([float((d_rank == r).float().mean()) for r in range(ranks)])


def compare_trees(target, draft, prompt, n: int, builds: dict, mask_fn: Callable, verify_fn: Callable,
                  repeats: int = 3) -> dict:
    """Greedy tree decoding of n tokens with each tree builder of `builds` ({name: Template or
    Dynamic}) and plain cached greedy decoding ("plain"), each timed `repeats` times, interleaved
    (`specdec.timing.fastest`: the fastest run counts). {name: row}, a row holding tokens_per_round,
    draft_passes and target_positions per round, seconds (the fastest run), speedup (plain's
    seconds / these), same_as_plain (the tokens equal plain greedy decoding's), and stats."""
    from specdec.timing import fastest

    runs = {name: (lambda b=build: tree_generate(target, draft, prompt, n, b, mask_fn, verify_fn))
            for name, build in builds.items()}
    runs["plain"] = lambda: plain(target, prompt, n)
    seconds = fastest(runs, repeats, target.device)
    reference = plain(target, prompt, n)
    rows = {}
    for name in builds:
        tokens, stats = runs[name]()
        rounds = stats["rounds"]
        rows[name] = dict(tokens_per_round=1 + stats["accepted"] / rounds, draft_passes=stats["draft_passes"] / rounds,
                          target_positions=stats["target_positions"] / rounds, seconds=seconds[name],
                          speedup=seconds["plain"] / seconds[name], same_as_plain=bool(torch.equal(tokens, reference)),
                          stats=stats)
    rows["plain"] = dict(tokens_per_round=1.0, draft_passes=0.0, target_positions=1.0, seconds=seconds["plain"],
                         speedup=1.0, same_as_plain=True, stats=None)
    return rows


def candidate_law(p_target, q_draft, k: int, repeats: str = "update") -> np.ndarray:
    """The exact law of the token multi-step speculative sampling emits from k candidates drawn
    i.i.d. from q_draft (notebook 06, section 5), by enumerating every candidate tuple (V**k of
    them, weighted by their probability under q) and, for each, the emitted token's law.

    repeats="update": every candidate is tested in turn, a repeat included; a repeat is rejected
    for certain (the residual after its first rejection is 0 there), and its rejection still moves
    p_cur to the next residual. That is exact; a tree that stores a repeated draw once, as one node
    with a count of copies, must apply one residual step per extra copy to stay exact.
    repeats="skip": a candidate equal to an earlier one is skipped with no residual step, which is
    what storing the repeat once and forgetting it does. That changes the law (not exact).

    Returns the (V,) law of the emitted token; for "update" it equals p_target up to rounding."""
    if repeats not in ("update", "skip"):
        raise ValueError('repeats is "update" or "skip"')
    p = np.asarray(p_target, dtype=float)
    q = np.asarray(q_draft, dtype=float)
    law = np.zeros_like(p)
    for drawn in itertools.product(np.flatnonzero(q > 0), repeat=k):
        weight = float(np.prod(q[list(drawn)]))
        current, still_open, tried = p.copy(), 1.0, set()  # still_open: P(every candidate so far rejected)
        for x in drawn:
            if repeats == "skip" and x in tried:
                continue
            tried.add(x)
            keep = min(1.0, current[x] / q[x])
            law[x] += weight * still_open * keep
            still_open *= 1.0 - keep
            over = np.clip(current - q, 0.0, None)
            current = over / over.sum() if over.sum() > 0 else current
        law += weight * still_open * current
    return law
