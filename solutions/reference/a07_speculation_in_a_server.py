# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for 07_speculation_in_a_server.

GENERATED from source/07_speculation_in_a_server/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""


import functools
import math
import matplotlib.pyplot as plt
import numpy as np
import torch
from specdec.engine import plain, probabilities
from specdec.model import encode, load
from specdec.serving import PassTime, batch_pass_times, crossover, measured_pass_time, sweep
from specdec.timing import timed


def batch_accept(p, q, drafts, u):
    """One verification step for a batch of B rows, vectorised over the rows.

    p (B, K+1, V): the target's probabilities after each prefix of the drafts (row i: the
    distribution of draft i, the last row: of the bonus token); q (B, K, V): the draft's, from
    which the drafts were drawn; drafts (B, K) long; u (B, K+1) uniforms in [0, 1): u[:, i]
    decides draft i (accepted when u < p(d) / q(d)), u[:, K] draws the emitted token by the
    inverse CDF of the row that applies (the residual after a rejection, the bonus row p[:, K]
    when every draft was accepted).
    Returns (accepted (B,) long: drafts kept before the first rejection; token (B,) long)."""
    B, K1, V = p.shape
    K = K1 - 1
    rows = torch.arange(B, device=p.device)
    if K == 0:
        n, dist = torch.zeros(B, dtype=torch.long, device=p.device), p[:, 0]
    else:
        p_d = p[:, :K].gather(-1, drafts[..., None])[..., 0]  # p_i(d_i), (B, K)
        q_d = q.gather(-1, drafts[..., None])[..., 0]  # q_i(d_i) > 0: the draft drew d_i from q_i
        ok = u[:, :K] * q_d < p_d  # u < p/q without dividing
        n = ok.long().cumprod(-1).sum(-1)  # the drafts before the first rejection
        at = n.clamp(max=K - 1)
        residual = (p[rows, at] - q[rows, at]).clamp(min=0)
        residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, p[rows, at])  # p = q up to rounding
        dist = torch.where((n == K)[:, None], p[:, K], residual)
    cdf = dist.cumsum(-1)  # unnormalised: compare with u times the row's total
    token = torch.searchsorted(cdf, u[:, K:] * cdf[:, -1:], right=True)[:, 0].clamp(max=V - 1)
    return n, token


def batched_generate(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Speculative decoding of B prompts (a list of 1-D LongTensors of any lengths, at least 2
    tokens each) as one batch: every round, K draft passes and one target pass for all rows, then
    batch_accept, then each row's caches rolled back by its own amount. Returns a list of B
    LongTensors of max_new_tokens new tokens each."""
    device = target.device
    B = len(prompts)
    seqs = [prompt.tolist() for prompt in prompts]
    starts = [len(s) for s in seqs]
    t_cache, d_cache = target.new_batch_cache(B), draft.new_batch_cache(B)
    with torch.no_grad():
        for b, s in enumerate(seqs):  # the target holds all but the last token, the draft all but two
            target.extend_batch(torch.tensor([s[:-1]], dtype=torch.long, device=device), t_cache, rows=[b])
            draft.extend_batch(torch.tensor([s[:-2]], dtype=torch.long, device=device), d_cache, rows=[b])
        while min(len(s) - m for s, m in zip(seqs, starts)) < max_new_tokens:
            last2 = torch.tensor([s[-2:] for s in seqs], device=device)
            drafts, q_rows, feed = [], [], last2
            for _ in range(K):
                q_i = probabilities(draft.extend_batch(feed, d_cache)[:, -1], temperature)
                d_i = q_i.argmax(-1) if temperature == 0 else torch.multinomial(q_i, 1, generator=generator)[:, 0]
                drafts.append(d_i)
                q_rows.append(q_i)
                feed = d_i[:, None]
            V = target.config.vocab
            d = torch.stack(drafts, 1) if K else torch.zeros(B, 0, dtype=torch.long, device=device)
            q = torch.stack(q_rows, 1) if K else torch.zeros(B, 0, V, device=device)
            p = probabilities(target.extend_batch(torch.cat([last2[:, 1:], d], 1), t_cache), temperature)
            u = torch.rand(B, K + 1, generator=generator, device=device)
            n, token = batch_accept(p, q, d, u)
            lengths = torch.tensor([len(s) for s in seqs], device=device)
            t_cache.rollback(lengths + n)  # each row: all but its new last token
            if K:  # (with K = 0 the draft is never asked)
                d_cache.rollback(lengths + n - 1)  # each row: all but its new last two tokens
            # the round's one read of the host: every row's count, token and drafts in one transfer
            for s, (n_b, token_b, *drafts_b) in zip(seqs, torch.cat([n[:, None], token[:, None], d], 1).tolist()):
                s += drafts_b[:n_b] + [token_b]
    return [torch.tensor(s[m:m + max_new_tokens]) for s, m in zip(seqs, starts)]


def goodput(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """Tokens per second of one batch step: B rows that each hold `context` cached positions, K drafts
    each (K = 0: plain decoding). target_time(batch, tokens, context) and draft_time(batch, tokens,
    context): seconds of one pass of `batch` rows that each score `tokens` new positions after
    `context` cached ones (notebook 05's roofline_time with its model and device fixed). overhead:
    seconds a speculative step spends beyond its passes (and beyond a plain step's own work), once
    per step; plain decoding pays none."""
    tokens = K + 1.0 if alpha == 1 else (1 - alpha ** (K + 1)) / (1 - alpha)
    step = target_time(B, K + 1, context)
    if K > 0:  # plain decoding runs no draft and pays no round overhead
        step += K * draft_time(B, 1, context) + overhead
    return float(B * tokens / step)


def best_K(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    """The K in 0..K_max with the highest goodput at batch B and context `context` (the smallest one
    on ties): 0 when no speculation pays."""
    rates = [goodput(alpha, K, B, target_time, draft_time, overhead, context) for K in range(K_max + 1)]
    return int(np.argmax(rates))  # the first maximum
