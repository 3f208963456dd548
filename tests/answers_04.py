"""Learner answers for 04_torch_verifier: CORRECT ones written differently from the reference,
and WRONG ones with a phrase their hint must contain. A function may call helpers of this
module: tests/support/notebooks.py pastes them into the notebook cell along with it. Module-level names
other than functions (DEVICE, model_device) are the notebook's own globals there."""
import torch

from specdec.model import default_device, model_device

DEVICE = default_device()  # the notebook's setup cell defines the same global


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


def ar_gumbel(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    """Device from next(model.parameters()); Gumbel-max sampling; tokens left on the model's device."""
    device = next(model.parameters()).device
    ids = prompt.to(device)[None]
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids)[0, -1].double().cpu()
            if temperature == 0:
                nxt = logits.argmax()
            else:
                u = torch.rand(logits.shape, generator=generator, dtype=torch.float64).clamp_min(1e-300)
                nxt = (logits / temperature - torch.log(-torch.log(u))).argmax()
            ids = torch.cat([ids, nxt.view(1, 1).to(device)], dim=1)
    return ids[0, prompt.numel():]


def ar_global_device(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    """Device from the notebook's global DEVICE."""
    ids = prompt.to(DEVICE)
    new = []
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(ids.unsqueeze(0))[0, -1].float().cpu()
        if temperature == 0:
            token = int(torch.argmax(logits))
        else:
            token = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator))
        new.append(token)
        ids = torch.cat([ids, torch.tensor([token], device=DEVICE)])
    return torch.tensor(new, dtype=torch.long)


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


def spec_capped(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Capped proposals (min(K, tokens still needed), as notebook 05 does), device from
    next(target.parameters()), acceptance vectorised like gpt-fast: one comparison, first
    rejection by nonzero; tokens returned on the model's device."""
    device = next(target.parameters()).device
    ids = prompt.to(device)
    n0 = ids.numel()
    stats = {"rounds": 0, "proposed": 0, "accepted": 0}
    with torch.no_grad():
        while ids.numel() - n0 < max_new_tokens:
            k = min(K, max_new_tokens - (ids.numel() - n0))
            seq, q_rows = ids, []
            for _ in range(k):
                logits = draft(seq[None])[0, -1].double()
                q = torch.softmax(logits / temperature, -1) if temperature else \
                    torch.nn.functional.one_hot(logits.argmax(), logits.numel()).double()
                q_rows.append(q.cpu())
                x = torch.multinomial(q.cpu(), 1, generator=generator).to(device)
                seq = torch.cat([seq, x])
            logits = target(seq[None])[0, ids.numel() - 1:].double().cpu()  # p_1 .. p_{k+1}
            p_rows = torch.softmax(logits / temperature, -1) if temperature else \
                torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).double()
            drafts = seq[ids.numel():].cpu()
            n_acc = k
            if k:
                q_rows = torch.stack(q_rows)
                idx = torch.arange(k)
                u = torch.rand(k, generator=generator, dtype=torch.float64)
                rejected = (u * q_rows[idx, drafts] >= p_rows[idx, drafts]).nonzero()
                n_acc = int(rejected[0]) if len(rejected) else k
            if n_acc < k:
                residual = (p_rows[n_acc] - q_rows[n_acc]).clamp(min=0)
                extra = torch.multinomial(residual / residual.sum(), 1, generator=generator)
            else:
                extra = torch.multinomial(p_rows[k], 1, generator=generator)
            ids = torch.cat([ids, drafts[:n_acc].to(device), extra.to(device)])
            stats["rounds"] += 1
            stats["proposed"] += k
            stats["accepted"] += n_acc
    return ids[n0:n0 + max_new_tokens], stats


def spec_capped_tight(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Capped so a round never overshoots (min(K, still needed - 1): the last round may propose
    nothing and just sample from the target), device from the notebook's DEVICE, counters kept
    as 0-d tensors and converted at the end."""
    out = []
    rounds = proposed = accepted = torch.tensor(0)

    def dist(logits):
        logits = logits.double().cpu()
        if temperature == 0:
            return (logits == logits.max()).double() / (logits == logits.max()).sum()
        return torch.softmax(logits / temperature, -1)

    with torch.no_grad():
        while len(out) < max_new_tokens:
            k = min(K, max_new_tokens - len(out) - 1)
            base = prompt.tolist() + out
            drafts, qs = [], []
            for _ in range(k):
                q = dist(draft(torch.tensor([base + drafts], device=DEVICE))[0, -1])
                drafts.append(int(torch.multinomial(q, 1, generator=generator)))
                qs.append(q)
            rows = target(torch.tensor([base + drafts], device=DEVICE))[0, -(k + 1):]
            new = []
            for i in range(k):
                p = dist(rows[i])
                if torch.rand(1, generator=generator, dtype=torch.float64).item() * qs[i][drafts[i]] < p[drafts[i]]:
                    new.append(drafts[i])
                    continue
                res = torch.relu(p - qs[i])
                new.append(int(torch.multinomial(res / res.sum(), 1, generator=generator)))
                break
            else:
                new.append(int(torch.multinomial(dist(rows[k]), 1, generator=generator)))
            out += new
            rounds, proposed, accepted = rounds + 1, proposed + k, accepted + len(new) - 1
    return torch.tensor(out), dict(rounds=int(rounds), proposed=int(proposed), accepted=int(accepted))


def spec_model_device(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Device from the notebook's model_device(target); one uniform per tested draft."""
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "correct")


def cached_sync(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Each cache holds EVERY committed token, and the logits after the last one are kept: the
    next round needs no catch-up pass. Rollback by setting `cache.length`; inverse-CDF sampling;
    tokens returned on the model's device; K = 0 handled by the same loop."""
    device = next(target.parameters()).device
    seq = prompt.tolist()
    tc, dc = target.new_cache(), draft.new_cache()
    ids = lambda toks: torch.tensor([toks], device=device)  # noqa: E731
    with torch.no_grad():
        t_last = target.extend(ids(seq), tc)[0, -1]
        d_last = draft.extend(ids(seq), dc)[0, -1] if K else None
        rounds = accepted = 0
        while len(seq) - len(prompt) < max_new_tokens:
            base = len(seq)
            drafts, qs, row = [], [], d_last
            for i in range(K):
                q = _probs(row, temperature)
                drafts.append(int(q.argmax()) if temperature == 0 else _pick(q, generator))
                qs.append(q)
                if i < K - 1:
                    row = draft.extend(ids(drafts[-1:]), dc)[0, -1]
            rows = [t_last] + (list(target.extend(ids(drafts), tc)[0]) if drafts else [])
            ps = [_probs(r, temperature) for r in rows]
            n = 0
            while n < K:
                u = torch.rand((), generator=generator, dtype=torch.float64)
                if u * qs[n][drafts[n]] >= ps[n][drafts[n]]:
                    break
                n += 1
            if n < K:
                res = torch.clamp(ps[n] - qs[n], min=0)
                last = _pick(res / res.sum(), generator)
            else:
                last = _pick(ps[K], generator) if temperature else int(ps[K].argmax())
            tc.length = base + n  # keep the accepted drafts, then feed the last token now
            t_last = target.extend(ids([last]), tc)[0, -1]
            new_seq = seq + drafts[:n] + [last]
            if K:  # the draft catches up at once: its cache then holds every committed token
                dc.length = min(dc.length, base + n)
                d_last = draft.extend(ids(new_seq[dc.length:]), dc)[0, -1]
            seq = new_seq
            rounds += 1
            accepted += n
    return torch.tensor(seq[len(prompt):len(prompt) + max_new_tokens], device=device), dict(
        rounds=rounds, proposed=K * rounds, accepted=accepted)


def cached_capped(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Proposals capped at the tokens still needed, acceptance vectorised (one comparison, first
    rejection by nonzero), device from the notebook's DEVICE, caches prefilled with the prompt
    minus its last token, the draft fed one token at a time."""
    n0 = prompt.numel()
    seq = prompt.tolist()
    tc, dc = target.new_cache(), draft.new_cache()
    stats = {"rounds": 0, "proposed": 0, "accepted": 0}
    with torch.no_grad():
        if n0 > 1:
            target.extend(prompt[None, :-1].to(DEVICE), tc)
            draft.extend(prompt[None, :-1].to(DEVICE), dc)
        while len(seq) - n0 < max_new_tokens:
            k = min(K, max_new_tokens - (len(seq) - n0))
            start = len(seq)
            for token in seq[dc.length:]:  # catch the draft up, one token per pass
                row = draft.extend(torch.tensor([[token]], device=DEVICE), dc)[0, -1]
            drafts, q_rows = [], []
            for i in range(k):
                logits = row.double().cpu()
                q = torch.softmax(logits / temperature, -1) if temperature else \
                    torch.nn.functional.one_hot(logits.argmax(), logits.numel()).double()
                x = int(torch.multinomial(q, 1, generator=generator))
                drafts.append(x)
                q_rows.append(q)
                if i < k - 1:
                    row = draft.extend(torch.tensor([[x]], device=DEVICE), dc)[0, -1]
            logits = target.extend(torch.tensor([seq[tc.length:] + drafts], device=DEVICE), tc)[0, -(k + 1):]
            logits = logits.double().cpu()
            p_rows = torch.softmax(logits / temperature, -1) if temperature else \
                torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).double()
            n_acc = k
            if k:
                q_rows = torch.stack(q_rows)
                idx, d = torch.arange(k), torch.tensor(drafts)
                u = torch.rand(k, generator=generator, dtype=torch.float64)
                rejected = (u * q_rows[idx, d] >= p_rows[idx, d]).nonzero()
                n_acc = int(rejected[0]) if len(rejected) else k
            if n_acc < k:
                residual = (p_rows[n_acc] - q_rows[n_acc]).clamp(min=0)
                extra = int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
            else:
                extra = int(torch.multinomial(p_rows[k], 1, generator=generator))
            tc.rollback(start + n_acc)
            dc.rollback(min(dc.length, start + n_acc))
            seq += drafts[:n_acc] + [extra]
            stats["rounds"] += 1
            stats["proposed"] += k
            stats["accepted"] += n_acc
    return torch.tensor(seq[n0:n0 + max_new_tokens]), stats


CORRECT = {
    "autoregressive_generate": [ar_list, ar_gumbel, ar_global_device],
    "speculative_generate": [spec_list, spec_capped, spec_capped_tight, spec_model_device],
    "speculative_generate_cached": [cached_capped, cached_sync],
}

# ---------------------------------------------------------------- wrong


def _spec_variant(target, draft, prompt, n, K, T, generator, mode):
    seq = prompt.tolist()
    device = model_device(target)
    rounds = accepted = proposed = 0
    if mode == "global_rng":
        generator = None  # ignores the argument: every draw comes from torch's global generator
    with torch.no_grad():
        while len(seq) - len(prompt) < n:
            if mode == "reseed":
                generator = torch.Generator().manual_seed(0)
            k = min(K, n - (len(seq) - len(prompt))) if mode == "capped_proposed_K" else K
            if mode == "one_draft_short":  # an off-by-one in the draft loop: K - 1 drafts per round
                k = K - 1
            drafts, qs = [], []
            for _ in range(k):
                logits = draft(torch.tensor([seq + drafts], device=device))[0, -1]
                q_sampled = _probs(logits, 1.0) if mode == "only_p_tempered" else _probs(logits, T)
                if mode == "only_p_tempered":  # drafts from the raw softmax, even at T = 0
                    drafts.append(int(torch.multinomial(q_sampled, 1, generator=generator)))
                else:
                    drafts.append(int(torch.multinomial(q_sampled, 1, generator=generator)) if T
                                  else int(q_sampled.argmax()))
                qs.append(_probs(logits, 1.0) if mode == "raw_q" and T else q_sampled)
            if mode == "rows_off_by_one":  # p_i taken from the row AFTER draft i
                rows = target(torch.tensor([seq + drafts + [0]], device=device))[0, len(seq):]
            else:
                rows = target(torch.tensor([seq + drafts], device=device))[0, len(seq) - 1:]
            p_T = 1.0 if mode == "raw_p" and T else T
            ps = [_probs(r, p_T) for r in rows]
            n_acc, last = k, None
            for i, x in enumerate(drafts):
                u = torch.rand((), generator=generator, dtype=torch.float64)
                if mode == "accept_all" or u < min(1.0, float(ps[i][x] / qs[i][x])):
                    continue
                n_acc = i
                res = ps[i] if mode == "resample_p" else torch.clamp(ps[i] - qs[i], min=0)
                last = int(torch.multinomial(res / res.sum(), 1, generator=generator))
                break
            if last is None and mode != "no_bonus":
                bonus = ps[k]
                if mode == "bonus_from_q":
                    bonus = _probs(draft(torch.tensor([seq + drafts], device=device))[0, -1], T)
                elif mode == "bonus_untempered" and T:
                    bonus = _probs(rows[k], 1.0)
                elif mode == "bonus_row_before":  # p_K, the row that verified the last draft
                    bonus = ps[k - 1]
                if mode == "bonus_argmax":
                    last = int(bonus.argmax())
                else:
                    last = int(torch.multinomial(bonus, 1, generator=generator))
            emitted = drafts[:n_acc] + ([last] if last is not None else [])
            seq += emitted
            rounds += 1
            proposed += K if mode == "capped_proposed_K" else k
            accepted += len(emitted) if mode == "accepted_counts_emitted" else n_acc
    tokens = seq[len(prompt):len(prompt) + n]
    if mode == "with_prompt":
        tokens = seq[:len(prompt) + n]
    if mode == "list_tokens":
        return tokens, dict(rounds=rounds, proposed=proposed, accepted=accepted)
    return torch.tensor(tokens), dict(rounds=rounds, proposed=proposed, accepted=accepted)


def _ar_variant(model, prompt, n, T, generator, mode):
    ids = prompt.to(model_device(model))
    with torch.no_grad():
        for _ in range(n):
            logits = model(ids[None])[0, -1].double().cpu()
            if T == 0:
                token = logits.argmax().view(1)
            else:
                probs = torch.softmax(logits / (1.0 if mode == "no_temperature" else T), -1)
                token = torch.multinomial(probs, 1, generator=None if mode == "global_rng" else generator)
            ids = torch.cat([ids, token.to(ids.device)])
    out = ids if mode == "with_prompt" else ids[len(prompt):]
    return out.float() if mode == "float_tokens" else out


def ar_global_rng(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    return _ar_variant(model, prompt, max_new_tokens, temperature, generator, "global_rng")


def ar_with_prompt(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    return _ar_variant(model, prompt, max_new_tokens, temperature, generator, "with_prompt")


def ar_float_tokens(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    return _ar_variant(model, prompt, max_new_tokens, temperature, generator, "float_tokens")


def ar_no_temperature(model, prompt, max_new_tokens, temperature=1.0, generator=None):
    return _ar_variant(model, prompt, max_new_tokens, temperature, generator, "no_temperature")


def spec_accept_all(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "accept_all")


def spec_no_bonus(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "no_bonus")


def spec_resample_p(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "resample_p")


def spec_raw_q(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "raw_q")


def spec_raw_p(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "raw_p")


def spec_reseed(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "reseed")


def spec_global_rng(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "global_rng")


def spec_bonus_argmax(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "bonus_argmax")


def spec_bonus_from_q(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "bonus_from_q")


def spec_bonus_untempered(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "bonus_untempered")


def spec_bonus_row_before(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "bonus_row_before")


def spec_one_draft_short(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "one_draft_short")


def spec_rows_off_by_one(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "rows_off_by_one")


def spec_only_p_tempered(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "only_p_tempered")


def spec_capped_proposed_K(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "capped_proposed_K")


def spec_accepted_counts_emitted(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "accepted_counts_emitted")


def spec_with_prompt(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "with_prompt")


def spec_list_tokens(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _spec_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "list_tokens")


def _cached_variant(target, draft, prompt, n, K, T, generator, mode):
    """The notebook's bookkeeping written out by hand: each cache holds the committed tokens but the
    last, which the next round feeds ([last] + drafts to the target); `mode` is the mistake."""
    device = model_device(target)
    seq = prompt.tolist()
    tc, dc = target.new_cache(), draft.new_cache()
    d_seen = 0  # committed tokens the draft's cache holds, by our own count
    rounds = accepted = 0
    to = lambda toks: torch.tensor([toks], device=device)  # noqa: E731
    with torch.no_grad():
        d_row = None
        while len(seq) - len(prompt) < n:
            if mode == "refeed":  # a new cache every round: right tokens, nothing saved
                tc, dc, d_seen = target.new_cache(), draft.new_cache(), 0
            base = len(seq)
            if len(seq) > 1 and tc.length == 0:
                target.extend(to(seq[:-1]), tc)
            drafts, qs = [], []
            new = seq[d_seen:] if mode != "draft_no_correction" or d_row is None else []
            for _ in range(K):
                if new:
                    d_row = draft.extend(to(new), dc)[0, -1]
                q = _probs(d_row, T)
                drafts.append(int(q.argmax()) if T == 0 else int(torch.multinomial(q, 1, generator=generator)))
                qs.append(q)
                new = drafts[-1:]
            if mode == "draft_no_correction" and drafts:
                d_row = draft.extend(to(drafts[-1:]), dc)[0, -1]  # the draft only ever sees its own drafts
            if mode == "plain_target":
                rows = target(to(seq + drafts))[0, base - 1:]
            else:
                rows = target.extend(to(seq[-1:] + drafts), tc)[0]
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
            if last is None:
                last = int(ps[K].argmax()) if T == 0 else int(torch.multinomial(ps[K], 1, generator=generator))
            keep = base + n_acc  # the committed tokens the target was fed
            if mode == "target_keeps_rejected" and n_acc < K:
                keep += 1  # one position too few rolled back: the rejected draft's entry stays
            if mode == "target_drops_accepted":
                keep -= 1  # one position too many: the last accepted token's entry goes
            if mode != "plain_target":
                tc.rollback(keep)
            d_seen = min(base + n_acc, base - 1 + K) if K else d_seen
            if mode == "draft_no_correction":
                dc.rollback(min(dc.length, base + n_acc))
            elif mode != "draft_no_rollback":
                dc.rollback(min(dc.length, d_seen))
            seq += drafts[:n_acc] + [last]
            rounds += 1
            accepted += n_acc
    return torch.tensor(seq[len(prompt):len(prompt) + n]), dict(rounds=rounds, proposed=K * rounds, accepted=accepted)


def cached_target_keeps_rejected(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "target_keeps_rejected")


def cached_target_drops_accepted(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "target_drops_accepted")


def cached_draft_no_rollback(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "draft_no_rollback")


def cached_draft_no_correction(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "draft_no_correction")


def cached_refeed(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "refeed")


def cached_plain_target(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "plain_target")


def cached_resample_p(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Caches right, the sampling wrong: after a rejection it draws from p, not the residual."""
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "resample_p")


def cached_accept_all(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """Caches right, the sampling wrong: every draft is accepted."""
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "accept_all")


def cached_correct_variant(target, draft, prompt, max_new_tokens, K, temperature=1.0, generator=None):
    """The same bookkeeping without a mistake (a CORRECT answer: the variants differ from it in one line)."""
    return _cached_variant(target, draft, prompt, max_new_tokens, K, temperature, generator, "correct")


CORRECT["speculative_generate_cached"].append(cached_correct_variant)


WRONG = {
    "autoregressive_generate": [
        (ar_global_rng, "`generator` argument"),
        (ar_with_prompt, "not the prompt"),
        (ar_float_tokens, "LongTensor"),
        (ar_no_temperature, "softmax(logits / temperature)"),
    ],
    "speculative_generate": [
        (spec_accept_all, "accepts every draft"),
        (spec_no_bonus, "bonus token"),
        (spec_resample_p, "samples from p"),
        (spec_raw_q, "RAW logits"),
        (spec_raw_p, "temperature to p"),
        (spec_reseed, "reseed"),
        (spec_global_rng, "`generator` argument"),
        (spec_bonus_argmax, "bonus token is the argmax"),
        (spec_bonus_from_q, "bonus token follows the DRAFT"),
        (spec_bonus_untempered, "bonus token is drawn without the temperature"),
        (spec_bonus_row_before, "bonus token"),
        (spec_one_draft_short, "a round proposes K drafts"),
        (spec_rows_off_by_one, "predicts token t+1"),
        (spec_only_p_tempered, "argmax"),
        (spec_capped_proposed_K, "stats['proposed']"),
        (spec_accepted_counts_emitted, "stats['accepted']"),
        (spec_with_prompt, "not the prompt"),
        (spec_list_tokens, "LongTensor"),
    ],
    "speculative_generate_cached": [
        (cached_target_keeps_rejected, "one position too many; roll back"),
        (cached_target_drops_accepted, "drops one position too many"),
        (cached_draft_no_rollback, "draft's cache still holds rejected drafts"),
        (cached_draft_no_correction, "correction or bonus token"),
        (cached_refeed, "the cache is not used"),
        (cached_plain_target, "calls the target as target(ids)"),
        # the distribution cell on the cached loop (its T = 1 runs were cut to 500: a04's docstring)
        (cached_resample_p, "samples from p"),
        (cached_accept_all, "accepts every draft"),
    ],
}




# Learners graded with stock nbgrader besides those derived from CORRECT and WRONG (tests/support/e2e.py),
# as issue 12 asks: every usual way of finding the device gets full marks in a notebook kernel
# (next(model.parameters()) here, the notebook's DEVICE here and in "correct_last", and
# model_device(...) in "correct_last"), proposals capped at the tokens still needed are right,
# and a mistake of the bonus token at T > 0 costs the bonus cell only. The other mistakes of the
# bonus token, the generator and the stats contract run through the same checkers in process
# (tests/test_checkers.py); a 04 learner costs about 35 s of CPU to grade, so they are not here.
END_TO_END = {
    "device_from_parameters": {"autoregressive_generate": ar_gumbel, "speculative_generate": spec_capped},
    "device_global_capped_tight": {"speculative_generate": spec_capped_tight},
    "wrong_bonus_argmax": {"speculative_generate": spec_bonus_argmax},
}
