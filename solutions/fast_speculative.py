"""The fast reference for notebook 04 and the benchmark: plain and speculative decoding with the
models' key/value caches (`specdec.model`), so each step feeds only new tokens.

Letters as everywhere in the course: p is the TARGET distribution, q the DRAFT distribution.
Temperature 0 means greedy: the distributions are one-hot, acceptance is "draft == target's
argmax", and the output equals the target's greedy output token for token.

Cache bookkeeping, with S the committed sequence (prompt + emitted tokens):
- the target cache always holds S[:-1]; a round feeds [S[-1], d1..dK] and gets the K+1 rows
  p_1..p_{K+1} in one pass, then rolls back to the accepted prefix;
- the draft cache holds some prefix of S; a round first feeds what it lacks, then its own
  drafts one at a time, then rolls back to what was accepted.
"""
from __future__ import annotations

import torch

from specdec.model import TinyGPT


def distribution(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Rows of logits -> probabilities at `temperature`; 0 gives the one-hot argmax."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)


def _draw(probs: torch.Tensor, generator) -> int:
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.no_grad()
def plain_generate(model: TinyGPT, prompt: torch.LongTensor, n: int, temperature: float = 1.0,
                   generator: torch.Generator | None = None) -> torch.LongTensor:
    cache = model.new_cache()
    logits = model.extend(prompt[None].to(model.device), cache)[0, -1]
    out = []
    for _ in range(n):
        token = _draw(distribution(logits, temperature), generator)
        out.append(token)
        logits = model.extend(torch.tensor([[token]], device=model.device), cache)[0, -1]
    return torch.tensor(out)


@torch.no_grad()
def speculative_generate(target: TinyGPT, draft: TinyGPT, prompt: torch.LongTensor, n: int, K: int,
                         temperature: float = 1.0, generator: torch.Generator | None = None):
    """(tokens (n,), stats): stats has rounds, proposed, accepted and rejected (rounds that ended
    with a rejection; accepted / (accepted + rejected) estimates alpha). K = 0 is plain decoding."""
    if K == 0:
        return plain_generate(target, prompt, n, temperature, generator), dict(rounds=n, proposed=0, accepted=0, rejected=0)
    device = target.device
    seq = [int(t) for t in prompt]
    t_cache, d_cache = target.new_cache(), draft.new_cache()
    target.extend(torch.tensor([seq[:-1]], device=device), t_cache)
    stats = dict(rounds=0, proposed=0, accepted=0, rejected=0)
    while len(seq) - len(prompt) < n:
        start = len(seq)
        # Draft: catch up on committed tokens it has not seen, then propose K tokens one by one.
        logits = draft.extend(torch.tensor([seq[d_cache.length:]], device=device), d_cache)[0, -1]
        drafts, q_rows = [], []
        for i in range(K):
            q = distribution(logits, temperature)
            drafts.append(_draw(q, generator))
            q_rows.append(q)
            if i < K - 1:
                logits = draft.extend(torch.tensor([[drafts[-1]]], device=device), d_cache)[0, -1]
        # Target: one pass over the last committed token and the K drafts gives K+1 rows.
        p_rows = distribution(target.extend(torch.tensor([[seq[-1]] + drafts], device=device), t_cache)[0],
                              temperature)
        q_rows = torch.stack(q_rows)
        idx = torch.arange(K, device=device)
        drafted = torch.tensor(drafts, device=device)
        ratio = p_rows[idx, drafted] / q_rows[idx, drafted]
        u = torch.rand(K, generator=generator, device=device) if temperature > 0 else torch.zeros(K, device=device)
        rejected = torch.nonzero(u >= ratio.clamp(max=1.0)).flatten()  # at T=0: ratio is 1 or 0
        n_acc = int(rejected[0]) if len(rejected) else K
        if n_acc < K:
            residual = (p_rows[n_acc] - q_rows[n_acc]).clamp(min=0)
            last = _draw(residual / residual.sum(), generator)
        else:
            last = _draw(p_rows[K], generator)  # all accepted: the bonus token
        seq += drafts[:n_acc] + [last]
        t_cache.rollback(len(seq) - 1)
        d_cache.rollback(min(d_cache.length, start + n_acc))
        stats["rounds"] += 1
        stats["proposed"] += K
        stats["accepted"] += n_acc
        stats["rejected"] += int(n_acc < K)
    return torch.tensor(seq[len(prompt):len(prompt) + n]), stats
