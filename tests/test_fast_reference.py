"""The fast (KV-cache) reference used by the benchmark: greedy output equals the target's greedy
output token for token, for several prompts and K = 1..8, and its stats add up."""
import pytest
import torch

from solutions.checks.a04 import greedy_reference
from solutions.fast_speculative import plain_generate, speculative_generate
from specdec.model import encode, load

PROMPTS = ["import os\n\n\ndef walk(", "class Stack:\n    def push(self, item):\n        ", "    return {"]


@pytest.fixture(scope="module")
def pair():
    return load("target", "cpu"), load("draft", "cpu")


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_speculative_equals_greedy_target(pair, prompt):
    target, draft = pair
    prompt = encode(prompt)
    expected = greedy_reference(target, prompt, 40)
    assert torch.equal(plain_generate(target, prompt, 40, temperature=0), expected)
    for K in range(1, 9):
        out, stats = speculative_generate(target, draft, prompt, 40, K, temperature=0)
        assert torch.equal(out, expected), K
        assert stats["proposed"] == K * stats["rounds"]
        assert stats["rejected"] <= stats["rounds"] and 0 <= stats["accepted"] <= stats["proposed"]
        # every round emits accepted + 1 tokens; the last round may be cut at 40
        assert stats["accepted"] + stats["rounds"] >= 40 > stats["accepted"] + stats["rounds"] - (K + 1)


def test_sampling_is_reproducible_with_a_generator(pair):
    target, draft = pair
    runs = [speculative_generate(target, draft, encode(PROMPTS[0]), 30, 4, 1.0,
                                 torch.Generator().manual_seed(7))[0] for _ in range(2)]
    assert torch.equal(*runs)
