"""Learner answers for 03_rejection_sampling: CORRECT ones written differently from the
reference, and WRONG ones with a phrase their hint must contain. A function may call helpers
of this module: tests/notebooks.py pastes them into the notebook cell along with it."""
import numpy as np

# ---------------------------------------------------------------- correct


def acceptance_rate_tv(p, q):
    return 1.0 - 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(axis=-1)


def residual_loop(p, q):
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.ndim > 1:
        return np.stack([residual_loop(pi, qi) for pi, qi in zip(p, q)])
    diff = np.clip(p - q, 0, None)
    total = diff.sum()
    if total == 0:
        return p.copy()
    return diff / total


def sample_cdf(p, q, rng):
    """Inverse-CDF sampling with rng.random, drawing the uniforms in a different order."""
    u_accept, u_propose = rng.random(), rng.random()
    x = min(int(np.searchsorted(np.cumsum(q), u_propose * q.sum(), side="right")), len(q) - 1)
    while q[x] == 0:  # guard against landing on a zero-probability token at a float edge
        x -= 1
    if u_accept * q[x] < p[x]:
        return x, True
    r = np.maximum(p - q, 0)
    r = r / r.sum()
    y = min(int(np.searchsorted(np.cumsum(r), rng.random(), side="right")), len(r) - 1)
    while r[y] == 0:
        y -= 1
    return y, False


def verify_vectorised(draft_tokens, p_rows, q_rows, rng):
    """gpt-fast style: one uniform per position, first rejection by comparison."""
    K = len(draft_tokens)
    idx = np.arange(K)
    ratio = p_rows[idx, draft_tokens] / q_rows[idx, draft_tokens]
    u = rng.random(K)
    rejected = np.nonzero(u >= np.minimum(1.0, ratio))[0]
    if len(rejected) == 0:
        return [int(t) for t in draft_tokens] + [int(rng.choice(p_rows.shape[1], p=p_rows[K]))]
    j = int(rejected[0])
    residual = np.clip(p_rows[j] - q_rows[j], 0, None)
    residual /= residual.sum()
    return [int(t) for t in draft_tokens[:j]] + [int(rng.choice(len(residual), p=residual))]


CORRECT = {
    "acceptance_rate": [acceptance_rate_tv],
    "residual_distribution": [residual_loop],
    "speculative_sample": [sample_cdf],
    "verify_round": [verify_vectorised],
}

# ---------------------------------------------------------------- wrong


def acceptance_rate_l1(p, q):
    return 1.0 - np.abs(np.asarray(p) - np.asarray(q)).sum(axis=-1)


def acceptance_rate_max(p, q):
    return np.maximum(p, q).sum(axis=-1)


def residual_unnormalised(p, q):
    return np.maximum(np.asarray(p) - np.asarray(q), 0)


def residual_q_minus_p(p, q):
    r = np.maximum(np.asarray(q) - np.asarray(p), 0)
    s = r.sum(axis=-1, keepdims=True)
    return np.where(s > 0, r / np.where(s > 0, s, 1), p)


def residual_nan(p, q):
    r = np.maximum(np.asarray(p) - np.asarray(q), 0)
    with np.errstate(invalid="ignore"):
        return r / r.sum(axis=-1, keepdims=True)


def sample_from_p(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    return int(rng.choice(len(p), p=p)), False


def sample_always_accept(p, q, rng):
    return int(rng.choice(len(q), p=q)), True


def sample_q_minus_p(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    r = np.maximum(q - p, 0)
    return int(rng.choice(len(p), p=r / r.sum())), False


def verify_no_bonus(draft_tokens, p_rows, q_rows, rng):
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, p_rows[i][x] / q_rows[i][x]):
            out.append(int(x))
            continue
        r = np.maximum(p_rows[i] - q_rows[i], 0)
        out.append(int(rng.choice(len(r), p=r / r.sum())))
        return out
    return out


def verify_always_accept(draft_tokens, p_rows, q_rows, rng):
    return [int(t) for t in draft_tokens] + [int(rng.choice(p_rows.shape[1], p=p_rows[-1]))]


def verify_resample_p(draft_tokens, p_rows, q_rows, rng):
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, p_rows[i][x] / q_rows[i][x]):
            out.append(int(x))
            continue
        out.append(int(rng.choice(p_rows.shape[1], p=p_rows[i])))
        return out
    return out + [int(rng.choice(p_rows.shape[1], p=p_rows[-1]))]


WRONG = {
    "acceptance_rate": [(acceptance_rate_l1, "HALF the L1"), (acceptance_rate_max, "sum max(p, q)")],
    "residual_distribution": [(residual_unnormalised, "not normalised"), (residual_q_minus_p, "q - p"),
                              (residual_nan, "NaN")],
    "speculative_sample": [(sample_from_p, "resamples from p"), (sample_always_accept, "accepts every"),
                           (sample_q_minus_p, "q - p")],
    "verify_round": [(verify_no_bonus, "bonus"), (verify_always_accept, "accepts every"),
                     (verify_resample_p, "resamples a rejected position from p")],
}
