"""Learner answers for 04_torch_verifier: CORRECT ones written differently from the reference,
and WRONG ones with a phrase their hint must contain. A function may call helpers of this
module: tests/notebooks.py pastes them into the notebook cell along with it. Module-level names
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


CORRECT = {
    "autoregressive_generate": [ar_list, ar_gumbel, ar_global_device],
    "speculative_generate": [spec_list, spec_capped, spec_capped_tight, spec_model_device],
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
        (spec_one_draft_short, "counters do not match"),
        (spec_rows_off_by_one, "predicts token t+1"),
        (spec_only_p_tempered, "argmax"),
        (spec_capped_proposed_K, "stats['proposed']"),
        (spec_accepted_counts_emitted, "stats['accepted']"),
        (spec_with_prompt, "not the prompt"),
        (spec_list_tokens, "LongTensor"),
    ],
}




# Learners graded with stock nbgrader besides those derived from CORRECT and WRONG (tests/e2e.py),
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
