"""Learner answers for 07_speculation_in_a_server: CORRECT ones written differently from the
reference, and WRONG ones with a phrase their hint must contain. A function may call helpers of
this module: tests/support/notebooks.py pastes them into the notebook cell along with it."""
import numpy as np
import torch

# The notebook's own functions: an answer that calls them gets the learner's (or, in process, the reference's)
from solutions.reference.a07_speculation_in_a_server import batch_accept, goodput  # noqa: F401

# ---------------------------------------------------------------- correct


def batch_accept_divide(p, q, drafts, u):
    """Ratios by division, the first rejection by argmax, the token by a normalised CDF."""
    B, K1, V = p.shape
    K = K1 - 1
    idx = torch.arange(B)
    if K > 0:
        ratio = p[:, :K].gather(2, drafts.unsqueeze(2)).squeeze(2) / q.gather(2, drafts.unsqueeze(2)).squeeze(2)
        rejected = torch.cat([u[:, :K] >= ratio, torch.ones(B, 1, dtype=torch.bool)], dim=1)
        n = rejected.int().argmax(dim=1).long()  # the first True: the first rejection, or K
        pos = torch.minimum(n, torch.full_like(n, K - 1))
        res = torch.clamp(p[idx, pos] - q[idx, pos], min=0.0)
        total = res.sum(dim=1, keepdim=True)
        res = torch.where(total > 0, res / torch.where(total > 0, total, torch.ones_like(total)), p[idx, pos])
        row = torch.where((n == K).unsqueeze(1), p[:, K], res)
    else:
        n, row = torch.zeros(B, dtype=torch.long), p[:, 0]
    row = row / row.sum(dim=1, keepdim=True)
    cdf = torch.cumsum(row, dim=1)
    token = (cdf <= u[:, K:K + 1]).sum(dim=1).clamp(max=V - 1).long()
    return n, token


def batch_accept_numpy(p, q, drafts, u):
    """The same rule in numpy, tensors back."""
    P, Q, D, U = (x.detach().cpu().numpy() for x in (p, q, drafts, u))
    B, K1, V = P.shape
    K = K1 - 1
    n = np.zeros(B, dtype=np.int64)
    alive = np.ones(B, dtype=bool)
    for i in range(K):  # a loop over positions, vectorised over the rows
        ok = U[:, i] * Q[np.arange(B), i, D[:, i]] < P[np.arange(B), i, D[:, i]]
        alive &= ok
        n += alive
    at = np.minimum(n, max(K - 1, 0))
    if K:
        res = np.maximum(P[np.arange(B), at] - Q[np.arange(B), at], 0)
        empty = res.sum(1) <= 0
        res[empty] = P[np.arange(B), at][empty]
    else:
        res = P[:, 0]
    dist = np.where((n == K)[:, None], P[:, K], res)
    cdf = np.cumsum(dist, axis=1)
    token = np.minimum((cdf <= U[:, K:K + 1] * cdf[:, -1:]).sum(1), V - 1)
    return torch.from_numpy(n), torch.from_numpy(token.astype(np.int64))


def batched_generate_tensors(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Committed text kept as padded tensors with a length per row; caches rolled back with torch.minimum."""
    from specdec.engine import probabilities

    device = target.device
    B = len(prompts)
    lens = torch.tensor([len(p) for p in prompts])
    width = int(lens.max()) + (max_new_tokens + 1) * (K + 1) + 2  # a fast row may run ahead of the slowest
    text = torch.zeros(B, width, dtype=torch.long)
    for b, prompt in enumerate(prompts):
        text[b, :len(prompt)] = prompt.cpu()
    start = lens.clone()
    tc, dc = target.new_batch_cache(B), draft.new_batch_cache(B)
    with torch.no_grad():
        for b in range(B):
            target.extend_batch(text[b:b + 1, :lens[b] - 1].to(device), tc, rows=[b])
            draft.extend_batch(text[b:b + 1, :lens[b] - 2].to(device), dc, rows=[b])
        while bool(((lens - start) < max_new_tokens).any()):
            idx = torch.arange(B)
            tail = torch.stack([text[idx, lens - 2], text[idx, lens - 1]], 1).to(device)
            ds, qs, feed = [], [], tail
            for _ in range(K):
                qi = probabilities(draft.extend_batch(feed, dc)[:, -1], temperature)
                di = qi.argmax(-1) if temperature == 0 else torch.multinomial(qi, 1, generator=generator).view(-1)
                ds.append(di)
                qs.append(qi)
                feed = di.view(B, 1)
            d = torch.stack(ds, 1) if ds else torch.zeros(B, 0, dtype=torch.long, device=device)
            q = torch.stack(qs, 1) if qs else torch.zeros(B, 0, target.config.vocab, device=device)
            p = probabilities(target.extend_batch(torch.cat([tail[:, 1:], d], 1), tc), temperature)
            n, tok = batch_accept(p, q, d, torch.rand(B, K + 1, generator=generator, device=device))
            n, tok, d = n.cpu(), tok.cpu(), d.cpu()
            tc.rollback((lens + n).to(device))
            if K:
                dc.rollback(torch.minimum((lens + n - 1).to(device), dc.lengths))
            for b in range(B):
                k = int(n[b])
                text[b, lens[b]:lens[b] + k] = d[b, :k]
                text[b, lens[b] + k] = tok[b]
            lens = lens + n + 1
    return [text[b, start[b]:start[b] + max_new_tokens].clone() for b in range(B)]


def batched_generate_per_row_draws(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Each row's uniforms drawn in a loop over rows, the drafts by the Gumbel-max trick (argmax of
    log q plus Gumbel noise from `generator`), every row's text read back once per round."""
    device = target.device
    B, V = len(prompts), target.config.vocab
    texts = [prompt.tolist() for prompt in prompts]
    tc, dc = target.new_batch_cache(B), draft.new_batch_cache(B)

    def probs(logits):
        if temperature == 0:
            return torch.nn.functional.one_hot(logits.argmax(-1), V).float()
        return torch.softmax(logits.float() / temperature, -1)

    with torch.no_grad():
        for b, text in enumerate(texts):
            tc.lengths  # noqa: B018 - a learner's look at the cache
            target.extend_batch(torch.tensor(text[:-1], device=device).view(1, -1), tc, rows=torch.tensor([b]))
            draft.extend_batch(torch.tensor(text[:-2], device=device).view(1, -1), dc, rows=torch.tensor([b]))
        while any(len(t) - len(p) < max_new_tokens for t, p in zip(texts, prompts)):
            tail = torch.tensor([t[-2:] for t in texts], device=device)
            drafts, qs, feed = [], [], tail
            for _ in range(K):
                qi = probs(draft.extend_batch(feed, dc)[:, -1])
                if temperature == 0:
                    di = qi.argmax(-1)
                else:
                    gumbel = -torch.log(-torch.log(torch.rand(qi.shape, generator=generator, device=device)
                                                   .clamp_min(1e-20)))
                    di = (qi.log() + gumbel).argmax(-1)
                drafts.append(di)
                qs.append(qi)
                feed = di.unsqueeze(1)
            d = torch.stack(drafts, 1) if K else torch.zeros(B, 0, dtype=torch.long, device=device)
            q = torch.stack(qs, 1) if K else torch.zeros(B, 0, V, device=device)
            p = probs(target.extend_batch(torch.cat([tail[:, 1:], d], 1), tc))
            u = torch.stack([torch.rand(K + 1, generator=generator, device=device) for _ in range(B)])
            n, tok = batch_accept(p, q, d, u)
            before = torch.tensor([len(t) for t in texts], device=device)
            tc.rollback(before + n)
            if K:
                dc.rollback(before + n - 1)
            host = torch.cat([n.unsqueeze(1), tok.unsqueeze(1), d], 1).cpu().numpy()
            for text, row in zip(texts, host):
                text.extend(row[2:2 + row[0]].tolist() + [int(row[1])])
    return [torch.tensor(t[len(p):len(p) + max_new_tokens], dtype=torch.long) for t, p in zip(texts, prompts)]


def batched_generate_numpy_rows(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Drafts drawn on the host by numpy's inverse CDF from torch uniforms of `generator`; text kept in numpy."""
    from specdec.engine import probabilities

    device = target.device
    B = len(prompts)
    texts = [np.asarray(prompt.cpu(), dtype=np.int64) for prompt in prompts]
    goal = np.array([len(t) + max_new_tokens for t in texts])
    tc, dc = target.new_batch_cache(B), draft.new_batch_cache(B)
    with torch.no_grad():
        for b, text in enumerate(texts):
            target.extend_batch(torch.from_numpy(text[None, :-1]).to(device), tc, rows=[b])
            draft.extend_batch(torch.from_numpy(text[None, :-2]).to(device), dc, rows=[b])
        while any(len(t) < g for t, g in zip(texts, goal)):
            tail = torch.from_numpy(np.stack([t[-2:] for t in texts])).to(device)
            drafts, qs, feed = [], [], tail
            for _ in range(K):
                qi = probabilities(draft.extend_batch(feed, dc)[:, -1], temperature)
                if temperature == 0:
                    di = qi.argmax(-1).cpu().numpy()
                else:
                    r = torch.rand(B, 1, generator=generator, device=device).cpu().numpy()
                    cdf = np.cumsum(qi.double().cpu().numpy(), axis=1)
                    di = np.minimum((cdf <= r * cdf[:, -1:]).sum(1), cdf.shape[1] - 1)
                drafts.append(di)
                qs.append(qi)
                feed = torch.from_numpy(np.asarray(di, dtype=np.int64)[:, None]).to(device)
            d_np = np.stack(drafts, 1) if K else np.zeros((B, 0), dtype=np.int64)
            d = torch.from_numpy(d_np.astype(np.int64)).to(device)
            q = torch.stack(qs, 1) if K else torch.zeros(B, 0, target.config.vocab, device=device)
            p = probabilities(target.extend_batch(torch.cat([tail[:, 1:], d], 1), tc), temperature)
            n, tok = batch_accept(p, q, d, torch.rand(B, K + 1, generator=generator, device=device))
            n_np, tok_np = n.cpu().numpy(), tok.cpu().numpy()
            lengths = np.array([len(t) for t in texts])
            tc.rollback(torch.from_numpy(lengths + n_np).to(device))
            if K:
                dc.rollback(torch.from_numpy(lengths + n_np - 1).to(device))
            texts = [np.concatenate([t, d_np[b, :n_np[b]], [tok_np[b]]]) for b, t in enumerate(texts)]
    return [torch.from_numpy(t[g - max_new_tokens:g].astype(np.int64)) for t, g in zip(texts, goal)]


def goodput_power_sum(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """Expected tokens as a power sum; the draft's passes summed one by one; keywords for the pass times."""
    tokens = sum(alpha ** k for k in range(K + 1))
    drafts = sum(draft_time(batch=B, tokens=1, context=context) for _ in range(K))
    extra = overhead if K >= 1 else 0.0
    return B * tokens / (extra + target_time(batch=B, tokens=K + 1, context=context) + drafts)


def goodput_growing_draft_context(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """The draft's i-th pass reads its cache with the round's earlier drafts in it (context + i)."""
    tokens = (1 - alpha ** (K + 1)) / (1 - alpha) if alpha != 1 else K + 1
    if K == 0:
        return B * tokens / target_time(B, 1, context)
    return B * tokens / (target_time(B, K + 1, context) + sum(draft_time(B, 1, context + i) for i in range(K))
                         + overhead)


def best_K_loop(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    best, best_rate = 0, goodput(alpha, 0, B, target_time, draft_time, overhead, context)
    for K in range(1, K_max + 1):
        rate = goodput(alpha, K, B, target_time, draft_time, overhead, context)
        if rate > best_rate:
            best, best_rate = K, rate
    return best


def best_K_numpy_integer(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    """The right K as numpy's int64: full marks from the hidden check, which grades the value (the visible test,
    which carries no points, asks for a Python int; tests/test_serving_notebook.py)."""
    return np.argmax([goodput(alpha, K, B, target_time, draft_time, overhead=overhead, context=context)
                      for K in range(K_max + 1)])


# ---------------------------------------------------------------- wrong


def batch_accept_shared_uniform(p, q, drafts, u):
    """Draws one row of uniforms and uses it for the whole batch."""
    u = u[0].repeat(u.shape[0], 1)
    return _reference_rule(p, q, drafts, u)


def batch_accept_bonus_on_reject(p, q, drafts, u):
    """Every row's token from the bonus row, whether it rejected or not."""
    B, K1, V = p.shape
    n, _ = _reference_rule(p, q, drafts, u)
    cdf = p[:, K1 - 1].cumsum(-1)
    return n, torch.searchsorted(cdf, (u[:, -1:] * cdf[:, -1:]).contiguous(), right=True)[:, 0].clamp(max=V - 1)


def batch_accept_counts_all(p, q, drafts, u):
    """Counts every draft that passed, not the prefix."""
    B, K1, V = p.shape
    K = K1 - 1
    if K == 0:
        return _reference_rule(p, q, drafts, u)
    ok = u[:, :K] * q.gather(-1, drafts[..., None])[..., 0] < p[:, :K].gather(-1, drafts[..., None])[..., 0]
    n = ok.long().sum(-1)
    _, token = _reference_rule(p, q, drafts, u)
    return n, token


def _reference_rule(p, q, drafts, u, strict=True, right=True):
    """The rule, with the two comparisons a learner can get wrong as switches."""
    B, K1, V = p.shape
    K = K1 - 1
    rows = torch.arange(B)
    if K == 0:
        n, dist = torch.zeros(B, dtype=torch.long), p[:, 0]
    else:
        scaled = u[:, :K] * q.gather(-1, drafts[..., None])[..., 0]
        p_d = p[:, :K].gather(-1, drafts[..., None])[..., 0]
        ok = scaled < p_d if strict else scaled <= p_d
        n = ok.long().cumprod(-1).sum(-1)
        at = n.clamp(max=K - 1)
        res = (p[rows, at] - q[rows, at]).clamp(min=0)
        res = torch.where(res.sum(-1, keepdim=True) > 0, res, p[rows, at])
        dist = torch.where((n == K)[:, None], p[:, K], res)
    cdf = dist.cumsum(-1)
    return n, torch.searchsorted(cdf, (u[:, K:] * cdf[:, -1:]).contiguous(), right=right)[:, 0].clamp(max=V - 1)


def batch_accept_bonus_from_last_draft_row(p, q, drafts, u):
    """The bonus token of a row that accepted everything drawn from p[:, K-1] (off by one)."""
    B, K1, V = p.shape
    K = K1 - 1
    n, token = _reference_rule(p, q, drafts, u)
    if K == 0:
        return n, token
    cdf = p[:, K - 1].cumsum(-1)
    bonus = torch.searchsorted(cdf, (u[:, K:] * cdf[:, -1:]).contiguous(), right=True)[:, 0].clamp(max=V - 1)
    return n, torch.where(n == K, bonus, token)


def batch_accept_not_strict(p, q, drafts, u):
    """`<=` in the acceptance test."""
    return _reference_rule(p, q, drafts, u, strict=False)


def batch_accept_searchsorted_left(p, q, drafts, u):
    """The notebook's searchsorted with its default right=False."""
    return _reference_rule(p, q, drafts, u, right=False)


def batched_generate_live_rows_min(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """A learner's own loop (only unfinished rows run, caches grow by n + 1 per round) that rolls every
    running row back by the smallest acceptance among them."""
    from specdec.engine import probabilities

    dev = target.device
    B = len(prompts)
    seqs = [list(map(int, p)) for p in prompts]
    goal = [len(s) + max_new_tokens for s in seqs]
    tc, dc = target.new_batch_cache(B), draft.new_batch_cache(B)
    with torch.no_grad():
        for b, s in enumerate(seqs):
            target.extend_batch(torch.tensor([s[:-1]], dtype=torch.long, device=dev), tc, rows=[b])
            draft.extend_batch(torch.tensor([s[:-2]], dtype=torch.long, device=dev), dc, rows=[b])
        while True:
            live = [b for b in range(B) if len(seqs[b]) < goal[b]]
            if not live:
                break
            t0, d0 = tc.lengths.clone(), dc.lengths.clone()
            feed = torch.tensor([seqs[b][-2:] for b in live], device=dev)
            ds, qs = [], []
            for _ in range(K):
                qi = probabilities(draft.extend_batch(feed, dc, rows=live)[:, -1], temperature)
                di = qi.argmax(-1) if temperature == 0 else torch.multinomial(qi, 1, generator=generator)[:, 0]
                ds.append(di)
                qs.append(qi)
                feed = di[:, None]
            L = len(live)
            d = torch.stack(ds, 1) if K else torch.zeros(L, 0, dtype=torch.long, device=dev)
            q = torch.stack(qs, 1) if K else torch.zeros(L, 0, target.config.vocab, device=dev)
            last = torch.tensor([[seqs[b][-1]] for b in live], device=dev)
            p = probabilities(target.extend_batch(torch.cat([last, d], 1), tc, rows=live), temperature)
            n, tok = batch_accept(p, q, d, torch.rand(L, K + 1, generator=generator, device=dev))
            m = int(n.min())
            new_t, new_d = tc.lengths.clone(), dc.lengths.clone()
            for i, b in enumerate(live):
                new_t[b], new_d[b] = t0[b] + m + 1, d0[b] + m + 1  # the smallest acceptance for every row
                seqs[b] += d[i, :int(n[i])].tolist() + [int(tok[i])]
            tc.rollback(torch.minimum(new_t, tc.lengths))
            if K:
                dc.rollback(torch.minimum(new_d, dc.lengths))
    return [torch.tensor(s[g - max_new_tokens:g]) for s, g in zip(seqs, goal)]


def batched_generate_rollback_min(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Rolls every row back to the batch's smallest acceptance."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator,
                         target_back=lambda lengths, n: lengths + n.min(),
                         draft_back=lambda lengths, n, K: lengths + n.min() - 1)


def _batched_loop(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None, shared_u=False,
                  argmax_drafts=False, raw_q=False, draft_back=None, target_back=None):
    """A learner's loop with one step done wrongly (switches): shared_u, one row of uniforms for the
    batch; argmax_drafts, the draft's argmax at every temperature; raw_q, q for batch_accept from the
    raw logits; draft_back(lengths, n, K) and target_back(lengths, n) -> the caches' new lengths
    (clamped to what they hold)."""
    from specdec.engine import probabilities

    device = target.device
    B = len(prompts)
    seqs = [[int(t) for t in prompt] for prompt in prompts]
    starts = [len(s) for s in seqs]
    tc, dc = target.new_batch_cache(B), draft.new_batch_cache(B)
    with torch.no_grad():
        for b, s in enumerate(seqs):
            target.extend_batch(torch.tensor([s[:-1]], dtype=torch.long, device=device), tc, rows=[b])
            draft.extend_batch(torch.tensor([s[:-2]], dtype=torch.long, device=device), dc, rows=[b])
        while min(len(s) - m for s, m in zip(seqs, starts)) < max_new_tokens:
            last2 = torch.tensor([s[-2:] for s in seqs], device=device)
            ds, qs, feed = [], [], last2
            for _ in range(K):
                logits = draft.extend_batch(feed, dc)[:, -1]
                qi = probabilities(logits, temperature)
                if temperature == 0 or argmax_drafts:
                    di = qi.argmax(-1)
                else:
                    di = torch.multinomial(qi, 1, generator=generator)[:, 0]
                ds.append(di)
                qs.append(torch.softmax(logits, -1) if raw_q and temperature > 0 else qi)
                feed = di[:, None]
            d = torch.stack(ds, 1) if K else torch.zeros(B, 0, dtype=torch.long, device=device)
            q = torch.stack(qs, 1) if K else torch.zeros(B, 0, target.config.vocab, device=device)
            p = probabilities(target.extend_batch(torch.cat([last2[:, 1:], d], 1), tc), temperature)
            if shared_u:
                u = torch.rand(1, K + 1, generator=generator, device=device).expand(B, K + 1)
            else:
                u = torch.rand(B, K + 1, generator=generator, device=device)
            n, tok = batch_accept(p, q, d, u)
            lengths = torch.tensor([len(s) for s in seqs], device=device)
            tc.rollback(torch.minimum(lengths + n if target_back is None else target_back(lengths, n), tc.lengths))
            if K:
                back = lengths + n - 1 if draft_back is None else draft_back(lengths, n, K)
                dc.rollback(torch.minimum(back, dc.lengths))
            for b in range(B):
                seqs[b] += d[b, :n[b]].tolist() + [int(tok[b])]
    return [torch.tensor(s[m:m + max_new_tokens]) for s, m in zip(seqs, starts)]


def batched_generate_one_uniform_per_round(target, draft, prompts, K, max_new_tokens, temperature=0.0,
                                           generator=None):
    """torch.rand(1, K + 1) expanded to the batch: every row uses the same uniforms."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator, shared_u=True)


def batched_generate_argmax_drafts(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """The drafts are the draft's argmax at every temperature; q is its softmax."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator, argmax_drafts=True)


def batched_generate_untempered_q(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Drafts drawn at the temperature, but q for batch_accept from softmax(logits) (temperature 1)."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator, raw_q=True)


def batched_generate_draft_back_too_far(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """Rows that accepted all K drafts "lack two tokens", so their draft cache goes back one more."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator,
                         draft_back=lambda lengths, n, K: lengths + n - 1 - (n == K).long())


def batched_generate_draft_one_long(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """The draft cache rolled back like the target's, to lengths + n (clamped to what it holds)."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator,
                         draft_back=lambda lengths, n, K: lengths + n)


def batched_generate_target_one_long(target, draft, prompts, K, max_new_tokens, temperature=0.0, generator=None):
    """The target's cache rolled back one position less than it should (clamped): a rejected draft's entry stays."""
    return _batched_loop(target, draft, prompts, K, max_new_tokens, temperature, generator,
                         target_back=lambda lengths, n: lengths + n + 1)


def _tokens(alpha, K):
    return (1 - alpha ** (K + 1)) / (1 - alpha) if alpha != 1 else K + 1


def goodput_per_sequence(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    step = target_time(B, K + 1, context) + (K * draft_time(B, 1, context) + overhead if K else 0.0)
    return _tokens(alpha, K) / step


def goodput_overhead_per_token(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    step = target_time(B, K + 1, context) + (K * draft_time(B, 1, context) + overhead * B * (K + 1) if K else 0.0)
    return B * _tokens(alpha, K) / step


def goodput_overhead_at_plain(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """The old formula: plain decoding charged the round's overhead too."""
    return B * _tokens(alpha, K) / (K * draft_time(B, 1, context) + target_time(B, K + 1, context) + overhead)


def goodput_b_passes(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    step = B * target_time(1, K + 1, context) + (K * draft_time(B, 1, context) + overhead if K else 0.0)
    return B * _tokens(alpha, K) / step


def goodput_no_context(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """The cache left out: every pass timed at context 0."""
    step = target_time(B, K + 1, 0) + (K * draft_time(B, 1, 0) + overhead if K else 0.0)
    return B * _tokens(alpha, K) / step


def goodput_draft_cache_free(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """The target reads its cache, the draft's passes are timed without one."""
    step = target_time(B, K + 1, context) + (K * draft_time(B, 1) + overhead if K else 0.0)
    return B * _tokens(alpha, K) / step


def goodput_rows_tokens_swapped(alpha, K, B, target_time, draft_time, overhead=0.0, context=0):
    """B(K+1) rows of one position instead of B rows of K + 1."""
    step = target_time(B * (K + 1), 1, context) + (K * draft_time(B, 1, context) + overhead if K else 0.0)
    return B * _tokens(alpha, K) / step


def best_K_acceptance_alone(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    """The best K of a single sequence, used at every batch size."""
    rates = [goodput(alpha, K, 1, target_time, draft_time, overhead, context) for K in range(K_max + 1)]
    return int(np.argmax(rates))


def best_K_never_zero(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    rates = [goodput(alpha, K, B, target_time, draft_time, overhead, context) for K in range(1, K_max + 1)]
    return 1 + int(np.argmax(rates)) if rates else 0


def best_K_largest_on_ties(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    rates = np.array([goodput(alpha, K, B, target_time, draft_time, overhead, context) for K in range(K_max + 1)])
    return int(np.flatnonzero(rates == rates.max())[-1])


def best_K_first_drop(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    """Climbs while the goodput rises and stops at the first drop (right for concave goodputs only)."""
    K = 0
    while K < K_max and (goodput(alpha, K + 1, B, target_time, draft_time, overhead, context)
                         > goodput(alpha, K, B, target_time, draft_time, overhead, context)):
        K += 1
    return K


def best_K_drops_overhead(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    rates = [goodput(alpha, K, B, target_time, draft_time, context=context) for K in range(K_max + 1)]
    return int(np.argmax(rates))


def best_K_drops_context(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    rates = [goodput(alpha, K, B, target_time, draft_time, overhead) for K in range(K_max + 1)]
    return int(np.argmax(rates))


def best_K_excludes_K_max(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
    rates = [goodput(alpha, K, B, target_time, draft_time, overhead, context) for K in range(max(K_max, 1))]
    return int(np.argmax(rates))


CORRECT = {
    "batch_accept": [batch_accept_divide, batch_accept_numpy],
    "batched_generate": [batched_generate_tensors, batched_generate_per_row_draws, batched_generate_numpy_rows],
    "goodput": [goodput_power_sum, goodput_growing_draft_context],
    "best_K": [best_K_loop],
}

WRONG = {
    "batch_accept": [(batch_accept_shared_uniform, "one uniform shared by the batch"),
                     (batch_accept_bonus_on_reject, "bonus row"),
                     (batch_accept_counts_all, "first rejection"), (batch_accept_not_strict, "strict"),
                     (batch_accept_bonus_from_last_draft_row, "bonus token from p[:, K-1]"),
                     (batch_accept_searchsorted_left, "right=True")],
    "batched_generate": [(batched_generate_rollback_min, "roll each cache back per row"),
                         (batched_generate_live_rows_min, "right, but rows go wrong in a batch"),
                         (batched_generate_one_uniform_per_round, "not independent"),
                         (batched_generate_argmax_drafts, "argmax while q is its softmax"),
                         (batched_generate_untempered_q, "raw logits"),
                         (batched_generate_draft_back_too_far, "one position too far"),
                         (batched_generate_draft_one_long, "draft's cache keeps one position too many"),
                         (batched_generate_target_one_long, "target's cache keeps one position too many")],
    "goodput": [(goodput_per_sequence, "multiply by B"), (goodput_overhead_per_token, "once per step"),
                (goodput_overhead_at_plain, "pays no round overhead"), (goodput_b_passes, "not B separate passes"),
                (goodput_no_context, "ignore the context"), (goodput_draft_cache_free, "draft reads its own cache"),
                (goodput_rows_tokens_swapped, "(batch, tokens per row, context)")],
    "best_K": [(best_K_acceptance_alone, "acceptance alone"), (best_K_never_zero, "K = 0"),
               (best_K_largest_on_ties, "smallest K"), (best_K_first_drop, "step-shaped"),
               (best_K_drops_overhead, "pass `overhead` on"), (best_K_drops_context, "pass `context` on"),
               (best_K_excludes_K_max, "K_max itself")],
}
