"""The fast reference for notebook 04 and the benchmark: plain and speculative decoding with the
models' key/value caches (`specdec.model`), so each step feeds only new tokens.

Letters as everywhere in the course: p is the TARGET distribution, q the DRAFT distribution.
Temperature 0 means greedy: acceptance is "draft == target's argmax", and the output equals the
target's greedy output token for token. Greedy takes a fast path (argmax, no probability rows):
the per-round Python and small-op work is what separates a measured speedup from the formula's,
so both loops keep it small and alike.

Cache bookkeeping, with S the committed sequence (prompt + emitted tokens):
- the target cache always holds S[:-1]; a round feeds [S[-1], d1..dK] and gets the K+1 rows
  p_1..p_{K+1} in one pass, then rolls back to the accepted prefix;
- the draft cache holds some prefix of S; a round first feeds what it lacks, then its own
  drafts one at a time, then rolls back to what was accepted.
"""
from __future__ import annotations

import torch

from specdec.model import TinyGPT


def _ids(tokens: list[int], device) -> torch.LongTensor:
    return torch.tensor([tokens], device=device)


def _sample(logits: torch.Tensor, temperature: float, generator) -> tuple[int, torch.Tensor | None]:
    """(token, probabilities) from one row of logits; greedy returns no probabilities."""
    if temperature == 0:
        return int(logits.argmax()), None
    probs = torch.softmax(logits / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator)), probs


def verify_drafts(p_logits: torch.Tensor, drafts: list[int], q_rows: list, temperature: float,
                  generator=None) -> tuple[int, int]:
    """One round's acceptance: (number of accepted drafts, the target's correction or bonus token),
    from the target's K+1 rows of logits and the draft's K proposal distributions."""
    K = len(drafts)
    if temperature == 0:
        best = p_logits.argmax(-1).tolist()
        n_acc = next((i for i in range(K) if drafts[i] != best[i]), K)
        return n_acc, best[n_acc]  # the target's own choice: the correction, or the bonus token
    p_rows = torch.softmax(p_logits / temperature, dim=-1)
    q_rows = torch.stack(q_rows)
    idx = torch.arange(K, device=p_logits.device)
    drafted = torch.tensor(drafts, device=p_logits.device)
    ratio = (p_rows[idx, drafted] / q_rows[idx, drafted]).tolist()
    u = torch.rand(K, generator=generator, device=p_logits.device).tolist()
    n_acc = next((i for i in range(K) if u[i] >= min(1.0, ratio[i])), K)
    if n_acc < K:
        residual = (p_rows[n_acc] - q_rows[n_acc]).clamp(min=0)
        return n_acc, int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
    return K, int(torch.multinomial(p_rows[K], 1, generator=generator))  # all accepted: the bonus token


@torch.no_grad()
def plain_generate(model: TinyGPT, prompt: torch.LongTensor, n: int, temperature: float = 1.0,
                   generator: torch.Generator | None = None) -> torch.LongTensor:
    cache = model.new_cache()
    logits = model.extend(prompt[None].to(model.device), cache)[0, -1]
    out = []
    for _ in range(n):
        token, _ = _sample(logits, temperature, generator)
        out.append(token)
        logits = model.extend(_ids([token], model.device), cache)[0, -1]
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
    target.extend(_ids(seq[:-1], device), t_cache)
    stats = dict(rounds=0, proposed=0, accepted=0, rejected=0)
    while len(seq) - len(prompt) < n:
        start = len(seq)
        # Draft: catch up on committed tokens it has not seen, then propose K tokens one by one.
        logits = draft.extend(_ids(seq[d_cache.length:], device), d_cache)[0, -1]
        drafts, q_rows = [], []
        for i in range(K):
            token, q = _sample(logits, temperature, generator)
            drafts.append(token)
            q_rows.append(q)
            if i < K - 1:
                logits = draft.extend(_ids([token], device), d_cache)[0, -1]
        # Target: one pass over the last committed token and the K drafts gives K+1 rows.
        p_logits = target.extend(_ids([seq[-1]] + drafts, device), t_cache)[0]
        n_acc, last = verify_drafts(p_logits, drafts, q_rows, temperature, generator)
        seq += drafts[:n_acc] + [last]
        t_cache.rollback(len(seq) - 1)
        d_cache.rollback(min(d_cache.length, start + n_acc))
        stats["rounds"] += 1
        stats["proposed"] += K
        stats["accepted"] += n_acc
        stats["rejected"] += int(n_acc < K)
    return torch.tensor(seq[len(prompt):len(prompt) + n]), stats
