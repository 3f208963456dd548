# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 08_raising_alpha.

GENERATED from source/08_raising_alpha/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import math
import numpy as np
import torch
import torch.nn.functional as F
from specdec.distill import LOSSES, SOURCES, acceptance_rates, distilled, fine_tune, held_out, measure
from specdec.model import default_device, encode, load


def mixture_draft(P, w):
    """The single q minimising sum_i w_i KL(p_i || q): shape (V,)."""
    P, w = np.asarray(P, dtype=float), np.asarray(w, dtype=float)
    return w @ P


def acceptance(P, w, q):
    """sum_i w_i sum_x min(p_i(x), q(x)): the acceptance rate of one draft q over the contexts; a float."""
    P, w, q = np.asarray(P, dtype=float), np.asarray(w, dtype=float), np.asarray(q, dtype=float)
    return float(w @ np.minimum(P, q[None, :]).sum(axis=1))


def best_draft(P, w):
    """A q maximising acceptance(P, w, q) over distributions on the V tokens: shape (V,), sums to 1."""
    P, w = np.asarray(P, dtype=float), np.asarray(w, dtype=float)
    pieces = []  # (slope, token, width): while q(x) is between two levels, the contexts above still gain
    for x in range(P.shape[1]):
        levels = np.unique(np.concatenate([[0.0], P[:, x]]))
        for low, high in zip(levels[:-1], levels[1:]):
            pieces.append((w[P[:, x] >= high].sum(), x, high - low))
    q, left = np.zeros(P.shape[1]), 1.0
    for slope, x, width in sorted(pieces, key=lambda piece: -piece[0]):  # stable: a token's pieces in order
        take = min(width, left)
        q[x] += take
        left -= take
        if left <= 0:
            break
    return q


def forward_kl(target_logits, draft_logits, mask, temperature=1.0):
    """Mean over the real positions of KL(p || q); p, q = softmax(logits / temperature). A 0-d tensor."""
    log_p = torch.log_softmax(target_logits / temperature, dim=-1)
    log_q = torch.log_softmax(draft_logits / temperature, dim=-1)
    per_position = (log_p.exp() * (log_p - log_q)).sum(-1)
    return per_position[mask].mean()


def reverse_kl(target_logits, draft_logits, mask, temperature=1.0):
    """Mean over the real positions of KL(q || p); p, q = softmax(logits / temperature). A 0-d tensor."""
    log_p = torch.log_softmax(target_logits / temperature, dim=-1)
    log_q = torch.log_softmax(draft_logits / temperature, dim=-1)
    per_position = (log_q.exp() * (log_q - log_p)).sum(-1)
    return per_position[mask].mean()


def total_variation(target_logits, draft_logits, mask, temperature=1.0):
    """Mean over the real positions of TV(p, q) = 1/2 sum_x |p(x) - q(x)|. A 0-d tensor."""
    p = torch.softmax(target_logits / temperature, dim=-1)
    q = torch.softmax(draft_logits / temperature, dim=-1)
    return 0.5 * (p - q).abs().sum(-1)[mask].mean()


def jensen_shannon(target_logits, draft_logits, mask, temperature=1.0):
    """Mean over the real positions of JS(p, q) = KL(p || m)/2 + KL(q || m)/2, m = (p + q)/2, in nats. A 0-d tensor."""
    log_p = torch.log_softmax(target_logits / temperature, dim=-1)
    log_q = torch.log_softmax(draft_logits / temperature, dim=-1)
    log_m = torch.logaddexp(log_p, log_q) - np.log(2.0)
    per_position = 0.5 * (log_p.exp() * (log_p - log_m)).sum(-1) + 0.5 * (log_q.exp() * (log_q - log_m)).sum(-1)
    return per_position[mask].mean()


def expected_acceptance(target_logits, draft_logits, mask, temperature=1.0):
    """Mean over the real positions of sum_x min(p(x), q(x)): the draft's acceptance rate there. A 0-d tensor."""
    p = torch.softmax(target_logits / temperature, dim=-1)
    q = torch.softmax(draft_logits / temperature, dim=-1)
    return torch.minimum(p, q).sum(-1)[mask].mean()


def on_policy_batch(draft, target, prompts, n_new, temperature, generator):
    """(ids (B, P + n_new), target_logits (B, n_new, V)): the draft's continuations and the target's scores."""
    with torch.no_grad():
        ids = prompts
        for _ in range(n_new):
            logits = draft(ids)[:, -1]
            if temperature == 0:
                token = logits.argmax(-1, keepdim=True)
            else:
                token = torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=generator)
            ids = torch.cat([ids, token], dim=1)
        target_logits = target(ids[:, :-1])[:, prompts.shape[1] - 1:]
    return ids, target_logits
