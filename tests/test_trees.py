"""Token trees on the shipped pair (specdec.model's tree pass and specdec.trees): a tree scored in
one pass gives each node the logits of the plain call on its own path, the kept cache is the
accepted path's, and greedy tree decoding emits exactly the target's greedy tokens."""
import numpy as np
import pytest
import torch

from solutions.reference.a06_token_trees import select_tree, tree_attention_mask, verify_tree_greedy
from specdec.engine import plain
from specdec.model import encode, load
from specdec.trees import SHAPES, Dynamic, Template, chain, depths, path_of, rank_acceptance, tree_generate

PROMPT = encode("def parse(self, path):\n    with open(path) as f:\n")
PARENTS = [-1, -1, 0, 0, 2, 1, 5]  # two branches of different depths
TOKENS = [101, 102, 103, 104, 105, 106, 107]


@pytest.fixture(scope="module")
def pair():
    return load("target", "cpu"), load("draft", "cpu")


def _path(i):
    out = []
    while i >= 0:
        out.append(i)
        i = PARENTS[i]
    return out[::-1]


def test_a_tree_pass_gives_every_node_the_plain_call_on_its_own_path(pair):
    target, _ = pair
    cache = target.new_cache()
    target.extend(PROMPT.view(1, -1), cache)
    logits = target.extend_tree(torch.tensor([TOKENS]), torch.as_tensor(tree_attention_mask(PARENTS)), cache)[0]
    assert cache.length == len(PROMPT) + len(TOKENS)
    with torch.no_grad():
        for i in range(len(TOKENS)):
            ids = torch.cat([PROMPT, torch.tensor([TOKENS[j] for j in _path(i)])]).view(1, -1)
            # float32 on CPU: the two attention orders agree to about 1e-5 on logits of size ~10
            torch.testing.assert_close(logits[i], target(ids)[0, -1], atol=1e-4, rtol=1e-4)


def test_a_chain_mask_is_exactly_extend(pair):
    target, _ = pair
    ids = torch.tensor([[5, 6, 7, 8]])
    a, b = target.new_cache(), target.new_cache()
    target.extend(PROMPT.view(1, -1), a)
    target.extend(PROMPT.view(1, -1), b)
    parents, _ = chain(4)
    torch.testing.assert_close(target.extend_tree(ids, torch.as_tensor(tree_attention_mask(parents)), a),
                               target.extend(ids, b), atol=1e-5, rtol=1e-5)


def test_keep_leaves_the_accepted_paths_entries_as_the_plain_call_makes_them(pair):
    target, _ = pair
    start = len(PROMPT)
    cache = target.new_cache()
    target.extend(PROMPT.view(1, -1), cache)
    target.extend_tree(torch.tensor([TOKENS]), torch.as_tensor(tree_attention_mask(PARENTS)), cache)
    path = _path(6)  # 1 -> 5 -> 6: not a prefix of the node order, so entries must move
    cache.keep(start, [start + i for i in path])
    plain_cache = target.new_cache()
    seq = torch.cat([PROMPT, torch.tensor([TOKENS[i] for i in path])])
    target.extend(seq.view(1, -1), plain_cache)
    assert cache.length == plain_cache.length == len(seq)
    torch.testing.assert_close(cache.kv[:, :, :, :len(seq)], plain_cache.kv[:, :, :, :len(seq)], atol=1e-4, rtol=1e-4)
    nxt = torch.tensor([[42]])  # and decoding goes on from it as from the plain cache
    torch.testing.assert_close(target.extend(nxt, cache), target.extend(nxt, plain_cache), atol=1e-4, rtol=1e-4)


def test_keep_refuses_slots_out_of_order_or_past_the_end(pair):
    target, _ = pair
    cache = target.new_cache()
    target.extend(PROMPT.view(1, -1), cache)
    for slots in ([5, 4], [len(PROMPT)], [1]):
        with pytest.raises(AssertionError):
            cache.keep(3, slots)


@pytest.mark.parametrize("name", ["chain of 8", "binary, breadth-first", "top-4, then a chain of 4 under the best"])
def test_greedy_tree_decoding_is_the_targets_greedy_decoding(pair, name):
    target, draft = pair
    n = 40
    out, stats = tree_generate(target, draft, PROMPT, n, Template(*SHAPES[name]), tree_attention_mask,
                               verify_tree_greedy)
    assert torch.equal(out, plain(target, PROMPT, n))
    assert stats["nodes"] == 8 * stats["rounds"] and stats["target_positions"] == 9 * stats["rounds"]
    assert stats["rounds"] < n  # the draft agrees with the target somewhere on this prompt
    for tested, accepted in zip(stats["tested"], stats["accepted_at"]):
        assert 0 <= accepted <= tested <= stats["rounds"]


@pytest.mark.parametrize("budget", [1, 8])
def test_greedy_dynamic_tree_decoding_is_the_targets_greedy_decoding(pair, budget):
    target, draft = pair
    n = 30
    out, stats = tree_generate(target, draft, PROMPT, n, Dynamic(budget, select_tree, depth=3, topk=3),
                               tree_attention_mask, verify_tree_greedy)
    assert torch.equal(out, plain(target, PROMPT, n))
    assert stats["nodes"] == budget * stats["rounds"]


def test_a_dynamic_tree_keeps_the_most_valuable_nodes_and_is_a_tree(pair):
    target, draft = pair
    from specdec.trees import Drafter

    tree = Dynamic(8, select_tree, depth=3, topk=3)(Drafter(draft, tree_attention_mask), PROMPT.tolist())
    assert len(tree.tokens) == 8 and all(p < i for i, p in enumerate(tree.parents))
    for i, p in enumerate(tree.parents):
        assert p < 0 or tree.value[i] <= tree.value[p]
    siblings = {(p, t) for p, t in zip(tree.parents, tree.tokens)}
    assert len(siblings) == 8  # siblings carry distinct tokens


def test_shapes_are_trees_with_distinct_sibling_ranks():
    for parents, ranks in SHAPES.values():
        assert len(parents) == len(ranks) == 8 and all(p < i for i, p in enumerate(parents))
        assert len({(p, r) for p, r in zip(parents, ranks)}) == 8
        assert depths(parents) == sorted(depths(parents))


def test_path_of_follows_the_emitted_tokens():
    mask = tree_attention_mask(PARENTS)
    assert path_of(TOKENS, mask, [102, 106, 107, 9]) == [1, 5, 6]
    assert path_of(TOKENS, mask, [9]) == []
    with pytest.raises(ValueError, match="do not follow a path"):
        path_of(TOKENS, mask, [103, 9])  # node 2 is not a child of the root


def test_rank_acceptance_is_a_distribution_over_ranks(pair):
    target, draft = pair
    acc = rank_acceptance(target, draft, PROMPT, 30)
    assert acc.shape == (4,) and np.all(acc >= 0) and acc.sum() <= 1 + 1e-9
    assert acc[0] > acc[1:].max()  # the draft's first guess is its best one on this prompt
