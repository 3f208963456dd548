"""Learner answers for 03_rejection_sampling: CORRECT ones written differently from the
reference, and WRONG ones with a phrase their hint must contain. A function may call helpers
of this module: tests/support/notebooks.py pastes them into the notebook cell along with it."""
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


# ---------------------------------------------------------------- audit of issue 12: more answers


def residual_small_threshold(p, q):
    """Correct: returns p only when the leftover mass is below 1e-12, i.e. at rounding level."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    leftover = np.maximum(p - q, 0)
    mass = leftover.sum(axis=-1, keepdims=True)
    return np.where(mass > 1e-12, leftover / np.where(mass > 1e-12, mass, 1), p)


def sample_numpy_types(p, q, rng):
    """Correct: returns a numpy integer and a numpy bool, and tests p >= q before drawing."""
    x = rng.choice(len(q), p=q)
    if p[x] >= q[x] or rng.random() < p[x] / q[x]:
        return x, np.True_
    r = np.maximum(p - q, 0)
    return rng.choice(len(p), p=r / r.sum()), np.False_


def verify_numpy_array(draft_tokens, p_rows, q_rows, rng):
    """Correct: returns a 1-D numpy integer array; K is read from p_rows."""
    K = p_rows.shape[0] - 1
    out = np.empty(0, dtype=np.int64)
    for i in range(K):
        x = draft_tokens[i]
        if rng.random() * q_rows[i, x] < p_rows[i, x]:
            out = np.append(out, x)
            continue
        r = np.maximum(p_rows[i] - q_rows[i], 0)
        return np.append(out, rng.choice(len(r), p=r / r.sum()))
    return np.append(out, rng.choice(p_rows.shape[1], p=p_rows[K]))


CORRECT["residual_distribution"].append(residual_small_threshold)
CORRECT["speculative_sample"].append(sample_numpy_types)
CORRECT["verify_round"].append(verify_numpy_array)


def acceptance_rate_list(p, q):
    p, q = np.asarray(p), np.asarray(q)
    if p.ndim == 1:
        return float(np.minimum(p, q).sum())
    return [acceptance_rate_list(a, b) for a, b in zip(p, q)]


def acceptance_rate_in_place(p, q):
    np.minimum(p, q, out=p)
    return p.sum(axis=-1)


def residual_allclose(p, q):
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.ndim > 1:
        return np.stack([residual_allclose(a, b) for a, b in zip(p, q)])
    if np.allclose(p, q):
        return p.copy()
    r = np.maximum(p - q, 0)
    return r / r.sum()


def residual_epsilon(p, q):
    r = np.maximum(np.asarray(p) - np.asarray(q), 0)
    s = r.sum(axis=-1, keepdims=True)
    return np.where(s > 0, r / (s + 1e-9), p)


def residual_whole_batch_test(p, q):
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    r = np.maximum(p - q, 0)
    s = r.sum(axis=-1, keepdims=True)
    if np.all(s == 0):
        return p.copy()
    return r / s


def residual_in_place(p, q):
    p -= q
    np.maximum(p, 0, out=p)
    s = p.sum(axis=-1, keepdims=True)
    return np.where(s > 0, p / np.where(s > 0, s, 1), q)


def sample_global_rng(p, q, rng):
    x = np.random.choice(len(q), p=q)
    if np.random.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    r = np.maximum(p - q, 0)
    return int(np.random.choice(len(p), p=r / r.sum())), False


def sample_fixed_seed(p, q, rng):
    rng = np.random.default_rng(0)
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    r = np.maximum(p - q, 0)
    return int(rng.choice(len(p), p=r / r.sum())), False


def sample_deterministic_accept(p, q, rng):
    """Keeps x exactly when p[x] >= q[x] (the red flag 'accept if p(x) > q(x)')."""
    x = rng.choice(len(q), p=q)
    if p[x] >= q[x]:
        return int(x), True
    r = np.maximum(p - q, 0)
    return int(rng.choice(len(p), p=r / r.sum())), False


def sample_flag_always_true(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    r = np.maximum(p - q, 0)
    return int(rng.choice(len(p), p=r / r.sum())), True


def sample_in_place(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    p -= q
    np.maximum(p, 0, out=p)
    p /= p.sum()
    return int(rng.choice(len(p), p=p)), False


def sample_float_token(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return float(x), True
    r = np.maximum(p - q, 0)
    return float(rng.choice(len(p), p=r / r.sum())), False


def _residual(p_row, q_row):
    r = np.maximum(p_row - q_row, 0)
    return r / r.sum()


def verify_float_tokens(draft_tokens, p_rows, q_rows, rng):
    return [float(t) for t in verify_vectorised(draft_tokens, p_rows, q_rows, rng)]


def verify_bonus_from_q(draft_tokens, p_rows, q_rows, rng):
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, p_rows[i][x] / q_rows[i][x]):
            out.append(int(x))
            continue
        return out + [int(rng.choice(p_rows.shape[1], p=_residual(p_rows[i], q_rows[i])))]
    return out + [int(rng.choice(p_rows.shape[1], p=q_rows[-1]))]


def verify_bonus_off_by_one(draft_tokens, p_rows, q_rows, rng):
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, p_rows[i][x] / q_rows[i][x]):
            out.append(int(x))
            continue
        return out + [int(rng.choice(p_rows.shape[1], p=_residual(p_rows[i], q_rows[i])))]
    return out + [int(rng.choice(p_rows.shape[1], p=p_rows[len(draft_tokens) - 1]))]


def verify_bonus_sometimes(draft_tokens, p_rows, q_rows, rng):
    """Adds the bonus only when the last draft was under-proposed (p >= q): passes the greedy rounds."""
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, p_rows[i][x] / q_rows[i][x]):
            out.append(int(x))
            continue
        return out + [int(rng.choice(p_rows.shape[1], p=_residual(p_rows[i], q_rows[i])))]
    last = len(draft_tokens) - 1
    if p_rows[last][draft_tokens[last]] >= q_rows[last][draft_tokens[last]]:
        out.append(int(rng.choice(p_rows.shape[1], p=p_rows[last + 1])))
    return out


def verify_global_rng(draft_tokens, p_rows, q_rows, rng):
    return verify_vectorised(draft_tokens, p_rows, q_rows, np.random.default_rng())


def verify_in_place(draft_tokens, p_rows, q_rows, rng):
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, p_rows[i][x] / q_rows[i][x]):
            out.append(int(x))
            continue
        p_rows[i] -= q_rows[i]
        np.maximum(p_rows[i], 0, out=p_rows[i])
        p_rows[i] /= p_rows[i].sum()
        return out + [int(rng.choice(p_rows.shape[1], p=p_rows[i]))]
    return out + [int(rng.choice(p_rows.shape[1], p=p_rows[len(draft_tokens)]))]


def verify_greedy_while_sampling(draft_tokens, p_rows, q_rows, rng):
    """Accepts a draft when it is the target's argmax, even though the rows are not one-hot."""
    out = []
    for i, x in enumerate(draft_tokens):
        if x == np.argmax(p_rows[i]):
            out.append(int(x))
            continue
        return out + [int(np.argmax(p_rows[i]))]
    return out + [int(np.argmax(p_rows[len(draft_tokens)]))]


WRONG["acceptance_rate"] += [(acceptance_rate_list, "returned a list"), (acceptance_rate_in_place, "in place")]
WRONG["residual_distribution"] += [(residual_allclose, "only close"), (residual_epsilon, "epsilon"),
                                   (residual_whole_batch_test, "row by row"), (residual_in_place, "in place")]
WRONG["speculative_sample"] += [(sample_global_rng, "identically seeded"), (sample_fixed_seed, "ignores its rng"),
                                (sample_deterministic_accept, "exactly when p[x] >= q[x]"),
                                (sample_flag_always_true, "flag is always True"), (sample_in_place, "in place"),
                                (sample_float_token, "must be an int")]
WRONG["verify_round"] += [(verify_float_tokens, "tokens are ints"), (verify_bonus_from_q, "wrong row"),
                          (verify_bonus_off_by_one, "wrong row"), (verify_bonus_sometimes, "exactly the K drafts"),
                          (verify_global_rng, "identically seeded"), (verify_in_place, "in place"),
                          (verify_greedy_while_sampling, "greedy verification")]


def sample_only_v4(p, q, rng):
    """Written for the 4-token example: rng.choice(4, ...) fails for any other vocabulary size."""
    x = rng.choice(4, p=q)
    if rng.random() < min(1.0, p[x] / q[x]):
        return int(x), True
    r = np.maximum(p - q, 0)
    return int(rng.choice(4, p=r / r.sum())), False


WRONG["speculative_sample"].append((sample_only_v4, "raised ValueError"))
