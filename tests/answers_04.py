"""Learner answers for 04_torch_verifier: CORRECT ones written differently from the reference,
and WRONG ones with a phrase their hint must contain. A function may call helpers of this
module: tests/notebooks.py pastes them into the notebook cell along with it."""
import torch


def _probs(logits, T):
    logits = logits.detach().double().cpu()
    if T == 0:
        out = torch.zeros_like(logits)
        out[logits.argmax()] = 1.0
        return out
    return torch.softmax(logits / T, -1)


def _pick(probs, generator):
    """Inverse-CDF sampling with one uniform (a different use of the random stream)."""
    u = torch.rand((), generator=generator, dtype=torch.float64)
    idx = int(torch.searchsorted(torch.cumsum(probs, 0), u * probs.sum(), right=True))
    idx = min(idx, len(probs) - 1)
    while probs[idx] == 0:
        idx -= 1
    return idx


def _device(model):
    params = getattr(model, "parameters", None)
    first = next(iter(params()), None) if callable(params) else None
    return first.device if first is not None else torch.device("cpu")


# ---------------------------------------------------------------- correct


def ar_list(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    seq = prompt.tolist()
    device = _device(model)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            row = model(torch.tensor([seq], device=device))[0, -1]
            seq.append(int(row.argmax()) if temperature == 0 else _pick(_probs(row, temperature), generator))
    return torch.tensor(seq[len(prompt):])


def spec_list(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Python lists, inverse-CDF sampling, uniforms drawn all at once per round."""
    seq = prompt.tolist()
    device = _device(target)
    rounds = accepted = 0
    with torch.no_grad():
        while len(seq) - len(prompt) < max_new_tokens:
            drafts, qs = [], []
            for _ in range(K):
                q = _probs(draft(torch.tensor([seq + drafts], device=device))[0, -1], temperature)
                drafts.append(_pick(q, generator))
                qs.append(q)
            rows = target(torch.tensor([seq + drafts], device=device))[0, len(seq) - 1:]
            ps = [_probs(r, temperature) for r in rows]
            us = torch.rand(K, generator=generator, dtype=torch.float64)
            n = 0
            while n < K and us[n] * qs[n][drafts[n]] < ps[n][drafts[n]]:
                n += 1
            if n < K:
                res = torch.clamp(ps[n] - qs[n], min=0)
                last = _pick(res / res.sum(), generator)
            else:
                last = _pick(ps[K], generator)
            seq += drafts[:n] + [last]
            rounds += 1
            accepted += n
    return torch.tensor(seq[len(prompt):len(prompt) + max_new_tokens]), dict(
        rounds=rounds, proposed=K * rounds, accepted=accepted)


CORRECT = {"autoregressive_generate": [ar_list], "speculative_generate": [spec_list]}

# ---------------------------------------------------------------- wrong


def _spec_variant(target, draft, prompt, n, K, T, generator, mode):
    seq = prompt.tolist()
    device = _device(target)
    rounds = accepted = 0
    with torch.no_grad():
        while len(seq) - len(prompt) < n:
            if mode == "reseed":
                generator = torch.Generator().manual_seed(0)
            drafts, qs = [], []
            for _ in range(K):
                logits = draft(torch.tensor([seq + drafts], device=device))[0, -1]
                q_sampled = _probs(logits, T)
                drafts.append(int(torch.multinomial(q_sampled, 1, generator=generator)) if T else int(q_sampled.argmax()))
                qs.append(_probs(logits, 1.0) if mode == "raw_q" and T else q_sampled)
            rows = target(torch.tensor([seq + drafts], device=device))[0, len(seq) - 1:]
            ps = [_probs(r, T) for r in rows]
            n_acc, last = K, None
            for i, x in enumerate(drafts):
                u = torch.rand((), generator=generator, dtype=torch.float64)
                if mode == "accept_all" or u < min(1.0, float(ps[i][x] / qs[i][x])):
                    continue
                n_acc = i
                res = ps[i] if mode == "resample_p" else torch.clamp(ps[i] - qs[i], min=0)
                last = int(torch.multinomial(res / res.sum(), 1, generator=generator))
                break
            if last is None and mode != "no_bonus":
                last = int(torch.multinomial(ps[K], 1, generator=generator))
            seq += drafts[:n_acc] + ([last] if last is not None else [])
            rounds += 1
            accepted += n_acc
    return torch.tensor(seq[len(prompt):len(prompt) + n]), dict(rounds=rounds, proposed=K * rounds, accepted=accepted)


def spec_accept_all(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "accept_all")


def spec_no_bonus(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "no_bonus")


def spec_resample_p(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "resample_p")


def spec_raw_q(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "raw_q")


def spec_reseed(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "reseed")


WRONG = {
    "speculative_generate": [
        (spec_accept_all, "accepts every draft"),
        (spec_no_bonus, "bonus token"),
        (spec_resample_p, "samples from p"),
        (spec_raw_q, "RAW logits"),
        (spec_reseed, "reseed"),
    ],
}
