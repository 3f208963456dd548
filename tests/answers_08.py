"""Learner answers for 08_raising_alpha, written differently from the reference.

CORRECT: each must get full marks. WRONG: each known mistake, with a phrase its hint must contain.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- section 1, correct


def mixture_draft_loop(P, w):
    q = np.zeros(len(P[0]))
    for weight, row in zip(w, P):
        q = q + weight * np.asarray(row, dtype=float)
    return q


def mixture_draft_einsum(P, w):
    return np.einsum("i,ix->x", np.asarray(w, dtype=float), np.asarray(P, dtype=float))


def acceptance_loop(P, w, q):
    total = 0.0
    for weight, row in zip(w, P):
        total += weight * sum(min(a, b) for a, b in zip(row, q))
    return total


def acceptance_via_tv(P, w, q):
    P, q = np.asarray(P, dtype=float), np.asarray(q, dtype=float)
    return float(np.dot(w, 1 - 0.5 * np.abs(P - q).sum(axis=1)))


def best_draft_linprog(P, w):
    """The linear program: maximise sum_i w_i sum_x t_ix, t_ix <= p_i(x), t_ix <= q(x), sum q = 1."""
    from scipy.optimize import linprog

    P, w = np.asarray(P, dtype=float), np.asarray(w, dtype=float)
    m, V = P.shape
    cost = np.concatenate([np.zeros(V), -np.repeat(w, V)])
    rows = []
    for i in range(m):
        for x in range(V):
            row = np.zeros(V + m * V)
            row[V + i * V + x], row[x] = 1.0, -1.0
            rows.append(row)
    bounds = [(0, None)] * V + [(0, P[i, x]) for i in range(m) for x in range(V)]
    result = linprog(cost, A_ub=np.array(rows), b_ub=np.zeros(m * V), A_eq=[np.r_[np.ones(V), np.zeros(m * V)]],
                     b_eq=[1.0], bounds=bounds, method="highs")
    q = np.clip(result.x[:V], 0, None)
    return q / q.sum()


def best_draft_threshold(P, w):
    """Bisection on the slope threshold s: take every piece steeper than s, then share what is left at s."""
    P, w = np.asarray(P, dtype=float), np.asarray(w, dtype=float)

    def mass_above(s):  # the level each token reaches taking pieces with slope > s
        q = np.zeros(P.shape[1])
        for x in range(P.shape[1]):
            for level in sorted(set(P[:, x]) | {0.0}):
                if w[P[:, x] >= level].sum() > s and level > q[x]:
                    q[x] = level
        return q

    slopes = sorted({w[P[:, x] >= level].sum() for x in range(P.shape[1]) for level in set(P[:, x]) if level > 0})
    q = np.zeros(P.shape[1])
    for s in reversed(slopes):  # from the steepest: the largest threshold whose pieces fit
        candidate = mass_above(s - 1e-15)
        if candidate.sum() > 1:
            partial = mass_above(s + 1e-15)
            extra = candidate - partial
            return partial + extra * (1 - partial.sum()) / extra.sum()
        q = candidate
    return q + (1 - q.sum()) / len(q)


def mixture_draft_torch32(P, w):
    """In float32 torch: about 7 significant digits, which the checks allow."""
    return (torch.tensor(w, dtype=torch.float32) @ torch.tensor(np.asarray(P), dtype=torch.float32)).numpy()


def acceptance_torch32(P, w, q):
    P32, q32 = torch.tensor(np.asarray(P), dtype=torch.float32), torch.tensor(np.asarray(q), dtype=torch.float32)
    return float(torch.tensor(w, dtype=torch.float32) @ torch.minimum(P32, q32).sum(1))


# ---------------------------------------------------------------- section 1, wrong


def mixture_draft_unweighted(P, w):
    return np.asarray(P, dtype=float).mean(axis=0)


def mixture_draft_geometric(P, w):
    log = np.asarray(w, dtype=float) @ np.log(np.maximum(np.asarray(P, dtype=float), 1e-300))
    q = np.exp(log)
    return q / q.sum()


def acceptance_unweighted(P, w, q):
    return float(np.minimum(np.asarray(P, dtype=float), q).sum(axis=1).mean())


def acceptance_full_l1(P, w, q):
    P, q = np.asarray(P, dtype=float), np.asarray(q, dtype=float)
    return float(np.dot(w, 1 - np.abs(P - q).sum(axis=1)))


def best_draft_mixture(P, w):
    return np.asarray(w, dtype=float) @ np.asarray(P, dtype=float)


def best_draft_mode(P, w):
    q = np.zeros(np.shape(P)[1])
    q[np.argmax(np.asarray(w, dtype=float) @ np.asarray(P, dtype=float))] = 1.0
    return q


def best_draft_heaviest_context(P, w):
    return np.asarray(P, dtype=float)[int(np.argmax(w))].copy()


def best_draft_overfilled(P, w):
    """Fills every piece with a slope above zero: spends more than one unit of mass."""
    return np.asarray(P, dtype=float).max(axis=0)


# ---------------------------------------------------------------- section 2, correct


def forward_kl_kl_div(target_logits, draft_logits, mask, temperature=1.0):
    log_q = F.log_softmax(draft_logits / temperature, dim=-1)
    log_p = F.log_softmax(target_logits / temperature, dim=-1)
    per = F.kl_div(log_q, log_p, log_target=True, reduction="none").sum(-1)
    return (per * mask).sum() / mask.sum()


def forward_kl_float64(target_logits, draft_logits, mask, temperature=1.0):
    t, d = target_logits.double() / temperature, draft_logits.double() / temperature
    log_p = t - torch.logsumexp(t, -1, keepdim=True)
    log_q = d - torch.logsumexp(d, -1, keepdim=True)
    per = torch.where(mask, (log_p.exp() * (log_p - log_q)).sum(-1), torch.zeros((), dtype=torch.float64))
    return per.sum() / mask.sum()


def reverse_kl_kl_div(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return F.kl_div(log_p, log_q, log_target=True, reduction="none").sum(-1)[mask.bool()].mean()


def total_variation_l1(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits / temperature, -1)
    q = F.softmax(draft_logits / temperature, -1)
    per = torch.linalg.vector_norm(p - q, ord=1, dim=-1) / 2
    return per.masked_select(mask).mean()


def total_variation_via_min(target_logits, draft_logits, mask, temperature=1.0):
    p = (target_logits / temperature).softmax(-1)
    q = (draft_logits / temperature).softmax(-1)
    return (1 - torch.minimum(p, q).sum(-1))[mask].mean()


def jensen_shannon_mixture_log(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    log_m = torch.logsumexp(torch.stack([log_p, log_q]), dim=0) - math.log(2)
    kl_pm = F.kl_div(log_m, log_p, log_target=True, reduction="none").sum(-1)
    kl_qm = F.kl_div(log_m, log_q, log_target=True, reduction="none").sum(-1)
    return ((kl_pm + kl_qm) / 2)[mask].mean()


def expected_acceptance_via_tv(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits / temperature, -1)
    q = F.softmax(draft_logits / temperature, -1)
    tv = 0.5 * (p - q).abs().sum(-1)
    return 1 - (tv * mask).sum() / mask.sum()


# ---------------------------------------------------------------- section 2, wrong


def forward_kl_swapped(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return (log_q.exp() * (log_q - log_p)).sum(-1)[mask].mean()


def forward_kl_softmax_then_log(target_logits, draft_logits, mask, temperature=1.0):
    p = torch.softmax(target_logits / temperature, -1)
    q = torch.softmax(draft_logits / temperature, -1)
    return (p * (p.log() - q.log())).sum(-1)[mask].mean()


def forward_kl_clamped(target_logits, draft_logits, mask, temperature=1.0):
    p = torch.softmax(target_logits / temperature, -1)
    q = torch.softmax(draft_logits / temperature, -1)
    return (p * (p.clamp_min(1e-12).log() - q.clamp_min(1e-12).log())).sum(-1)[mask].mean()


def forward_kl_target_temperature_only(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits, -1)
    return (log_p.exp() * (log_p - log_q)).sum(-1)[mask].mean()


def forward_kl_vocab_mean(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return (log_p.exp() * (log_p - log_q)).mean(-1)[mask].mean()


def forward_kl_padding_counted(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return (log_p.exp() * (log_p - log_q)).sum(-1).mean()


def forward_kl_per_sequence(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    per = (log_p.exp() * (log_p - log_q)).sum(-1) * mask
    return (per.sum(1) / mask.sum(1)).mean()


def forward_kl_item(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return (log_p.exp() * (log_p - log_q)).sum(-1)[mask].mean().item()


def reverse_kl_swapped(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return (log_p.exp() * (log_p - log_q)).sum(-1)[mask].mean()


def reverse_kl_no_temperature(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits, -1)
    log_q = F.log_softmax(draft_logits, -1)
    return (log_q.exp() * (log_q - log_p)).sum(-1)[mask].mean()


def reverse_kl_position_sum(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    return (log_q.exp() * (log_q - log_p)).sum(-1)[mask].sum()


def total_variation_no_half(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits / temperature, -1)
    q = F.softmax(draft_logits / temperature, -1)
    return (p - q).abs().sum(-1)[mask].mean()


def total_variation_draft_temperature_only(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits, -1)
    q = F.softmax(draft_logits / temperature, -1)
    return 0.5 * (p - q).abs().sum(-1)[mask].mean()


def total_variation_zeroed_padding(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits / temperature, -1)
    q = F.softmax(draft_logits / temperature, -1)
    return (0.5 * (p - q).abs().sum(-1) * mask).mean()


def jensen_shannon_no_half(target_logits, draft_logits, mask, temperature=1.0):
    log_p = F.log_softmax(target_logits / temperature, -1)
    log_q = F.log_softmax(draft_logits / temperature, -1)
    log_m = torch.logaddexp(log_p, log_q) - math.log(2)
    per = (log_p.exp() * (log_p - log_m)).sum(-1) + (log_q.exp() * (log_q - log_m)).sum(-1)
    return per[mask].mean()


def jensen_shannon_log2(target_logits, draft_logits, mask, temperature=1.0):
    return jensen_shannon_mixture_log(target_logits, draft_logits, mask, temperature) / math.log(2)


def jensen_shannon_softmax_then_log(target_logits, draft_logits, mask, temperature=1.0):
    p = torch.softmax(target_logits / temperature, -1)
    q = torch.softmax(draft_logits / temperature, -1)
    m = (p + q) / 2
    return (0.5 * (p * (p / m).log()).sum(-1) + 0.5 * (q * (q / m).log()).sum(-1))[mask].mean()


def expected_acceptance_full_l1(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits / temperature, -1)
    q = F.softmax(draft_logits / temperature, -1)
    return (1 - (p - q).abs().sum(-1))[mask].mean()


def expected_acceptance_vocab_mean(target_logits, draft_logits, mask, temperature=1.0):
    p = F.softmax(target_logits / temperature, -1)
    q = F.softmax(draft_logits / temperature, -1)
    return torch.minimum(p, q).mean(-1)[mask].mean()


# ---------------------------------------------------------------- section 3, correct


def on_policy_batch_list(draft, target, prompts, n_new, temperature, generator):
    """Builds the sequence as a list of columns and samples with torch.multinomial on the 2-D probs."""
    with torch.no_grad():
        columns = list(prompts.T)
        for _ in range(n_new):
            ids = torch.stack(columns, dim=1)
            logits = draft(ids)[:, -1, :]
            if temperature > 0:
                probs = F.softmax(logits / temperature, dim=-1)
                columns.append(torch.multinomial(probs, num_samples=1, generator=generator).view(-1))
            else:
                columns.append(torch.argmax(logits, dim=-1))
        ids = torch.stack(columns, dim=1)
        P = prompts.shape[1]
        scores = target(ids)[:, P - 1:-1]
    return ids, scores


def on_policy_batch_preallocated(draft, target, prompts, n_new, temperature, generator):
    B, P = prompts.shape
    ids = torch.empty(B, P + n_new, dtype=torch.long, device=prompts.device)
    ids[:, :P] = prompts
    with torch.no_grad():
        for k in range(n_new):
            last = draft(ids[:, :P + k])[:, -1] / (temperature if temperature else 1.0)
            if temperature == 0:
                ids[:, P + k] = last.argmax(-1)
            else:
                ids[:, P + k] = torch.multinomial(last.softmax(-1), 1, generator=generator)[:, 0]
        logits = target(ids[:, :-1])
    return ids, logits[:, P - 1:]


def on_policy_batch_batch_cache(draft, target, prompts, n_new, temperature, generator):
    """The draft's batch KV cache (notebook 07's API): one new position per step instead of the whole prefix."""
    with torch.no_grad():
        B, P = prompts.shape
        cache = draft.new_batch_cache(B)
        logits = draft.extend_batch(prompts, cache)[:, -1]
        ids = prompts
        for k in range(n_new):
            if temperature == 0:
                token = logits.argmax(-1, keepdim=True)
            else:
                token = torch.multinomial(F.softmax(logits / temperature, -1), 1, generator=generator)
            ids = torch.cat([ids, token], dim=1)
            if k < n_new - 1:
                logits = draft.extend_batch(token, cache)[:, -1]
        return ids, target(ids[:, :-1])[:, P - 1:]


# ---------------------------------------------------------------- section 3, wrong


def on_policy_batch_from_target(draft, target, prompts, n_new, temperature, generator):
    return on_policy_batch_list(target, target, prompts, n_new, temperature, generator)


def on_policy_batch_scored_past(draft, target, prompts, n_new, temperature, generator):
    ids, _ = on_policy_batch_list(draft, target, prompts, n_new, temperature, generator)
    with torch.no_grad():
        return ids, target(ids)[:, prompts.shape[1] - 1:]


def on_policy_batch_shifted(draft, target, prompts, n_new, temperature, generator):
    ids, _ = on_policy_batch_list(draft, target, prompts, n_new, temperature, generator)
    with torch.no_grad():
        return ids, target(ids)[:, prompts.shape[1]:]


def on_policy_batch_draft_scores(draft, target, prompts, n_new, temperature, generator):
    ids, _ = on_policy_batch_list(draft, target, prompts, n_new, temperature, generator)
    with torch.no_grad():
        return ids, draft(ids[:, :-1])[:, prompts.shape[1] - 1:]


def on_policy_batch_global_rng(draft, target, prompts, n_new, temperature, generator):
    return on_policy_batch_list(draft, target, prompts, n_new, temperature, None)


def on_policy_batch_no_temperature(draft, target, prompts, n_new, temperature, generator):
    return on_policy_batch_list(draft, target, prompts, n_new, 1.0 if temperature else 0.0, generator)


def on_policy_batch_last_token_only(draft, target, prompts, n_new, temperature, generator):
    """Feeds the draft only the latest token: a bigram cannot tell, the shipped draft can."""
    with torch.no_grad():
        ids = prompts
        for _ in range(n_new):
            logits = draft(ids[:, -1:])[:, -1]
            token = logits.argmax(-1, keepdim=True) if temperature == 0 else \
                torch.multinomial(F.softmax(logits / temperature, -1), 1, generator=generator)
            ids = torch.cat([ids, token], 1)
        return ids, target(ids[:, :-1])[:, prompts.shape[1] - 1:]


def on_policy_batch_not_fed_back(draft, target, prompts, n_new, temperature, generator):
    """Draws every new token from the draft's distribution after the prompt alone."""
    with torch.no_grad():
        logits = draft(prompts)[:, -1]
        if temperature == 0:
            new = logits.argmax(-1, keepdim=True).repeat(1, n_new)
        else:
            new = torch.multinomial(F.softmax(logits / temperature, -1), n_new, replacement=True, generator=generator)
        ids = torch.cat([prompts, new], 1)
        return ids, target(ids[:, :-1])[:, prompts.shape[1] - 1:]


CORRECT = {
    "mixture_draft": [mixture_draft_loop, mixture_draft_einsum, mixture_draft_torch32],
    "acceptance": [acceptance_loop, acceptance_via_tv, acceptance_torch32],
    "best_draft": [best_draft_linprog, best_draft_threshold],
    "forward_kl": [forward_kl_kl_div, forward_kl_float64],
    "reverse_kl": [reverse_kl_kl_div],
    "total_variation": [total_variation_l1, total_variation_via_min],
    "jensen_shannon": [jensen_shannon_mixture_log],
    "expected_acceptance": [expected_acceptance_via_tv],
    "on_policy_batch": [on_policy_batch_list, on_policy_batch_preallocated, on_policy_batch_batch_cache],
}

WRONG = {
    "mixture_draft": [(mixture_draft_unweighted, "ignores the weights"), (mixture_draft_geometric, "REVERSE KL")],
    "acceptance": [(acceptance_unweighted, "ignores the weights"), (acceptance_full_l1, "HALF the L1")],
    "best_draft": [(best_draft_mixture, "forward-KL optimum"), (best_draft_mode, "most likely token"),
                   (best_draft_heaviest_context, "heaviest context"), (best_draft_overfilled, "not a distribution")],
    "forward_kl": [(forward_kl_swapped, "direction is swapped"), (forward_kl_softmax_then_log, "log_softmax"),
                   (forward_kl_clamped, "Clamping"), (forward_kl_target_temperature_only, "BOTH"),
                   (forward_kl_vocab_mean, "averaged instead of summed"), (forward_kl_padding_counted, "padding counted"),
                   (forward_kl_per_sequence, "not per sequence"), (forward_kl_item, "backward()")],
    "reverse_kl": [(reverse_kl_swapped, "direction is swapped"), (reverse_kl_no_temperature, "temperature is ignored"),
                   (reverse_kl_position_sum, "summed, not averaged")],
    "total_variation": [(total_variation_no_half, "HALF the L1"), (total_variation_draft_temperature_only, "BOTH"),
                        (total_variation_zeroed_padding, "padding counted")],
    "jensen_shannon": [(jensen_shannon_no_half, "AVERAGE of KL"), (jensen_shannon_log2, "natural logs"),
                       (jensen_shannon_softmax_then_log, "log_softmax")],
    "expected_acceptance": [(expected_acceptance_full_l1, "counts the gap twice"),
                            (expected_acceptance_vocab_mean, "averaged instead of summed")],
    "on_policy_batch": [(on_policy_batch_from_target, "draws from the target"),
                        (on_policy_batch_scored_past, "past the context"), (on_policy_batch_shifted, "shifted by one"),
                        (on_policy_batch_draft_scores, "the draft's logits"),
                        (on_policy_batch_global_rng, "generator you are given"),
                        (on_policy_batch_no_temperature, "ignores the temperature"),
                        (on_policy_batch_last_token_only, "EVERYTHING before it"),
                        (on_policy_batch_not_fed_back, "own tokens")],
}
