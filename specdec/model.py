"""A tiny byte-level decoder-only transformer: the target and draft models of notebooks 04-05.

What it offers:
- `model(ids) -> logits`: ids a LongTensor (1, T), logits (1, T, 256); row t is the
  distribution of token t+1. This is the only call learners need.
- `model.new_cache()` and `model.extend(ids, cache) -> logits` for the new positions: an
  incremental key/value cache, and `cache.rollback(length)` to drop rejected drafts. The fast
  reference and the benchmark use it; tests check it gives the plain call's logits.
- `model.extend_tree(ids, mask, cache)`: a tree of new tokens in one pass (notebook 06): node i
  sees the whole cache and the new nodes j with mask[i, j] (itself and its ancestors), at
  position cache.length + depth - 1; `cache.keep(start, slots)` then keeps the accepted path.

A batch cache (`new_batch_cache(B)`, `extend_batch`, per-row `rollback`) holds B sequences that
grow and roll back apart: a server's batch (notebook 07).

What it leaves out: dropout, weight tying tricks, rotary embeddings. Bytes are tokens (vocabulary 256), so no tokenizer is needed.
CPU by default; the same code runs on CUDA (`model.to("cuda")`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from specdec.madeby import MadeBy, register

WEIGHTS = Path(__file__).resolve().parent / "weights"


@dataclass(frozen=True)
class Config:
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    max_len: int = 1024
    vocab: int = 256


class KVCache:
    """Per-layer keys and values for one sequence, preallocated to max_len; `length` positions are valid."""

    def __init__(self, config: Config, device, dtype):
        shape = (config.n_layers, 2, config.n_heads, config.max_len, config.d_model // config.n_heads)
        self.kv = torch.zeros(shape, device=device, dtype=dtype)
        self.length = 0

    def rollback(self, length: int) -> None:
        """Forget every position from `length` on (rejected drafts); the stale entries are overwritten later."""
        assert 0 <= length <= self.length, (length, self.length)
        self.length = length

    def keep(self, start: int, slots) -> None:
        """Keep positions [0, start) and then the positions `slots` (ascending, each >= start), moved
        down to follow them: after a tree pass, the accepted path's entries, in path order."""
        slots = [int(s) for s in slots]
        assert all(a < b for a, b in zip([start - 1] + slots, slots + [self.length])), (start, slots, self.length)
        if slots:
            index = torch.tensor(slots, device=self.kv.device)
            self.kv[:, :, :, start:start + len(slots)] = self.kv[:, :, :, index]
        self.length = start + len(slots)


class BatchKVCache:
    """Keys and values for a batch of B sequences that grow by different amounts (a server's batch:
    each row accepts its own number of drafts), preallocated to max_len; row b has `lengths[b]`
    valid positions. Made by `TinyGPT.new_batch_cache(B)`, filled by `TinyGPT.extend_batch`."""

    def __init__(self, config: Config, batch: int, device, dtype):
        shape = (config.n_layers, 2, batch, config.n_heads, config.max_len, config.d_model // config.n_heads)
        self.kv = torch.zeros(shape, device=device, dtype=dtype)
        self.lengths = torch.zeros(batch, dtype=torch.long, device=device)

    @property
    def batch(self) -> int:
        return self.lengths.shape[0]

    def rollback(self, lengths) -> None:
        """Row b forgets every position from lengths[b] on (its rejected drafts); each row by its own amount."""
        lengths = torch.as_tensor(lengths, dtype=torch.long, device=self.lengths.device).reshape(self.lengths.shape)
        assert bool((lengths >= 0).all()) and bool((lengths <= self.lengths).all()), (lengths, self.lengths)
        self.lengths = lengths.clone()


class Block(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.n_heads = c.n_heads
        self.ln1 = nn.LayerNorm(c.d_model)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)
        self.ln2 = nn.LayerNorm(c.d_model)
        self.mlp = nn.Sequential(nn.Linear(c.d_model, 4 * c.d_model), nn.GELU(), nn.Linear(4 * c.d_model, c.d_model))

    def forward(self, x, layer_cache=None, start=0, mask=None):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        if layer_cache is None:
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            layer_cache[0, :, start:start + T] = k[0]
            layer_cache[1, :, start:start + T] = v[0]
            keys = layer_cache[0, :, :start + T].unsqueeze(0)
            values = layer_cache[1, :, :start + T].unsqueeze(0)
            att = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x))

    def forward_rows(self, x, layer_cache, rows, positions, mask):
        """`forward` for rows `rows` of a batch cache (layer_cache (2, B, H, max_len, hd)): row r's
        new keys and values go to its own positions (positions (R, T)); mask (R, 1, T, L) says which
        of the first L cached positions each new one sees."""
        R, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(R, T, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        r_index = rows[:, None].expand(R, T)
        layer_cache[0][r_index, :, positions] = k.transpose(1, 2)
        layer_cache[1][r_index, :, positions] = v.transpose(1, 2)
        L = mask.shape[-1]
        keys, values = layer_cache[0][rows, :, :L], layer_cache[1][rows, :, :L]
        att = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        x = x + self.proj(att.transpose(1, 2).reshape(R, T, D))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab, config.d_model)
        self.pos = nn.Embedding(config.max_len, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)

    @property
    def device(self):
        return self.head.weight.device

    def _run(self, ids, cache=None, hidden=False, tree=None):
        start = cache.length if cache is not None else 0
        T = ids.shape[1]
        assert start + T <= self.config.max_len, "sequence longer than the model's max_len"
        if tree is None:
            positions = torch.arange(start, start + T, device=ids.device)
        else:  # a node's position is the prefix length plus its depth minus one
            positions = start + tree.sum(-1) - 1
        x = self.tok(ids) + self.pos(positions)
        # With a cache, new position i (absolute start + i) sees every cached position and the new
        # ones up to itself; a single new position sees everything, so it needs no mask at all.
        # A tree's node sees every cached position and, among the new ones, the tree mask's.
        mask = None
        if tree is not None:
            mask = torch.cat([torch.ones(T, start, dtype=torch.bool, device=ids.device), tree], dim=1)
        elif cache is not None and T > 1:
            mask = torch.ones(T, start + T, dtype=torch.bool, device=ids.device).tril(diagonal=start)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.kv[i], start, mask)
        if cache is not None:
            cache.length = start + T
        h = self.ln_f(x)
        return (self.head(h), h) if hidden else self.head(h)

    def forward(self, ids: torch.LongTensor, hidden: bool = False):
        """ids (B, T) -> logits (B, T, 256); row t is the distribution of token t+1. With
        hidden=True, (logits, hidden states): the final hidden states (B, T, d_model) are the
        input of the output layer (what self-drafting heads read, notebook 05)."""
        return self._run(ids, hidden=hidden)

    def new_cache(self) -> KVCache:
        return KVCache(self.config, self.device, self.head.weight.dtype)

    def extend(self, ids: torch.LongTensor, cache: KVCache, hidden: bool = False):
        """Append ids (1, t) after the cache's `length` positions; logits (1, t, 256) of the new
        positions, and with hidden=True also their final hidden states (1, t, d_model), the input
        of the output layer (what self-drafting heads read, notebook 05)."""
        return self._run(ids, cache, hidden)

    def new_batch_cache(self, batch: int) -> BatchKVCache:
        return BatchKVCache(self.config, batch, self.device, self.head.weight.dtype)

    def extend_batch(self, ids: torch.LongTensor, cache: BatchKVCache, rows=None) -> torch.Tensor:
        """Append ids (R, t) to rows `rows` of a batch cache (default: every row, R = B), each after
        its own `lengths[row]` positions, in one pass; the logits (R, t, 256) of the new positions.
        Row r's logits are those `extend` gives that sequence alone, up to float rounding (the same
        arithmetic over a padded, masked batch). A prompt of each row's own length goes in with
        `rows=[b]`; a decoding step feeds every row the same number of tokens."""
        device = ids.device
        rows = torch.arange(cache.batch, device=device) if rows is None else \
            torch.as_tensor(rows, dtype=torch.long, device=device).reshape(-1)
        R, T = ids.shape
        assert R == rows.shape[0], "one row of ids per row of the cache"
        if T == 0:  # nothing to append (a prompt whose every token is the last ones, say)
            return torch.zeros(R, 0, self.config.vocab, device=device, dtype=self.head.weight.dtype)
        start = cache.lengths[rows]
        assert int(start.max()) + T <= self.config.max_len, "sequence longer than the model's max_len"
        positions = start[:, None] + torch.arange(T, device=device)  # (R, T)
        x = self.tok(ids) + self.pos(positions)
        L = int(start.max()) + T
        mask = (torch.arange(L, device=device)[None, None, :] <= positions[:, :, None])[:, None]  # (R, 1, T, L)
        for i, block in enumerate(self.blocks):
            x = block.forward_rows(x, cache.kv[i], rows, positions, mask)
        lengths = cache.lengths.clone()
        lengths[rows] = start + T
        cache.lengths = lengths
        return self.head(self.ln_f(x))

    def extend_tree(self, ids: torch.LongTensor, mask, cache: KVCache) -> torch.Tensor:
        """Append a tree of new tokens ids (1, t) in one pass: `mask` (t, t) bool, mask[i, j] True
        when node j is node i or one of its ancestors (the nodes in topological order). Every node
        also sees the cache's `length` positions, and sits at position length + depth - 1 (its
        depth = the ancestors it sees, itself included). Returns the logits (1, t, 256): row i is
        the distribution of the token after the path ending at node i. The cache then holds all t
        nodes; `cache.keep` keeps the accepted path. A chain (a lower-triangular mask) gives
        exactly `extend`."""
        mask = torch.as_tensor(mask, dtype=torch.bool, device=ids.device)
        assert mask.shape == (ids.shape[1], ids.shape[1]) and bool(mask.diagonal().all()), "mask must be (t, t), True on the diagonal"
        return self._run(ids, cache, tree=mask)


def default_device() -> str:
    """The course's one choice of device: "cuda" when a GPU is present, else "cpu". Notebook 04's
    setup cell (its DEVICE) and the checkers that grade it both call this, so the learner's code
    meets the shipped pair and the checkers' toy models on the same device."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def load(name: str, device: str | torch.device | None = None) -> TinyGPT:
    """Load shipped weights: name is 'target' or 'draft'. Device: `default_device()` unless given."""
    device = device or default_device()
    config = Config(**json.loads((WEIGHTS / f"{name}.json").read_text())["config"])
    model = TinyGPT(config)
    state = torch.load(WEIGHTS / f"{name}.pt", map_location="cpu", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    model.made_by = MadeBy("load", {"name": name, "device": str(device)})
    return model.to(device).eval()


register("load", load)


def save(model: TinyGPT, name: str, card: dict) -> None:
    WEIGHTS.mkdir(exist_ok=True)
    state = {k: v.half() for k, v in model.state_dict().items()}  # fp16 on disk: half the bytes
    torch.save(state, WEIGHTS / f"{name}.pt")
    (WEIGHTS / f"{name}.json").write_text(json.dumps({"config": asdict(model.config), **card}, indent=1) + "\n")


def encode(text: str) -> torch.LongTensor:
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def decode(ids) -> str:
    return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


def model_device(model) -> torch.device:
    """The device of a model's weights; CPU for a callable without parameters (a plain function)."""
    params = getattr(model, "parameters", None)
    first = next(iter(params()), None) if callable(params) else None
    return first.device if first is not None else torch.device("cpu")
