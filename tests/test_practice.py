"""Notebook 05's machinery (specdec.practice, specdec.heads): every proposer leaves the output
exactly the target's, greedy token for token and sampled in distribution; the counters add up."""
import itertools

import numpy as np
import pytest
import torch

from solutions.checks._common import counts_match_pmf
from solutions.reference.a05_speculation_in_practice import ngram_propose
from specdec import practice, timing  # noqa: F401
from specdec.heads import load_heads
from specdec.model import encode, load
from tests.test_engine import greedy_plain_call
from specdec.practice import (
    DraftModel, Heads, PromptLookup, cached_verify_costs, head_agreement, pass_costs, speculate, vllm_counters,
)

PROMPTS = ["import os\n\n\ndef walk(root):\n    ", "class Stack:\n    def push(self, item):\n        self.items.append(item)\n\n    def pop(self):\n        "]


@pytest.fixture(scope="module")
def models():
    target = load("target", "cpu")
    return target, load("draft", "cpu"), load_heads(target)


def proposers(models):
    target, draft, heads = models
    return {"draft": DraftModel(draft), "lookup": PromptLookup(ngram_propose, 2), "heads": Heads(heads, target)}


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_is_the_targets_for_every_proposer_and_K(models, prompt):
    target = models[0]
    prompt = encode(prompt)
    want = greedy_plain_call(target, prompt, 48)
    for name, proposer in proposers(models).items():
        for K in (1, 3, 4, 6):
            out, st = speculate(target, proposer, prompt, 48, K)
            assert torch.equal(out, want), (name, K)
            assert st["accepted"] + st["rounds"] >= 48 and sum(st["accepted_at"]) == st["accepted"]
            assert st["rejected"] <= st["rounds"] and st["proposed"] <= K * st["rounds"]
            for i in range(1, len(st["tested"])):  # a draft is tested only after the earlier one was accepted
                assert st["tested"][i] <= st["accepted_at"][i - 1]
        out, st = speculate(target, proposer, prompt, 48, 2, adapt="hf")
        assert torch.equal(out, want), (name, "adaptive")
        assert all(1 <= k <= 16 for k in st["K_used"])


def test_adaptive_schedule_follows_the_hf_rule(models):
    target, draft, _ = models
    _, st = speculate(target, DraftModel(draft), encode(PROMPTS[1]), 80, 2, adapt="hf")
    ks = st["K_used"]
    assert ks[0] == 2 and len(set(ks)) > 1
    assert all(b in (a + 2, max(1, a - 1), 16) for a, b in zip(ks, ks[1:]))


@pytest.mark.parametrize("name", ["heads", "lookup"])
def test_sampled_first_token_follows_the_target(models, name):
    """The first emitted token at T = 1 must be distributed as softmax(target logits): exact
    binomial test per byte value, Bonferroni over the bins at level 1e-6, so a correct verifier
    fails with probability below 1e-6. 400 seeded runs."""
    target = models[0]
    prompt = encode("x = [1, 2, 3]\ny = [1, 2, 3]\nx = [1, 2")  # lookup proposes ", 3]" here
    with torch.no_grad():
        p = torch.softmax(target(prompt[None])[0, -1].double(), -1).numpy()
    proposer = proposers(models)[name]
    gen = torch.Generator().manual_seed(20261130)
    firsts = np.array([int(speculate(target, proposer, prompt, 1, 3, temperature=1.0, generator=gen)[0][0])
                       for _ in range(400)])
    support = np.nonzero(p > 0)[0]
    assert counts_match_pmf(firsts, support, p[support] / p[support].sum(), 1e-6)


def test_heads_accuracy_falls_with_depth(models):
    target, _, heads = models
    acc = head_agreement(target, heads, encode(PROMPTS[0]), 160)
    assert len(acc) == 4 and acc[0] > acc[-1]


def _made_up_clock(monkeypatch):
    """specdec.timing.timed on a made-up clock: a call returning logits of shape (batch, k, V) takes
    0.5 + 0.5 * batch + 0.1 * batch * (k - 1) seconds, and every other call 5 s more
    (interference from other processes, which the fastest-of-repeats rule must ignore)."""
    calls = itertools.count()

    def seconds(batch, k):
        return 0.5 + 0.5 * batch + 0.1 * batch * (k - 1)

    def timed(fn, device=None):
        out = fn()
        batch, k = out.shape[:2]
        return seconds(batch, k) + (5.0 if next(calls) % 2 else 0.0), out
    monkeypatch.setattr(timing, "timed", timed)  # the one timer behind practice's costs
    return seconds


def test_pass_costs_are_ratios_to_one_position(models, monkeypatch):
    """Each cost is the fastest time of its shape over the fastest one-position time at the same batch size."""
    seconds = _made_up_clock(monkeypatch)
    costs = pass_costs(models[0], positions=(1, 3), batches=(1, 8), repeats=3)
    assert costs == pytest.approx({(b, k): seconds(b, k) / seconds(b, 1) for b in (1, 8) for k in (1, 3)}, rel=1e-12)


def test_vllm_counters_rename_the_totals(models):
    """vLLM counts a draft round only when something was proposed: prompt lookup often proposes
    nothing, so num_drafts can be below the number of rounds, and its proposals can be short."""
    target = models[0]
    _, st = speculate(target, PromptLookup(ngram_propose, 2), encode(PROMPTS[1]), 48, 4)
    counters = vllm_counters(st)
    assert counters == dict(num_drafts=st["draft_rounds"], num_draft_tokens=st["proposed"],
                            num_accepted_tokens=st["accepted"])
    assert 0 < st["draft_rounds"] <= st["rounds"] and st["proposed"] <= 4 * st["draft_rounds"]
    assert st["tested"][0] == st["draft_rounds"]  # every round that proposed tests its first draft


def test_cached_verify_costs_are_ratios_to_one_position(models, monkeypatch):
    """Each pass really scores k new positions after the cached context, and its cost is the fastest
    time over the fastest one-position time."""
    seconds = _made_up_clock(monkeypatch)
    costs = cached_verify_costs(models[0], positions=(1, 5), context=60, repeats=2)
    assert costs == pytest.approx({k: seconds(1, k) / seconds(1, 1) for k in (1, 5)}, rel=1e-12)
