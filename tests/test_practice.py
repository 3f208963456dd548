"""Notebook 05's machinery (specdec.practice, specdec.heads): head accuracy by depth, the cost
ratios on a made-up clock, the counters under vLLM's names. The engine's guarantees are tested
in tests/test_engine.py."""
import itertools

import pytest

from solutions.reference.a05_speculation_in_practice import ngram_propose
from specdec import practice, timing  # noqa: F401
from specdec.model import encode
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


def test_loop_costs_recover_the_round_cost_model_on_a_made_up_clock(models, monkeypatch):
    """loop_costs takes the loops apart: with passes that cost a known time per position, a sampling
    step and an acceptance test that cost a known time each, and nothing else moving the clock,
    every term comes back exactly (in units of a one-position target pass)."""
    from tests.support.fakes import Clock as _Clock, Costly as _Costly
    import specdec.engine as engine

    clock = _Clock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    pick, accept = engine.pick, engine.accept

    def slow_pick(*args, **kwargs):  # a plain step's own work: 0.02 of a pass
        clock.now += 0.02
        return pick(*args, **kwargs)

    def slow_accept(*args, **kwargs):  # a round's own work: 0.05 of a pass
        clock.now += 0.05
        return accept(*args, **kwargs)

    monkeypatch.setattr(engine, "pick", slow_pick)
    monkeypatch.setattr(engine, "accept", slow_accept)
    target, draft, _ = models
    # the target's pass: 1 + 0.1 per extra position (verification is not free); the draft's: 0.1 a position
    t, d = _Costly(target, clock, lambda k: 0.9 + 0.1 * k), _Costly(draft, clock, lambda k: 0.1 * k)
    K, n = 2, 24
    got = practice.loop_costs(t, d, encode(PROMPTS[0]), n, K)
    st = speculate(target, practice.DraftModel(draft), encode(PROMPTS[0]), n, K)[1]
    assert got["unit"] == pytest.approx(1.0) and got["s"] == pytest.approx(0.02)
    assert got["verify"] == pytest.approx(1.0 + 0.1 * K) and got["b"] == pytest.approx(0.05)
    assert got["rounds"] == st["rounds"]
    # a draft pass is 0.1, or 0.2 when it also feeds the last draft of a round that accepted them all
    full = st["rounds"] - st["rejected"]
    passes = K * st["rounds"] - 1
    assert 0.1 * (1 + (full - 1) / passes) - 1e-9 <= got["c"] <= 0.1 * (1 + full / passes) + 1e-9
    assert got["o"] == pytest.approx((K * got["c"] + got["verify"] + 0.05) / 1.02 - (K * got["c"] + got["verify"]))
    # one o (issue 42): the course's definition, so a round costs K c + verify + o plain steps exactly
    assert got["o"] == timing.per_round_overhead(K * got["c"] + got["verify"], got["b"], got["s"])
    assert K * got["c"] + got["verify"] + got["o"] == pytest.approx((K * got["c"] + got["verify"] + got["b"]) / (1 + got["s"]))
    zero = practice.loop_costs(t, d, encode(PROMPTS[0]), n, 0)
    assert zero["o"] == 0.0 and zero["b"] == pytest.approx(0.02)
    assert timing.per_round_overhead(1.0, zero["b"], zero["s"]) == 0.0  # a plain step: no round overhead
