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
            emitted = []
            for i, x in enumerate(drafts):
                u = torch.rand((), generator=generator, dtype=torch.float64)
                if u < torch.clamp(p_rows[i, x] / q_rows[i][x], max=1.0):
                    emitted.append(x)
                    continue
                residual = torch.clamp(p_rows[i] - q_rows[i], min=0)
                emitted.append(int(torch.multinomial(residual / residual.sum(), 1, generator=generator)))
                break
            else:
                emitted.append(int(torch.multinomial(p_rows[K], 1, generator=generator)))  # bonus token
            stats["rounds"] += 1
            stats["proposed"] += K
            stats["accepted"] += len(emitted) - 1
            ids = torch.cat([ids, torch.tensor(emitted, device=device)])
    return ids[len(prompt):len(prompt) + max_new_tokens].cpu(), stats
