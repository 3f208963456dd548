"""Hidden-test checkers for 08_raising_alpha: mixture_draft, acceptance, best_draft, the four losses,
expected_acceptance and on_policy_batch.

Section 1 is exact arithmetic on random families of contexts (best_draft is graded by the acceptance
its q reaches, which is unique, not by q, which need not be). The losses are compared with the
reference on random and extreme logits, with padding whose logits differ wildly from the real
positions', at temperatures 0.5 to 2, in float32 (what models give) with tolerances for float32;
each named mistake is reproduced from the reference on the same inputs. on_policy_batch runs on a
toy pair whose distributions are known (the draft's draws are tested with exact binomial tests) and
on the shipped pair at T = 0 (the draft must read the whole sequence, which a bigram cannot show).

The draws' tests: 2,000 prompts (500 per toy token) with two new tokens each, at T = 1 and 0.5; each
token given the one before it is tested with an exact binomial test per bin at level 1e-7 (Bonferroni
over the bins), 16 tests in all, so a correct answer fails with probability at most 1.6e-6. Their power
(exact binomial sums, the most discrepant row alone): draws that ignore the temperature pass with
probability below 7e-10, draws from the target below 4e-58; a draft never fed its own tokens is caught
by the T = 0 check before any draw is tested.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from solutions.checks._common import SEED, Exercise, call, counts_match_pmf, declare, fail, unchanged
from solutions.reference import a08_raising_alpha as ref

HINT_SOFTMAX_LOG = ("softmax then log underflows: a probability below 1e-38 becomes 0 and its log -inf (NaN after "
                    "0 * -inf); take torch.log_softmax of the logits / temperature and exp() of that for the probabilities.")
HINT_ONE_SIDE_T = "divide BOTH the target's and the draft's logits by the temperature before the softmax, not only one of them."
HINT_NO_T = "the temperature is ignored: p = softmax(target_logits / temperature), q = softmax(draft_logits / temperature)."
HINT_VOCAB_MEAN = ("the vocabulary is averaged instead of summed: each position's divergence is a SUM over the V tokens "
                   "(.sum(-1)), and only the positions are averaged.")
HINT_PADDING = ("padding counted: average only over the positions where mask is True (for example values[mask].mean()), "
                "leaving the padded positions out of both the sum and the count.")
HINT_SEQUENCE_MEAN = ("average over all real positions together (values[mask].mean()), not per sequence and then over "
                      "sequences: a long sequence has more positions, and each position is one draft token.")
HINT_POSITION_SUM = "the positions are summed, not averaged: return the MEAN over the real positions (the loss must not grow with the batch)."
HINT_NOT_TENSOR = ("return a torch tensor (0-d), not a Python float or numpy value: the training loop calls backward() on it "
                   "(no .item(), no numpy).")


# ---------------------------------------------------------------- section 1: one q for many contexts

def _families(n: int = 60, seed: int = SEED):
    """Random (P, w): 1-5 contexts, 2-9 tokens, some exact zeros and repeated rows (ties)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        m, V = int(rng.integers(1, 6)), int(rng.integers(2, 10))
        P = rng.dirichlet(np.full(V, 0.6), size=m)
        if k % 3 == 0:  # zeros: a context that never writes some tokens
            P[rng.random((m, V)) < 0.3] = 0.0
            P[P.sum(1) == 0, 0] = 1.0
            P /= P.sum(1, keepdims=True)
        if k % 5 == 0 and m > 1:
            P[1] = P[0]  # two contexts that agree
        out.append((P, rng.dirichlet(np.ones(m))))
    return out


def _distribution(fn_name, q, V, label):
    __tracebackhide__ = True
    try:
        q = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        fail(f"{label} returned {type(q).__name__}; return a numpy array of V probabilities.")
    if q.shape != (V,):
        fail(f"{label} returned shape {q.shape}: {fn_name} returns one q of shape (V,), one probability per token "
             "(w @ P, not P @ w or P.T @ w).")
    return q


def check_mixture_draft(mixture_draft) -> None:
    __tracebackhide__ = True
    for P, w in _families():
        label = f"mixture_draft(<{P.shape[0]} contexts x {P.shape[1]} tokens>, w)"
        kept = P.copy(), w.copy()
        q = _distribution("mixture_draft", call(mixture_draft, P, w, name="mixture_draft"), P.shape[1], label)
        unchanged(label, P=(kept[0], P), w=(kept[1], w))
        if np.allclose(q, ref.mixture_draft(P, w), rtol=1e-6, atol=1e-9):  # float32 arithmetic is fine
            continue
        if np.allclose(q, P.mean(0), rtol=1e-6, atol=1e-9):
            fail("mixture_draft ignores the weights: the KL-optimal q is the w-weighted mean sum_i w_i p_i, not the plain mean.")
        geo = np.exp(w @ np.log(np.maximum(P, 1e-300)))
        if geo.sum() > 0 and np.allclose(q, geo / geo.sum(), atol=1e-9):
            fail("that is the normalised geometric mean, the optimum of the REVERSE KL sum_i w_i KL(q || p_i); forward KL "
                 "sum_i w_i KL(p_i || q) is minimised by the arithmetic mixture sum_i w_i p_i.")
        fail("mixture_draft(P, w) should be the mixture sum_i w_i p_i, the q that minimises sum_i w_i KL(p_i || q).",
             generic=True)


def check_acceptance(acceptance) -> None:
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED + 1)
    for P, w in _families():
        for q in (rng.dirichlet(np.ones(P.shape[1])), ref.mixture_draft(P, w), P[0]):
            label = f"acceptance(<{P.shape[0]} contexts x {P.shape[1]} tokens>, w, q)"
            got = call(acceptance, P.copy(), w.copy(), q.copy(), name="acceptance")
            try:
                got = float(np.asarray(got, dtype=float))
            except (TypeError, ValueError):
                fail(f"{label} must return one number (a float), not {type(got).__name__}.")
            want = ref.acceptance(P, w, q)
            if math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):  # float32 arithmetic is fine
                continue
            mins = np.minimum(P, q[None, :]).sum(1)
            if math.isclose(got, float(mins.mean()), rel_tol=1e-6, abs_tol=1e-9):
                fail("acceptance ignores the weights: average each context's sum_x min(p_i, q) with its weight w_i.")
            if math.isclose(got, float(w @ (1 - np.abs(P - q).sum(1))), rel_tol=1e-6, abs_tol=1e-9):
                fail("the total variation is HALF the L1 distance: sum_x min(p, q) = 1 - (1/2) sum_x |p - q|.")
            if math.isclose(got, float(w @ np.maximum(P, q[None, :]).sum(1)), rel_tol=1e-6, abs_tol=1e-9):
                fail("acceptance sums min(p_i(x), q(x)), not max: a draft token is kept with probability min(1, p/q).")
            fail(f"{label} should be sum_i w_i sum_x min(p_i(x), q(x)).", generic=True)


def check_best_draft(best_draft) -> None:
    __tracebackhide__ = True
    for P, w in _families():
        label = f"best_draft(<{P.shape[0]} contexts x {P.shape[1]} tokens>, w)"
        kept = P.copy(), w.copy()
        q = _distribution("best_draft", call(best_draft, P, w, name="best_draft"), P.shape[1], label)
        unchanged(label, P=(kept[0], P), w=(kept[1], w))
        if not np.all(np.isfinite(q)) or q.min() < -1e-9 or abs(q.sum() - 1) > 1e-6:
            fail(f"{label} is not a distribution (entries >= 0 summing to 1; sum {q.sum():.6g}): the draft spends exactly "
                 "one unit of probability; stop filling when it is spent.")
        best = ref.acceptance(P, w, ref.best_draft(P, w))
        got = ref.acceptance(P, w, np.clip(q, 0, None))
        if got >= best - 1e-6:  # float32 arithmetic is fine
            continue
        if np.allclose(q, ref.mixture_draft(P, w), atol=1e-9):
            fail("that is the mixture, the forward-KL optimum; acceptance is maximised by water-filling: give each token "
                 "mass in order of the weight of the contexts that still want more of it.")
        modes = np.zeros_like(q)
        modes[np.argmax(ref.mixture_draft(P, w))] = 1.0
        if np.allclose(q, modes):
            fail("all the mass on the mixture's most likely token is not the optimum: past min_i p_i(x) for the contexts that "
                 "want x, mass there gains only from fewer contexts; fill pieces in order of their slope.")
        if any(np.allclose(q, row) for row in P[np.argsort(-w)[:1]]):
            fail("copying the heaviest context's distribution is optimal only sometimes (it was in the worked example); "
                 "fill every token's pieces in order of the weight of the contexts still above the level.")
        fail(f"{label} accepts {got:.6f}, below the best {best:.6f}: water-fill, steepest pieces first (slope of token x "
             "at level t = the weight of the contexts with p_i(x) > t).", generic=True)


# ---------------------------------------------------------------- section 2: the losses

def _logits_cases():
    """(target_logits, draft_logits, mask, temperature, label): float32, (B, T, V), padding with wild logits."""
    gen = torch.Generator().manual_seed(SEED)
    cases = []
    for B, T, V, scale, temperature in ((1, 1, 2, 1.0, 1.0), (2, 5, 7, 2.0, 1.0), (3, 4, 11, 3.0, 0.5),
                                        (4, 6, 5, 1.5, 2.0), (2, 8, 256, 2.5, 1.0), (3, 3, 6, 0.3, 1.3)):
        t = torch.randn(B, T, V, generator=gen) * scale
        d = torch.randn(B, T, V, generator=gen) * scale
        mask = torch.rand(B, T, generator=gen) < 0.7
        mask[:, 0] = True
        if T > 2:
            mask[0, -2:] = False  # sequences of different lengths: padding at the end
        t[~mask] = torch.randn(int((~mask).sum()), V, generator=gen) * 40  # padding: logits unlike the real ones
        d[~mask] = -t[~mask]
        cases.append((t, d, mask, temperature, f"random logits ({B}, {T}, {V}), temperature {temperature:g}"))
    # extreme: logits hundreds apart, where softmax underflows to exact zeros in float32
    t = torch.tensor([[[0.0, 1.0, -1.0, 0.5], [200.0, -200.0, 0.0, 10.0]], [[-300.0, 300.0, 0.0, 0.0], [3.0, 2.0, 1.0, 0.0]]])
    d = torch.tensor([[[250.0, -250.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 2.0, 3.0], [-400.0, 0.0, 400.0, 1.0]]])
    cases.append((t, d, torch.ones(2, 2, dtype=torch.bool), 1.0, "extreme logits (up to 800 apart)"))
    return cases


def _per_position(kind: str, t, d, temperature, t_temperature=None, d_temperature=None):
    """The reference's per-position values (float64), with the temperature optionally applied per side."""
    tt = temperature if t_temperature is None else t_temperature
    dt = temperature if d_temperature is None else d_temperature
    log_p = torch.log_softmax(t.double() / tt, -1)
    log_q = torch.log_softmax(d.double() / dt, -1)
    p, q = log_p.exp(), log_q.exp()
    if kind == "forward_kl":
        return (p * (log_p - log_q)).sum(-1)
    if kind == "reverse_kl":
        return (q * (log_q - log_p)).sum(-1)
    if kind == "total_variation":
        return 0.5 * (p - q).abs().sum(-1)
    if kind == "jensen_shannon":
        log_m = torch.logaddexp(log_p, log_q) - math.log(2)
        return 0.5 * (p * (log_p - log_m)).sum(-1) + 0.5 * (q * (log_q - log_m)).sum(-1)
    return torch.minimum(p, q).sum(-1)


def _variants(kind: str, t, d, mask, temperature):
    """(hint, value) of each named mistake on one case, as the learner's function would return it."""
    pos = _per_position(kind, t, d, temperature)
    V = t.shape[-1]
    mean = pos[mask].mean().item()
    out = []
    if kind in ("forward_kl", "reverse_kl"):
        other = "reverse_kl" if kind == "forward_kl" else "forward_kl"
        swapped = _per_position(other, t, d, temperature)[mask].mean().item()
        want = "KL(p || q) = sum_x p (log p - log q), p the TARGET's" if kind == "forward_kl" else \
            "KL(q || p) = sum_x q (log q - log p), q the DRAFT's"
        out.append((f"the KL's direction is swapped: {kind} is {want}.", swapped))
    if kind == "total_variation":
        out.append(("total variation is HALF the L1 distance: TV = (1/2) sum_x |p(x) - q(x)|.", 2 * mean))
    if kind == "jensen_shannon":
        out.append(("Jensen-Shannon is the AVERAGE of KL(p || m) and KL(q || m), each halved.", 2 * mean))
        out.append(("use natural logs (nats), as torch.log_softmax does, not log2.", mean / math.log(2)))
    if kind == "expected_acceptance":
        out.append(("acceptance is 1 - TV with TV = (1/2) sum_x |p - q|: 1 - sum_x |p - q| counts the gap twice.",
                    (1 - 2 * _per_position("total_variation", t, d, temperature))[mask].mean().item()))
    if temperature != 1.0:
        out.append((HINT_NO_T, _per_position(kind, t, d, 1.0)[mask].mean().item()))
        out.append((HINT_ONE_SIDE_T, _per_position(kind, t, d, temperature, t_temperature=1.0)[mask].mean().item()))
        out.append((HINT_ONE_SIDE_T, _per_position(kind, t, d, temperature, d_temperature=1.0)[mask].mean().item()))
    out.append((HINT_VOCAB_MEAN, mean / V))
    if not bool(mask.all()):
        out.append((HINT_PADDING, pos.mean().item()))
        out.append((HINT_PADDING, (pos * mask).sum().item() / mask.numel()))
        lengths = mask.sum(1)
        out.append((HINT_SEQUENCE_MEAN, ((pos * mask).sum(1) / lengths).mean().item()))
    if int(mask.sum()) > 1:
        out.append((HINT_POSITION_SUM, pos[mask].sum().item()))
    return out


def _close(a: float, b: float) -> bool:
    return math.isfinite(a) and abs(a - b) <= 2e-4 * abs(b) + 2e-5


def _check_loss(fn, kind: str) -> None:
    __tracebackhide__ = True
    for t, d, mask, temperature, label in _logits_cases():
        args = (t.clone(), d.clone(), mask.clone(), temperature)
        got = call(fn, *args, name=kind)
        if not isinstance(got, torch.Tensor):
            fail(f"{kind} returned {type(got).__name__}: {HINT_NOT_TENSOR}")
        if got.numel() != 1:
            fail(f"{kind} returned a tensor of shape {tuple(got.shape)}: reduce it to one number, the mean over the "
                 "real positions of each position's sum over the vocabulary.")
        unchanged(f"{kind}(...)", target_logits=(t.numpy(), args[0].numpy()), draft_logits=(d.numpy(), args[1].numpy()))
        value = float(got.detach().double().reshape(()))
        want = _per_position(kind, t, d, temperature)[mask].mean().item()
        if _close(value, want):
            continue
        if not math.isfinite(value):
            fail(f"{kind} on {label} returned {value}: {HINT_SOFTMAX_LOG}")
        for hint, wrong in _variants(kind, t, d, mask, temperature):
            if _close(value, wrong):
                fail(f"{kind}: {hint}")
        if label.startswith("extreme"):
            fail(f"{kind} on {label} returned {value:.6g}, not {want:.6g}: {HINT_SOFTMAX_LOG} (Clamping probabilities "
                 "before the log changes the value where it matters.)")
        fail(f"{kind} on {label} returned {value:.6g}, not {want:.6g}: see the table in section 2 (the mean over the "
             "positions where mask is True of the per-position value, summed over the vocabulary).", generic=True)


def check_forward_kl(forward_kl) -> None:
    __tracebackhide__ = True
    _check_loss(forward_kl, "forward_kl")


def check_reverse_kl(reverse_kl) -> None:
    __tracebackhide__ = True
    _check_loss(reverse_kl, "reverse_kl")


def check_total_variation(total_variation) -> None:
    __tracebackhide__ = True
    _check_loss(total_variation, "total_variation")


def check_jensen_shannon(jensen_shannon) -> None:
    __tracebackhide__ = True
    _check_loss(jensen_shannon, "jensen_shannon")


def check_expected_acceptance(expected_acceptance) -> None:
    __tracebackhide__ = True
    _check_loss(expected_acceptance, "expected_acceptance")


# ---------------------------------------------------------------- section 3: on-policy data

HINT_FROM_TARGET = "on_policy_batch draws from the target; on-policy data is what the DRAFT writes (the target only scores it)."
HINT_NOT_FED_BACK = ("on_policy_batch does not feed the draft its own tokens: each step reads everything so far, the "
                     "prompt and the tokens drawn before.")
DRAW_LEVEL = 1e-7  # each exact binomial test's level (Bonferroni over its bins): 16 tests, false failure <= 1.6e-6
N_DRAWS = 2000


def _unpack(out, label: str, B: int, P: int, n: int, V: int):
    """(ids, target_logits) from the learner's return value, with their shapes checked."""
    __tracebackhide__ = True
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        fail(f"{label} must return a pair (ids, target_logits), not {type(out).__name__}.")
    ids, scores = out
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or tuple(ids.shape) != (B, P + n):
        shape = tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__
        fail(f"{label}: ids must be a LongTensor of shape (B, P + n_new) = {(B, P + n)}, the prompts followed by the "
             f"draft's tokens; got {shape}.")
    if not isinstance(scores, torch.Tensor) or scores.shape[0] != B or scores.shape[-1] != V or scores.dim() != 3:
        shape = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
        fail(f"{label}: target_logits must be a tensor of shape (B, n_new, V) = {(B, n, V)}; got {shape}.")
    if scores.shape[1] == n + 1:
        fail(f"{label}: nothing is scored past the context: the target's logits after the last token predict a token "
             "nobody wrote; return n_new rows, target(ids[:, :-1])[:, P - 1:].")
    if scores.shape[1] != n:
        fail(f"{label}: target_logits must have one row per NEW token, (B, n_new, V) = {(B, n, V)}, not the prompt's "
             f"positions too; got {tuple(scores.shape)}.")
    return ids, scores.detach().float()


def _check_scores(ids, scores, target, draft, P, label, atol):
    __tracebackhide__ = True
    with torch.no_grad():
        want = target(ids[:, :-1])[:, P - 1:].float()
        if torch.allclose(scores, want, atol=atol, rtol=1e-4):
            return
        if torch.allclose(scores, target(ids)[:, P:].float(), atol=atol, rtol=1e-4):
            fail(f"{label}: target_logits are shifted by one: row j must predict the token at position P + j from the "
                 "tokens BEFORE it, target(ids[:, :-1])[:, P - 1:], not the token after it.")
        if torch.allclose(scores, draft(ids[:, :-1])[:, P - 1:].float(), atol=atol, rtol=1e-4):
            fail(f"{label}: those are the draft's logits; the TARGET scores the draft's sequences (it is the teacher).")
    fail(f"{label}: target_logits are not the target's logits on the returned ids (row j: target(ids[:, :-1])[:, P - 1 + j]).")


def _draws_follow(model, tokens_before, tokens, T) -> bool:
    """Each token given the one before it follows softmax(model's bigram row / T) (exact binomial tests)."""
    probs = model.probs(T).numpy()
    for a in range(probs.shape[0]):
        chosen = tokens[tokens_before == a]
        if len(chosen) and not counts_match_pmf(chosen, np.arange(probs.shape[0]), probs[a], DRAW_LEVEL):
            return False
    return True


def check_on_policy_batch(on_policy_batch) -> None:
    __tracebackhide__ = True
    from specdec.model import encode, load
    from specdec.toy import toy_pair

    target, draft = toy_pair("cpu", cache=True)  # with the shipped pair's cache API: a cached answer works too
    V = target.config.vocab
    prompts = torch.tensor([[0, 1, 2], [3, 3, 0], [2, 0, 1], [1, 2, 3], [0, 0, 0], [3, 1, 2]])
    label = "on_policy_batch(draft, target, <6 prompts of 3 tokens>, 5, 1.0, generator)"
    run = lambda n, T, seed, p=prompts: call(on_policy_batch, draft, target, p.clone(), n, T,  # noqa: E731
                                             torch.Generator().manual_seed(seed), name="on_policy_batch")
    ids, scores = _unpack(run(5, 1.0, SEED), label, 6, 3, 5, V)
    if not torch.equal(ids[:, :3], prompts):
        fail(f"{label}: ids must start with the prompts, unchanged, then the draft's tokens.")
    if int(ids.min()) < 0 or int(ids.max()) >= V:
        fail(f"{label}: the new tokens must be token ids 0..V-1 drawn from the draft's distribution.")
    _check_scores(ids, scores, target, draft, 3, label, 1e-5)
    # reproducible with the generator it is given; different seeds give different batches
    again, _ = _unpack(run(5, 1.0, SEED), label, 6, 3, 5, V)
    other, _ = _unpack(run(5, 1.0, SEED + 1), label, 6, 3, 5, V)
    if not torch.equal(ids, again) or torch.equal(ids, other):
        fail("on_policy_batch: draw with the generator you are given (torch.multinomial(probs, 1, generator=generator)): "
             "the same seed must give the same batch, and another seed another batch.")
    # T = 0: the draft's argmax, given the token before
    greedy, _ = _unpack(run(5, 0.0, SEED), label.replace("1.0", "0"), 6, 3, 5, V)
    def argmax_chain(model):
        chain = prompts.clone()
        for _ in range(5):
            chain = torch.cat([chain, model(chain)[:, -1].argmax(-1, keepdim=True)], dim=1)
        return chain

    if not torch.equal(greedy, argmax_chain(draft)):
        if torch.equal(greedy, argmax_chain(target)):
            fail(HINT_FROM_TARGET)
        if torch.equal(greedy[:, 3:], draft(prompts)[:, -1].argmax(-1, keepdim=True).repeat(1, 5)):
            fail(HINT_NOT_FED_BACK)
        fail("on_policy_batch at temperature 0 must take the draft's argmax at every step (no draw).")
    # the draws: each new token given the one before it follows softmax(draft / T), at T = 1 and 0.5
    many = torch.arange(N_DRAWS).remainder(V).view(-1, 1).repeat(1, 2)  # prompts (2000, 2), last token 0..3
    for T in (1.0, 0.5):
        lab = f"on_policy_batch(draft, target, <{N_DRAWS} prompts>, 2, {T:g}, generator)"
        drawn, _ = _unpack(run(2, T, SEED + 2, many), lab, N_DRAWS, 2, 2, V)
        before, new = drawn[:, 1:3].numpy(), drawn[:, 2:4].numpy()
        first_ok = _draws_follow(draft, before[:, 0], new[:, 0], T)
        if first_ok and _draws_follow(draft, before[:, 1], new[:, 1], T):
            continue
        if _draws_follow(target, before[:, 0], new[:, 0], T):
            fail(HINT_FROM_TARGET)
        if T != 1.0 and _draws_follow(draft, before[:, 0], new[:, 0], 1.0):
            fail("on_policy_batch ignores the temperature: draw from softmax(draft_logits / temperature).")
        if first_ok and _draws_follow(draft, before[:, 0], new[:, 1], T):
            fail(HINT_NOT_FED_BACK)
        fail(f"{lab}: the new tokens do not follow the draft's distribution softmax(draft(ids)[:, -1] / temperature) "
             f"(exact binomial tests, false-failure probability below 2e-6).", generic=True)
    # the shipped pair at T = 0: the draft reads the whole sequence (a bigram cannot show it)
    big_target, big_draft = load("target", "cpu"), load("draft", "cpu")
    texts = ["def __init__(self, ", "import os\nimport sy"]
    real = torch.stack([encode(t)[:12] for t in texts])
    lab = "on_policy_batch(shipped draft, shipped target, <2 prompts of 12 bytes>, 8, 0, generator)"
    out = call(on_policy_batch, big_draft, big_target, real.clone(), 8, 0.0, torch.Generator().manual_seed(SEED),
               name="on_policy_batch")
    ids, scores = _unpack(out, lab, 2, 12, 8, 256)
    with torch.no_grad():
        logits = big_draft(ids[:, :-1])[:, 11:].float()
    picked = logits.gather(-1, ids[:, 12:, None])[..., 0]
    if not torch.equal(ids[:, :12], real) or bool((logits.max(-1).values - picked > 1e-4).any()):
        fail(f"{lab}: each new token must be the draft's argmax given EVERYTHING before it (the prompt and the draft's "
             "own tokens): call draft(ids) on the whole sequence so far, not on the last token alone.")
    _check_scores(ids, scores, big_target, big_draft, 12, lab, 1e-3)


# ---------------------------------------------------------------- the contract

CONTRACT = declare(
    globals(),
    Exercise("mixture_draft", "check_mixture_draft"),
    Exercise("acceptance", "check_acceptance"),
    Exercise("best_draft", "check_best_draft"),
    Exercise("forward_kl", "check_forward_kl"),
    Exercise("reverse_kl", "check_reverse_kl"),
    Exercise("total_variation", "check_total_variation"),
    Exercise("jensen_shannon", "check_jensen_shannon"),
    Exercise("expected_acceptance", "check_expected_acceptance"),
    Exercise("on_policy_batch", "check_on_policy_batch"),
)
