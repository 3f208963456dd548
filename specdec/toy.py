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

`toy_pair(cache=True)` and `text_pair()` add the shipped models' cache API (`new_cache()`,
`extend(ids (1, t), cache)`, `cache.rollback(length)`, `cache.length`) for notebook 04's cached
verifier. Their cache holds the token ids it was fed, position by position (a bigram needs no
keys or values), and every call is written to the model's `events`, so a checker can see what
each model was fed and what its cache held: `reset_events()` before a call, `events` after it
(in the grader, the kernel sends them back with the call's reply, coursekit.judge.wire).
They also have the shipped models' batch cache of notebook 07 (`new_batch_cache(B)`,
`extend_batch(ids (R, t), cache, rows=None)` -> logits (R, t, V), `cache.rollback(lengths)`,
`cache.lengths` a LongTensor on the model's device, `cache.batch`), recorded per row the same way.
What it leaves out: the tree pass (`extend_tree`, `keep`) of notebook 06.

`small_pair()` is not a bigram: a real transformer pair, the shipped draft as the target and a
noisy copy of it as the draft, with every API of the shipped models. Its passes cost about as
much as the shipped draft's (a 36th of the shipped target's on the 2-core course machine), so a
checker can decode greedily on it many times over where it cannot afford the shipped target.
"""
from __future__ import annotations

import copy
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F

from specdec.madeby import MadeBy, register
from specdec.model import Config

_CLOCK = itertools.count()  # one clock for every toy model, so a checker can interleave two models' events


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


class ToyCache:
    """A toy model's cache: `tokens[i]` is the token fed at position i; `length` of them are valid.
    Like the shipped KVCache, `rollback(length)` forgets positions from `length` on, and `length`
    may also be set directly (then positions past what was fed hold -1, as stale entries would)."""

    def __init__(self, model: "CachedBigramModel", name: int):
        self._model, self.name, self.tokens = model, name, []

    @property
    def length(self) -> int:
        return len(self.tokens)

    @length.setter
    def length(self, value: int) -> None:
        value = int(value)
        self._model._record("rollback", cache=self.name, to=value)
        self.tokens = self.tokens[:value] + [-1] * max(0, value - len(self.tokens))

    def rollback(self, length: int) -> None:
        assert 0 <= length <= self.length, (length, self.length)
        self.length = length


class ToyBatchCache:
    """A toy model's batch cache (the shipped BatchKVCache's API): `tokens[b]` are the tokens fed to
    row b, position by position; `lengths` (B,) long on the model's device. `rollback(lengths)`
    shortens each row to its own length; `lengths` may also be set directly (positions past what
    was fed then hold -1, as stale entries would)."""

    def __init__(self, model: "CachedBigramModel", name: int, batch: int):
        self._model, self.name, self.tokens = model, name, [[] for _ in range(batch)]

    @property
    def batch(self) -> int:
        return len(self.tokens)

    @property
    def lengths(self) -> torch.Tensor:
        return torch.tensor([len(row) for row in self.tokens], dtype=torch.long, device=self._model.device)

    @lengths.setter
    def lengths(self, value) -> None:
        value = [int(v) for v in torch.as_tensor(value).reshape(-1).tolist()]
        assert len(value) == self.batch, "one length per row of the cache"
        self._model._record("rollback_batch", cache=self.name, to=value)
        self.tokens = [row[:n] + [-1] * max(0, n - len(row)) for row, n in zip(self.tokens, value)]

    def rollback(self, lengths) -> None:
        """Row b forgets every position from lengths[b] on, as the shipped cache's rollback."""
        new = torch.as_tensor(lengths).reshape(-1).tolist()
        assert len(new) == self.batch, "one length per row of the cache"
        assert all(0 <= int(n) <= len(row) for n, row in zip(new, self.tokens)), (new, [len(r) for r in self.tokens])
        self.lengths = new


class CachedBigramModel(BigramModel):
    """A bigram model with the shipped models' cache API, which records every call in `events`:
    {"op": "call", "fed": ids} for model(ids); {"op": "new", "cache": n}; {"op": "extend", "cache":
    n, "before": the tokens the cache held, "fed": ids}; {"op": "rollback", "cache": n, "to": length};
    for the batch cache {"op": "new_batch", "cache": n, "batch": B}; {"op": "extend_batch", "cache": n,
    "rows": [b, ...], "before": [tokens row b held, ...], "fed": [ids of row b, ...]};
    {"op": "rollback_batch", "cache": n, "to": [length of each row]};
    each with "t", a clock shared by all toy models, and "model", the index `made_by` gives it."""

    def __init__(self, table: torch.Tensor, index: int = 0):
        super().__init__(table)
        self.index = index
        self.reset_events()

    def reset_events(self) -> None:
        self.events, self._caches = [], 0

    def _record(self, op: str, **fields) -> None:
        self.events.append(dict(op=op, t=next(_CLOCK), model=self.index, **fields))

    def forward(self, ids: torch.LongTensor) -> torch.Tensor:
        self._record("call", fed=[int(i) for i in ids.reshape(-1).tolist()])
        return super().forward(ids)

    def new_cache(self) -> ToyCache:
        self._caches += 1
        self._record("new", cache=self._caches)
        return ToyCache(self, self._caches)

    def extend(self, ids: torch.LongTensor, cache: ToyCache, hidden: bool = False) -> torch.Tensor:
        """Append ids (1, t) after the cache's `length` positions; logits (1, t, V) of the new positions."""
        assert ids.dim() == 2 and ids.shape[0] == 1, "extend takes ids of shape (1, t)"
        assert cache.length + ids.shape[1] <= self.config.max_len, "sequence longer than the model's max_len"
        assert not hidden, "a toy model has no hidden states"
        fed = [int(i) for i in ids.reshape(-1).tolist()]
        self._record("extend", cache=cache.name, before=list(cache.tokens), fed=fed)
        logits = F.embedding(ids, self.table)  # the same device check as the plain call
        cache.tokens = cache.tokens + fed
        return logits

    def new_batch_cache(self, batch: int) -> ToyBatchCache:
        self._caches += 1
        self._record("new_batch", cache=self._caches, batch=int(batch))
        return ToyBatchCache(self, self._caches, int(batch))

    def extend_batch(self, ids: torch.LongTensor, cache: ToyBatchCache, rows=None) -> torch.Tensor:
        """Append ids (R, t) to rows `rows` of a batch cache (default: every row), each after its own
        length; the logits (R, t, V) of the new positions (row t of a row: table[ids[r, t]])."""
        rows = list(range(cache.batch)) if rows is None else [int(r) for r in torch.as_tensor(rows).reshape(-1).tolist()]
        assert ids.dim() == 2 and ids.shape[0] == len(rows), "one row of ids per row of the cache"
        assert len(set(rows)) == len(rows) and all(0 <= r < cache.batch for r in rows), rows
        if ids.shape[1] == 0:  # nothing to append: like the shipped model, whatever the ids' dtype
            return torch.zeros(len(rows), 0, self.config.vocab, device=self.device)
        logits = F.embedding(ids, self.table)  # the same device check as the plain call
        fed = ids.tolist()
        assert all(len(cache.tokens[r]) + len(f) <= self.config.max_len for r, f in zip(rows, fed)), \
            "sequence longer than the model's max_len"
        self._record("extend_batch", cache=cache.name, rows=rows, before=[list(cache.tokens[r]) for r in rows], fed=fed)
        for r, f in zip(rows, fed):
            cache.tokens[r] = cache.tokens[r] + f
        return logits


def _build(tables, device, cache: bool, factory: str, kwargs: dict):
    """The pair's models, each with how grading rebuilds it in the learner's kernel (MadeBy)."""
    pair = []
    for i, table in enumerate(tables):
        model = (CachedBigramModel(table, i) if cache else BigramModel(table)).to(device).eval()
        model.made_by = MadeBy(factory, kwargs, item=i)
        pair.append(model)
    return tuple(pair)


# text_pair's vocabulary: the target's greedy text cycles through tokens 0..TEXT_TOKENS-1; the
# draft's wrong guesses are tokens TEXT_TOKENS..TEXT_VOCAB-1, which the text never contains.
TEXT_TOKENS, TEXT_VOCAB = 40, 64


def text_pair(device: str | torch.device = "cpu") -> tuple[CachedBigramModel, CachedBigramModel]:
    """A cached toy pair whose greedy text is 0, 1, 2, ... (token a is followed by a+1, cycling
    through TEXT_TOKENS tokens) and whose draft guesses right except after a token a with
    a % 5 == 4 or a % 7 == 2 (2, 4, 9, 14, 16, 19, 23, ...), where it proposes a token outside the text (and goes on guessing outside it).
    So at temperature 0 every draft that the target rejects differs from every token of the text,
    and a checker can tell from a cache's tokens alone which entries are text and which are
    rejected drafts, and where each text token belongs."""
    V, T = TEXT_VOCAB, TEXT_TOKENS
    target, draft = torch.zeros(V, V), torch.zeros(V, V)
    for a in range(V):
        text_next = (a + 1) % T if a < T else (a - T + 1) % T
        target[a, text_next] = 5.0
        off_text = T + (a % (V - T)) if a < T else T + ((a - T + 1) % (V - T))
        draft[a, off_text if (a >= T or a % 5 == 4 or a % 7 == 2) else text_next] = 5.0
    return _build((target, draft), device, True, "text_pair", {"device": str(device)})


def toy_pair(device: str | torch.device = "cpu", close: bool = False,
             cache: bool = False) -> tuple[BigramModel, BigramModel]:
    """A 4-token target and a draft that is close but clearly different (alpha about 0.6-0.8 at
    temperature 1). close=True: the draft's logits halfway to the target's (alpha about 0.8-0.9),
    so that most rounds accept every draft and reach the bonus token. cache=True: the same tables
    with the cache API (`CachedBigramModel`)."""
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
    return _build((target, draft), device, cache, "toy_pair", {"device": str(device), "close": close, "cache": cache})


SMALL_NOISE, SMALL_SEED = 0.15, 0  # the draft's weights: each tensor + N(0, (0.15 x its own std)^2), seed 0


def small_pair(device: str | torch.device = "cpu"):
    """(target, draft): the shipped draft (1 layer, 297k parameters) as the target, and as its draft
    a copy whose every weight tensor got seeded Gaussian noise of SMALL_NOISE times that tensor's
    standard deviation (made on the CPU from a seeded generator, so the grader and the kernel, which
    each build it, hold the same weights; then moved to `device`).
    Both are `TinyGPT`s with the shipped models' calls and caches. Greedy, the draft agrees with
    the target's next token about 7 times in 10 on a04's prompts (0.62-0.81), and every step's
    top-2 logit margin on them is at least 0.03 for both (tests/test_checkers.py checks both)."""
    from specdec.model import load

    target = load("draft", "cpu")
    draft = copy.deepcopy(target)
    gen = torch.Generator().manual_seed(SMALL_SEED)
    with torch.no_grad():
        for p in draft.parameters():
            scale = float(p.std()) if p.numel() > 1 else 0.0
            p.add_(torch.randn(p.shape, generator=gen) * SMALL_NOISE * scale)
    pair = []
    for i, model in enumerate((target, draft)):
        model = model.to(device).eval()
        model.made_by = MadeBy("small_pair", {"device": str(device)}, item=i)
        pair.append(model)
    return tuple(pair)


register("toy_pair", toy_pair)
register("text_pair", text_pair)
register("small_pair", small_pair)
