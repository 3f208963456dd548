# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 04_torch_verifier.

GENERATED from source/04_torch_verifier/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import time
import numpy as np
import torch
from specdec.model import decode, default_device, encode, load, model_device


def next_distribution(logits, temperature):
    """Last-axis logits -> probabilities at `temperature` (0: one-hot argmax), as float64 on the CPU."""
    logits = logits.detach().double().cpu()
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).double()
    return torch.softmax(logits / temperature, dim=-1)


def autoregressive_generate(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    """Plain decoding: one model call per new token; returns the new tokens, shape (max_new_tokens,)."""
    device = model_device(model)  # the prompt may live on the CPU while the model is on a GPU
    ids = prompt.to(device)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            probs = next_distribution(model(ids[None])[0, -1], temperature)
            token = torch.multinomial(probs, 1, generator=generator).to(device)
            ids = torch.cat([ids, token])
    return ids[len(prompt):].cpu()


def accept_drafts(drafts, q_rows, p_rows, generator=None):
    """One round's verification: drafts (K ints), q_rows (K, V) the distributions they were drawn
    from, p_rows (K+1, V) the target's. Returns the accepted drafts followed by the correction
    (first rejection) or the bonus token (all accepted): 1 to K+1 tokens."""
    emitted = []
    for i, x in enumerate(drafts):
        u = torch.rand((), generator=generator, dtype=torch.float64)
        if u < torch.clamp(p_rows[i, x] / q_rows[i][x], max=1.0):
            emitted.append(x)
            continue
        residual = torch.clamp(p_rows[i] - q_rows[i], min=0)
        emitted.append(int(torch.multinomial(residual / residual.sum(), 1, generator=generator)))
        return emitted
    emitted.append(int(torch.multinomial(p_rows[len(drafts)], 1, generator=generator)))  # bonus token
    return emitted


def speculative_generate(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Speculative decoding with the plain model call; returns (new tokens, stats)."""
    device = model_device(target)
    ids = prompt.to(device)
    stats = dict(rounds=0, proposed=0, accepted=0)
    with torch.no_grad():
        while len(ids) - len(prompt) < max_new_tokens:
            # 1. draft K tokens, keeping q_i, the distribution each was drawn from
            drafts, q_rows, seq = [], [], ids
            for _ in range(K):
                q = next_distribution(draft(seq[None])[0, -1], temperature)
                token = torch.multinomial(q, 1, generator=generator)
                drafts.append(int(token))
                q_rows.append(q)
                seq = torch.cat([seq, token.to(device)])
            # 2. one target call: rows len(ids)-1 .. len(ids)-1+K are p_1 .. p_{K+1}
            p_rows = next_distribution(target(seq[None])[0, len(ids) - 1:], temperature)
            # 3. accept in order; the first rejection draws from the residual and ends the round
            emitted = accept_drafts(drafts, q_rows, p_rows, generator)
            stats["rounds"] += 1
            stats["proposed"] += K
            stats["accepted"] += len(emitted) - 1
            ids = torch.cat([ids, torch.tensor(emitted, device=device)])
    return ids[len(prompt):len(prompt) + max_new_tokens].cpu(), stats


def speculative_generate_cached(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Speculative decoding on the models' KV caches: every call feeds only what the cache lacks."""
    device = model_device(target)
    seq = prompt.tolist()  # the committed tokens
    t_cache, d_cache = target.new_cache(), draft.new_cache()
    stats = dict(rounds=0, proposed=0, accepted=0)

    def feed(model, cache, tokens):
        """Append tokens to the cache; the logits of the new positions, (len(tokens), V)."""
        return model.extend(torch.tensor([tokens], device=device), cache)[0]

    with torch.no_grad():
        while len(seq) - len(prompt) < max_new_tokens:
            n0 = len(seq)
            # 1. draft: first what the draft's cache lacks (the end of the last round), then one token per pass
            drafts, q_rows, new = [], [], seq[d_cache.length:]
            for _ in range(K):
                q = next_distribution(feed(draft, d_cache, new)[-1], temperature)
                drafts.append(int(torch.multinomial(q, 1, generator=generator)))
                q_rows.append(q)
                new = drafts[-1:]
            # 2. one target pass over what its cache lacks and the drafts: the last K+1 rows are p_1 .. p_{K+1}
            p_rows = next_distribution(feed(target, t_cache, seq[t_cache.length:] + drafts)[-(K + 1):], temperature)
            # 3. accept, then keep in each cache only the committed tokens it was fed
            emitted = accept_drafts(drafts, q_rows, p_rows, generator)
            n = len(emitted) - 1
            t_cache.rollback(n0 + n)                         # forgets the rejected drafts
            d_cache.rollback(min(n0 + n, d_cache.length))    # the draft never saw its last draft
            seq += emitted                                   # the last token is fed next round
            stats["rounds"] += 1
            stats["proposed"] += K
            stats["accepted"] += n
    return torch.tensor(seq[len(prompt):len(prompt) + max_new_tokens]), stats
