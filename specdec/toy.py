"""Tiny models whose distributions are known exactly: the next-token logits depend only on the
last token (a bigram table). Checkers use them to test that a speculative decoder's output
follows the target's distribution, since the exact probability of every short continuation
can be written down.

A toy model behaves like the shipped `TinyGPT` wherever a learner's code could tell them apart:
it is a `torch.nn.Module` in eval mode whose table is a parameter, so `model(ids)` returns logits
(1, T, V) on the table's device (float32, with a grad_fn outside `torch.no_grad()`), and
`next(model.parameters()).device`, `model.device` and `specdec.model.model_device(model)` all
name that device. ids on another device raise, as they do with the shipped models, and
`model.config.vocab` / `model.config.max_len` exist too.
What it leaves out: the key/value cache (`new_cache`, `extend`), which notebook 04 does not use.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from specdec.model import Config


class BigramModel(nn.Module):
    """model(ids) -> logits (1, T, V) with row t = table[ids[0, t]]."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = nn.Parameter(table.float().clone())
        vocab = table.shape[-1]  # the fields a learner might read: vocab and max_len (no layers here)
        self.config = Config(d_model=vocab, n_layers=0, n_heads=1, max_len=1024, vocab=vocab)

    @property
    def device(self) -> torch.device:
        return self.table.device

    def forward(self, ids: torch.LongTensor) -> torch.Tensor:
        # F.embedding, not table[ids]: like the shipped models' embedding, it refuses ids that
        # live on another device instead of silently moving them.
        return F.embedding(ids, self.table)

    @torch.no_grad()
    def probs(self, temperature: float) -> torch.Tensor:
        """(V, V) float64 on the CPU: row a is the next-token distribution after token a."""
        return torch.softmax(self.table.detach().double().cpu() / temperature, dim=-1)


def toy_pair(device: str | torch.device = "cpu", close: bool = False) -> tuple[BigramModel, BigramModel]:
    """A 4-token target and a draft that is close but clearly different (alpha about 0.6-0.8 at
    temperature 1). close=True: the draft's logits halfway to the target's (alpha about 0.8-0.9),
    so that most rounds accept every draft and reach the bonus token."""
    target = torch.tensor([[2.0, 1.0, 0.0, -1.0],
                           [0.0, 2.0, 1.0, 0.0],
                           [1.0, -1.0, 2.0, 0.5],
                           [0.5, 0.5, -0.5, 1.5]])
    draft = torch.tensor([[0.5, 1.5, 0.0, 0.5],
                          [0.5, 1.0, 1.5, -0.5],
                          [1.5, 0.0, 0.5, 1.0],
                          [0.0, 1.0, 0.0, 1.0]])
    if close:
        draft = (target + draft) / 2
    pair = BigramModel(target).to(device).eval(), BigramModel(draft).to(device).eval()
    for i, model in enumerate(pair):  # how grading rebuilds it in the learner's kernel (specdec.remote)
        model.made_by = ("toy_pair", str(device), close, i)
    return pair
