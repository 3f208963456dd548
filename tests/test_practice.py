"""Notebook 05's machinery (specdec.practice, specdec.heads): head accuracy by depth, the cost
ratios on a made-up clock, the counters under vLLM's names. The engine's guarantees are tested
in tests/test_engine.py."""
import itertools

import pytest

from solutions.reference.a05_speculation_in_practice import ngram_propose
from specdec import practice, timing  # noqa: F401
from specdec.model import encode
from tests.test_engine import models  # noqa: F401 - the shipped pair and heads, a pytest fixture
from specdec.practice import (
    PromptLookup, cached_verify_costs, head_agreement, pass_costs, speculate, vllm_counters,
)

PROMPTS = ["import os\n\n\ndef walk(root):\n    ", "class Stack:\n    def push(self, item):\n        self.items.append(item)\n\n    def pop(self):\n        "]


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
