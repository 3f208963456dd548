"""Tiny models whose distributions are known exactly: the next-token logits depend only on the
last token (a bigram table). Checkers use them to test that a speculative decoder's output
follows the target's distribution, since the exact probability of every short continuation
can be written down."""
from __future__ import annotations

import torch


class BigramModel:
    """model(ids) -> logits (1, T, V) with row t = table[ids[0, t]]: any callable works as a model."""

    def __init__(self, table: torch.Tensor):
        self.table = table.float()

    def __call__(self, ids: torch.LongTensor) -> torch.Tensor:
        return self.table[ids[0]][None]

    def probs(self, temperature: float) -> torch.Tensor:
        return torch.softmax(self.table / temperature, dim=-1)


def toy_pair() -> tuple[BigramModel, BigramModel]:
    """A 4-token target and a draft that is close but clearly different (alpha about 0.6-0.8)."""
    target = torch.tensor([[2.0, 1.0, 0.0, -1.0],
                           [0.0, 2.0, 1.0, 0.0],
                           [1.0, -1.0, 2.0, 0.5],
                           [0.5, 0.5, -0.5, 1.5]])
    draft = torch.tensor([[0.5, 1.5, 0.0, 0.5],
                          [0.5, 1.0, 1.5, -0.5],
                          [1.5, 0.0, 0.5, 1.0],
                          [0.0, 1.0, 0.0, 1.0]])
    return BigramModel(target), BigramModel(draft)
