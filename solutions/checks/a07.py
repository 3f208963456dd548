"""Hidden-test checkers for 07_speculation_in_a_server: batch_accept, batched_generate, goodput, best_K.

batch_accept is a function of its inputs (the uniforms are arguments), so it is compared with the
reference uniform for uniform on seeded random batches (deterministic: no statistical test here); the
reference's own exactness (each row's output is the target's distribution) is shown in
tests/test_serving_notebook.py. A row may differ from the reference only where the two could round
differently: a uniform within 1e-5 (relative) of its acceptance threshold p(d)/q(d) or of a boundary of
the inverse CDF. Random inputs put a uniform that close with probability about 1e-5 per test, and every
such row is checked to be one. The acceptance test is strict (u < p/q), as the notebook says and its
greedy cases need: u = 0 is drawn on purpose there. A mistake of the catalogue is named only when it
reproduces the learner's output on every batch (one batch alone cannot tell some of them apart).

batched_generate, four checks in one cell:
- greedy on the shipped pair (temperature 0): every row equals its prompt decoded alone
  (specdec.engine.plain). The batch computes the same arithmetic over padded, masked rows, which differs
  from a lone sequence by float rounding (about 1e-5 on logits of order 10); the prompts below were
  chosen so that the target's top-two logit gap at every greedy step stays above 1e-3
  (tests/test_serving_notebook.py checks it), so no rounding can swap a greedy token. Deterministic.
  The grader does not decode the prompts itself: one forward pass over prompt + row tells whether the
  row is that decode (`greedy_alone`), as a target pass verifies drafts.
- what each model was fed (deterministic): greedy runs on `specdec.toy.text_pair`, whose batch cache
  records, row by row, what it held and was fed (`feeding_problem`). Named: either cache rolled back one
  position too far or left one position long, rejected drafts kept, tokens at the wrong position. This
  is what a draft cache off by one costs on the shipped pair: acceptance only, never the greedy output.
- reproducibility on the toy pair: the same seeded generator gives the same 16 rows of 3 tokens, another
  seed other ones (a correct answer repeats them with probability below 0.2 ** 16 = 7e-12).
- the law of the sampled tokens on toy bigram pairs, whose laws are exact: 3,000 rows at T = 0.5 and
  1,000 at T = 1, three exact binomial tests each (the first token, the three tokens, the first tokens of
  two rows together), Bonferroni-corrected at 1e-7 per test: a correct answer fails with probability
  below 6e-7 (DIST_CASES says what the sizes catch). Row by row, a shared uniform gives the wrong law
  within one call (the rows are independent given the shared uniforms, but each keeps its draft or emits
  the one residual token those uniforms pick), and the pairs test catches rows that depend on each other.
In all, a correct batched_generate fails with probability below 6e-7 + 7e-12.

goodput and best_K are formulas of callables: the checkers pass `specdec.serving.PassTime` objects,
pass times t(batch, tokens, context) that cross to the learner's kernel as descriptions: flat,
compute-bound, notebook 05's roofline with both models' caches, affine, step-shaped (tiles of 64
positions) and measured (interpolated) ones, at contexts 0-4096. goodput is compared within 1e-9
relative with the reference and with the one other reading the docstring allows (the draft's i-th pass
at context + i). best_K is graded by its value: the smallest K of the highest goodput; where two K
agree only to rounding (1e-9) either is accepted, and ties that are exact by construction must give
the smallest. Deterministic, no statistical test.
"""
from __future__ import annotations

import numpy as np
import torch

from solutions.checks._common import (
    HINT_EXPONENT_K, SEED, CheckFailure, Exercise, call_many, close, counts_match_pmf, declare, diagnose, fail,
    require_scalar, tokens_per_round,
)
from solutions.reference import a07_speculation_in_a_server as ref
from specdec.model import default_device, encode, load
from specdec.serving import PassTime
from specdec.toy import TEXT_TOKENS, text_pair, toy_pair

# ---------------------------------------------------------------- batch_accept

HINT_SHARED_U = ("one uniform shared by the batch: every row (and every position) needs its own uniform "
                 "u[b, i], or rows accept and reject together and their outputs are no longer independent.")
HINT_BONUS_ON_REJECT = ("a row that rejected emitted a token from the bonus row p[:, K] (or from the target's row "
                        "alone): after a rejection the token comes from the residual max(p - q, 0) at the first "
                        "rejection, normalised; the bonus row is only for rows that accepted all K drafts.")
HINT_NO_RESIDUAL = ("a row that rejected drew its token from the target's row p at the rejection: it must come from "
                    "the residual max(p - q, 0) there, normalised, or the output is not the target's distribution.")
HINT_NOT_PREFIX = ("this counts every draft that passed its test; a row keeps only the drafts before its first "
                   "rejection (the prefix), and nothing after it counts.")
HINT_INVERTED = "accept draft i when u < p(d) / q(d) (target over draft), not q(d) / p(d)."
HINT_UNNORMALISED = ("the inverse CDF must compare u with the row's total mass: normalise the residual (or compare "
                     "with u times its sum) before searching the cumulative sums.")


def _case(rng: np.random.Generator, B: int, K: int, V: int, kind: str, dtype=torch.float32):
    """p (B, K+1, V), q (B, K, V), drafts (B, K) drawn from q, u (B, K+1)."""
    if kind == "one-hot":  # temperature 0: greedy verification
        tp = rng.integers(0, V, size=(B, K + 1))
        dq = np.where(rng.random((B, K)) < 0.6, tp[:, :K], rng.integers(0, V, size=(B, K)))
        p = np.eye(V)[tp]
        q = np.eye(V)[dq]
    else:
        scale = {"close": 0.3, "far": 2.0}[kind]
        logits_p = rng.normal(size=(B, K + 1, V)) * 1.5
        logits_q = logits_p[:, :K] + rng.normal(size=(B, K, V)) * scale
        p = np.exp(logits_p - logits_p.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        q = np.exp(logits_q - logits_q.max(-1, keepdims=True))
        q /= q.sum(-1, keepdims=True)
    drafts = np.zeros((B, K), dtype=np.int64)
    for b in range(B):
        for i in range(K):
            drafts[b, i] = rng.choice(V, p=q[b, i] / q[b, i].sum())
    u = rng.random((B, K + 1))
    if kind == "one-hot":  # u = 0 exactly (torch.rand can return it): a strict test and a CDF past 0
        u[rng.random((B, K + 1)) < 0.3] = 0.0
    as_t = lambda a: torch.tensor(a, dtype=dtype)  # noqa: E731
    return as_t(p), as_t(q).reshape(B, K, V), torch.tensor(drafts), as_t(u)


CASES = [(B, K, V, kind) for B, K, V, kind in [
    (1, 1, 2, "far"), (1, 4, 5, "close"), (3, 0, 4, "far"), (3, 2, 3, "close"), (8, 3, 5, "far"), (8, 8, 50, "close"),
    (16, 4, 7, "one-hot"), (32, 1, 3, "close"), (64, 6, 20, "far"), (64, 3, 4, "close"), (5, 5, 6, "one-hot"),
    (64, 8, 50, "close"), (2, 0, 2, "one-hot"), (40, 2, 11, "far")]]


def _shared_u(p, q, d, u):
    return ref.batch_accept(p, q, d, u[:1].expand_as(u).contiguous())


def _variant(p, q, d, u, count="prefix", emit="residual", ratio="p/q", normalise=True, strict=True, right=True):
    """The reference with one step done wrongly, to name a learner's mistake."""
    B, K1, V = p.shape
    K = K1 - 1
    rows = torch.arange(B)
    if K == 0:
        n, dist = torch.zeros(B, dtype=torch.long), p[:, 0]
    else:
        p_d = p[:, :K].gather(-1, d[..., None])[..., 0]
        q_d = q.gather(-1, d[..., None])[..., 0]
        ok = (u[:, :K] * q_d < p_d if strict else u[:, :K] * q_d <= p_d) if ratio == "p/q" else u[:, :K] * p_d < q_d
        n = ok.long().cumprod(-1).sum(-1) if count != "all" else ok.long().sum(-1)
        counted = ok.long().sum(-1) if count == "all_reported" else n  # the token right, the count wrong
        at = n.clamp(max=K - 1)
        residual = (p[rows, at] - q[rows, at]).clamp(min=0)
        residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, p[rows, at])
        if emit == "bonus":
            residual = p[:, K]
        elif emit == "target":
            residual = p[rows, at]
        bonus = p[:, K - 1] if emit == "last_draft_row" else p[:, K]
        dist = torch.where((n == K)[:, None], bonus, residual)
        n = counted
    cdf = dist.cumsum(-1)
    x = u[:, K:] * cdf[:, -1:] if normalise else u[:, K:]
    return n, torch.searchsorted(cdf, x.contiguous(), right=right)[:, 0].clamp(max=V - 1)


HINT_NOT_STRICT = ("the acceptance test is strict, u < p(d)/q(d), as section 1 says: with u = 0 a draft the target gives "
                   "no mass (p(d) = 0, a non-argmax draft at temperature 0) must still be rejected, and `<=` keeps it.")
HINT_SEARCH_LEFT = ("the emitted token is the first whose cumulative mass is strictly greater than u times the total "
                    "(torch.searchsorted(..., right=True)): with right=False, u = 0 picks token 0 even when it has no "
                    "mass.")
HINT_BONUS_LAST_DRAFT = ("a row that accepted all K drafts drew its bonus token from p[:, K-1], the row its last draft "
                         "was tested against: the bonus comes from p[:, K], the target's distribution after all K "
                         "drafts.")

BATCH_MISTAKES = [
    (HINT_SHARED_U, _shared_u),
    (HINT_NOT_PREFIX, lambda *a: _variant(*a, count="all")),
    (HINT_NOT_PREFIX, lambda *a: _variant(*a, count="all_reported")),
    (HINT_INVERTED, lambda *a: _variant(*a, ratio="q/p")),
    (HINT_BONUS_ON_REJECT, lambda *a: _variant(*a, emit="bonus")),
    (HINT_BONUS_LAST_DRAFT, lambda *a: _variant(*a, emit="last_draft_row")),
    (HINT_NO_RESIDUAL, lambda *a: _variant(*a, emit="target")),
    (HINT_UNNORMALISED, lambda *a: _variant(*a, normalise=False)),
    (HINT_NOT_STRICT, lambda *a: _variant(*a, strict=False)),
    (HINT_SEARCH_LEFT, lambda *a: _variant(*a, right=False)),
]


def _as_long(value, B: int, label: str) -> np.ndarray:
    __tracebackhide__ = True
    if not isinstance(value, torch.Tensor):
        fail(f"{label} must return two torch tensors (accepted, token), not {type(value).__name__}: the batched "
             "loop keeps them on the models' device.")
    if value.dtype not in (torch.int64, torch.int32):
        fail(f"{label} returned {value.dtype} values; counts and tokens are integers (torch.long).")
    array = value.detach().cpu().numpy()
    if array.shape != (B,):
        fail(f"{label} must return two 1-D tensors of B = {B} entries (accepted, token), not shape {array.shape}.")
    return array.astype(np.int64)


def _borderline(p, q, d, u, b: int, n_ref: int) -> bool:
    """Whether row b has a uniform within 1e-5 (relative) of a threshold the two could round apart at."""
    K = d.shape[1]
    for i in range(min(n_ref + 1, K)):
        ratio = float(p[b, i, d[b, i]]) / max(float(q[b, i, d[b, i]]), 1e-30)
        if float(u[b, i]) > 0 and ratio > 0 and abs(float(u[b, i]) - ratio) <= 1e-5 * ratio:
            return True
    if float(u[b, K]) == 0:  # u = 0 is no boundary: the first token of positive mass, exactly
        return False
    for n in {n_ref, min(n_ref + 1, K)}:  # the row the token is drawn from, either way of a borderline test
        if n < K:
            dist = (p[b, n] - q[b, n]).clamp(min=0)
        else:
            dist = p[b, K]
        cdf = dist.double().cumsum(0)
        if bool((abs(cdf / cdf[-1] - float(u[b, K])) <= 1e-5).any()):
            return True
    return False


def _mistaken_rows(case, n, token, n_ref, t_ref) -> list[int]:
    """Rows where (n, token) differ from (n_ref, t_ref) other than by rounding at a threshold."""
    p, q, d, u = case
    return [b for b in range(d.shape[0]) if (n[b] != n_ref[b] or token[b] != t_ref[b])
            and not _borderline(p, q, d, u, b, int(n_ref[b]))]


def batch_mistake(cases, outs) -> str | None:
    """The hint of the catalogued mistake that reproduces the learner's outputs on EVERY case (up to
    rounding at a threshold) and differs from the rule on at least one: one case alone cannot tell
    some mistakes apart (a bonus from p[:, K-1] and a shared uniform both change only a few rows)."""
    for hint, mistake in BATCH_MISTAKES:
        differs, matches = False, True
        for case, (n, token) in zip(cases, outs):
            try:
                n_w, t_w = (x.numpy() for x in mistake(*case))
            except Exception:  # noqa: BLE001 - a mistake that does not apply to this shape
                continue
            n_ref, t_ref = (x.numpy() for x in ref.batch_accept(*case))
            differs = differs or bool(_mistaken_rows(case, n_w, t_w, n_ref, t_ref))
            if _mistaken_rows(case, n, token, n_w, t_w):
                matches = False
                break
        if matches and differs:
            return hint
    return None


def check_batch_accept(batch_accept) -> None:
    """Seeded random batches, float32 and float64, sampled and one-hot (greedy, with u = 0 drawn on
    purpose), against the reference uniform for uniform; a mistake is named only when it reproduces
    every case."""
    __tracebackhide__ = True
    rng = np.random.default_rng(SEED)
    cases = [_case(rng, B, K, V, kind, dtype) for (B, K, V, kind), dtype in
             zip(CASES, [torch.float32, torch.float64] * len(CASES))]
    calls = [((p.clone(), q.clone(), d.clone(), u.clone()), {}) for p, q, d, u in cases]
    outs, first_wrong = [], None
    for (p, q, d, u), out in zip(cases, call_many(batch_accept, calls, name="batch_accept")):
        B, K = d.shape
        label = f"batch_accept (B = {B}, K = {K}, V = {p.shape[-1]})"
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            fail(f"{label} must return a pair (accepted, token), not {type(out).__name__}.")
        n, token = _as_long(out[0], B, label), _as_long(out[1], B, label)
        outs.append((n, token))
        n_ref, t_ref = (x.numpy() for x in ref.batch_accept(p, q, d, u))
        wrong = _mistaken_rows((p, q, d, u), n, token, n_ref, t_ref)
        if wrong and first_wrong is None:
            b = wrong[0]
            first_wrong = (label, b, "accepted count" if n[b] != n_ref[b] else "emitted token")
    if first_wrong is None:
        return
    hint = batch_mistake(cases, outs)
    if hint:
        fail(f"batch_accept: {hint}")
    label, b, what = first_wrong
    fail(f"{label}: row {b}'s {what} differs from the acceptance rule (u[b, i] < p(d)/q(d) up to the first "
         "rejection, then one token by the inverse CDF of the residual or the bonus row, with u[b, K]).",
         generic=True)


# ---------------------------------------------------------------- batched_generate

# Code of the course's kind, cut into prompts of different lengths (2 to 40 tokens).
TEXT = ("def parse(self, path):\n    with open(path) as f:\n        return [line.strip() for line in f]\n\n"
        "class Cache:\n    def __init__(self, size):\n        self.size = size\n        self.items = {}\n\n"
        "import os\nimport sys\n\n\ndef main(argv=None):\n    args = parser.parse_args(argv)\n")
PROMPT_SPANS = [(0, 23), (23, 49), (96, 108), (108, 134), (134, 160), (160, 176), (0, 2), (49, 89), (176, 186),
                (186, 196), (199, 221), (221, 255), (12, 30), (60, 75), (140, 150), (90, 100)]
# (B, K): 1 to 16 rows, K from 0 to 6 (before: also (8, 4), and 3 and 5 rows where 2 are here; no mistake
# of the catalogue needed them: those that change the greedy output show from (4, 2) on).
BATCHES = [(1, 3), (2, 0), (4, 2), (16, 3), (2, 6)]
NEW = 10
HINT_ROLLBACK_MIN = ("every row rolled back by the same amount (the batch's smallest acceptance, for instance): each "
                     "row keeps its own committed length, lengths[b] + accepted[b], so roll each cache back per row.")


def _prompts(B: int, offset: int) -> list:
    return [encode(TEXT[a:b]) for a, b in (PROMPT_SPANS[(offset + i) % len(PROMPT_SPANS)] for i in range(B))]


def _tokens(value, label: str) -> list[int]:
    __tracebackhide__ = True
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().tolist()
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, (int, np.integer)) and not isinstance(t, bool)
                                                       for t in value):
        fail(f"{label} must return, for each prompt, a 1-D LongTensor (or list) of token ids.")
    return [int(t) for t in value]


def _rows(out, B: int, label: str, new: int = NEW) -> list[list[int]]:
    __tracebackhide__ = True
    if not isinstance(out, (list, tuple)) or len(out) != B:
        fail(f"{label} must return a list of one output per prompt ({B} here).")
    rows = [_tokens(o, label) for o in out]
    if any(len(r) != new for r in rows):
        fail(f"{label} must return exactly max_new_tokens = {new} new tokens per row, without the prompt.")
    return rows


# ---- what each model was fed (text_pair, greedy): every row's caches judged position by position

# text_pair's greedy text is 0, 1, 2, ... (mod TEXT_TOKENS); row b's prompt is the text from FEED_ROWS[b][0], of
# FEED_ROWS[b][1] tokens, so the rows start at different lengths and accept different numbers of drafts.
FEED_ROWS = [(0, 6), (3, 2), (10, 9), (17, 4), (22, 3), (33, 12), (5, 5), (26, 7)]
FEED_KS = (2, 4)
HINT_DRAFT_SHORT = ("the draft's cache lacks a row's committed token when the next round starts (rows that accepted "
                    "every draft, say): it was rolled back one position too far; roll row b back to lengths[b] + "
                    "accepted[b] - 1, all but its last two tokens.")
HINT_DRAFT_LONG = ("the draft's cache keeps one position too many when the next round starts (rows that rejected a "
                   "draft, say), so the two tokens fed land one place late and a committed token is fed twice; roll "
                   "row b back to lengths[b] + accepted[b] - 1, all but its last two tokens.")
HINT_TARGET_SHORT = ("the target's cache lacks a row's last accepted token when the next round starts: it was rolled "
                     "back one position too far; roll row b back to lengths[b] + accepted[b], all but its last token.")
HINT_TARGET_LONG = ("the target's cache keeps one position too many when the next round starts (a rejected draft's "
                    "entry, or a token fed twice); roll row b back to lengths[b] + accepted[b], all but its last "
                    "token.")


def _stale(role: str) -> str:
    return (f"the {role}'s cache still holds a row's rejected drafts when the next round starts: roll each row "
            "back after every round, by its own number of accepted drafts.")


def _misplaced(role: str) -> str:
    return (f"the {role}'s cache holds a row's token at the wrong position: after each round row b must hold "
            "exactly its committed tokens (all but the last one for the target, all but the last two for the "
            "draft), in order.")


def _feeds(events, label: str) -> dict:
    """(cache, row) -> [(before, fed), ...] in call order, from a recording model's extend_batch events."""
    __tracebackhide__ = True
    rows: dict = {}
    try:
        for ev in events:
            if ev["op"] == "extend_batch":
                for r, before, fed in zip(ev["rows"], ev["before"], ev["fed"]):
                    rows.setdefault((int(ev["cache"]), int(r)), []).append(([int(x) for x in before],
                                                                          [int(x) for x in fed]))
    except (KeyError, TypeError, ValueError):
        fail(f"{label}: the grader could not read what the models were fed (was a model or its cache replaced?).")
    return rows


def _target_problem(feeds, text) -> str | None:
    for before, fed in feeds:
        if len(before) + len(fed) + 1 >= len(text):  # past the text this check knows (a row run far ahead)
            continue
        wrong = [i for i, token in enumerate(before) if token != text[i]]
        if wrong:
            if before[wrong[0]] >= TEXT_TOKENS:
                return HINT_TARGET_LONG if wrong == [len(before) - 1] else _stale("target")
            return _misplaced("target")
        if fed and fed[0] != text[len(before)]:
            if fed[0] == text[len(before) + 1]:
                return HINT_TARGET_SHORT
            if before and fed[0] == text[len(before) - 1]:
                return HINT_TARGET_LONG
            return _misplaced("target")
    return None


def _draft_problem(feeds, text) -> str | None:
    for before, fed in feeds:
        if len(before) + len(fed) + 1 >= len(text):  # past the text this check knows (a row run far ahead)
            continue
        seq = before + fed
        for i, token in enumerate(seq):
            if token == text[i]:
                continue
            if token >= TEXT_TOKENS:  # a draft outside the text: rejected, or this round's own
                if i < len(before) and any(t < TEXT_TOKENS for t in seq[i + 1:]):
                    return _stale("draft")
                break
            if i == len(before) and token == text[i + 1]:
                return HINT_DRAFT_SHORT
            if i == len(before) and i > 0 and token == text[i - 1]:
                return HINT_DRAFT_LONG
            return _misplaced("draft")
    return None


def feeding_problem(fn) -> str | None:
    """What went wrong in feeding the batch caches, from text_pair's records (None: nothing): greedy runs
    of FEED_ROWS at K in FEED_KS, each row judged on its own text. A correct loop's target cache holds,
    whenever it is fed, only its row's text, each token at its place, and is fed the next text token first;
    the draft's holds the text and then, within a round, its own drafts (text_pair's draft guesses outside
    the text after its first wrong guess), and a round starts by feeding the next text tokens."""
    __tracebackhide__ = True
    target, draft = text_pair(default_device())
    prompts = [torch.tensor([(s + i) % TEXT_TOKENS for i in range(L)]) for s, L in FEED_ROWS]
    for K in FEED_KS:
        label = f"batched_generate ({len(prompts)} prompts, K = {K}, temperature 0, on a toy pair)"
        out, = call_many(fn, [((target, draft, [p.clone() for p in prompts], K, NEW), {"temperature": 0.0})],
                         name="batched_generate", events=True)
        rows = _rows(out, len(prompts), label)
        texts = [[(s + i) % TEXT_TOKENS for i in range(L + NEW * (K + 2) + 4)] for s, L in FEED_ROWS]
        for model, judge in ((target, _target_problem), (draft, _draft_problem)):
            if not isinstance(model.events, list):
                fail(f"{label}: the grader could not read what the models were fed (was a model or its cache "
                     "replaced?).")
            for (cache, b), feeds in sorted(_feeds(model.events, label).items()):
                if not 0 <= b < len(texts):
                    continue
                problem = judge(feeds, texts[b])
                if problem:
                    return problem
        if any(row != text[L:L + NEW] for row, text, (s, L) in zip(rows, texts, FEED_ROWS)):
            return None  # wrong tokens that the caches do not explain: the greedy check's hint says more
    return None


# ---- the law of the sampled output (toy_pair: bigram tables, exact laws)

# Every row's prompt ends with token 3, where the mistakes below differ most from the target; rows of
# different lengths. (temperature, near, K, rows) with near the toy_pair argument `close`, 3 new tokens each, so
# the first round's bonus token (K + 1) and later rounds are reached too. Sizes, from the exact laws of the
# first token (total variation from the target's; scipy.stats.binom): at T = 0.5 on the close pair, q from
# the raw logits (TV 0.075) passes the first token's test with 3,000 rows with probability below 4e-7, drafts
# drawn from the raw logits (TV 0.14) and argmax drafts (TV 0.22) below 1e-15; at T = 1 (the other pair,
# argmax drafts TV 0.34) and at T = 0.5, 1,000 rows already catch one row of uniforms shared by the batch
# in 40 seeded trials out of 40 (the pairs test below; at T = 1 again in 40 of 40 other seeds with 1,000
# rows, 2026-12-06), and at T = 1 argmax drafts cannot pass the first token's test with 1,000 rows (a
# cell their law leaves empty needs counts). So T = 1 has 1,000 rows (2,000 before).
DIST_PROMPTS = [[3, 3], [0, 1, 3], [2, 0, 1, 3], [1, 3]]
DIST_NEW = 3
DIST_CASES = [(0.5, True, 2, 3_000), (1.0, False, 1, 1_000)]
# Each case makes three exact tests, each Bonferroni-corrected over its cells at level 1e-7: the first
# token's law (4 cells), the law of the three tokens (64 cells) and the joint law of the first tokens of
# rows 2i and 2i+1 (16 cells; rows are independent, so it is the product of the first token's law with
# itself). Two cases: a correct answer fails one with probability below 6 x 1e-7 (union bound).
DIST_LEVEL = 1e-7
HINT_SHARED_ROWS = ("the rows of the batch are not independent (they accept and reject together): draw every row its "
                    "own uniforms, torch.rand(B, K + 1, ...), not one row of them shared by the batch, and its own "
                    "drafts.")
HINT_ARGMAX_DRAFTS = ("at temperature > 0 the drafts are the draft's argmax while q is its softmax: draw each draft "
                      "from q (torch.multinomial(q_i, 1, generator=generator)), or the output is biased.")
HINT_RAW_Q = ("the q passed to batch_accept comes from the draft's raw logits (temperature 1) while the drafts were "
              "drawn at the temperature: use the same tempered q for both, probabilities(logits, temperature).")
HINT_RAW_DRAFTS = ("the drafts are drawn from the draft's raw logits (temperature 1) while batch_accept is given q at "
                   "the temperature: draw them from the same tempered q that you pass.")
HINT_RAW_P = ("the tokens follow the target at temperature 1: apply the temperature to p (the target's rows) as well "
              "as to q.")


def _shared_u_laws(p1: np.ndarray, q1: np.ndarray) -> list[np.ndarray]:
    """The first token's laws within one call when every row uses the same uniforms: given them, the rows
    are independent, each keeping its draft d when u0 < p(d)/q(d) (the set of such d is fixed by u0) and
    otherwise emitting the one residual token that the shared u picks. One law per (set, token)."""
    ratio = p1 / q1
    residual = np.maximum(p1 - q1, 0)
    laws = []
    for cut in sorted({0.0, *ratio[ratio < 1]}):
        kept = ratio > cut
        for token in np.flatnonzero(residual > 0):
            laws.append(q1 * kept + (1 - q1[kept].sum()) * np.eye(len(p1))[token])
    return laws


def _law3(p: np.ndarray, start: int) -> np.ndarray:
    """P(x1, x2, x3) of a bigram chain after token `start`, flattened (x1 * 16 + x2 * 4 + x3)."""
    return (p[start][:, None, None] * p[:, :, None] * p[None, :, :]).reshape(-1)


def _first_law(p1, q_sample, q_test) -> np.ndarray:
    """The first token's law when drafts come from q_sample and batch_accept is given q_test."""
    accept = q_sample * np.minimum(1.0, p1 / q_test)
    residual = np.maximum(p1 - q_test, 0)
    return accept + (1 - accept.sum()) * residual / residual.sum()


def _distribution(fn) -> None:
    __tracebackhide__ = True
    device = default_device()
    for T, near, K, R in DIST_CASES:
        target, draft = toy_pair(device, close=near, cache=True)
        label = f"batched_generate ({R} prompts, K = {K}, temperature {T:g}, on a toy pair)"
        prompts = [torch.tensor(DIST_PROMPTS[b % len(DIST_PROMPTS)]) for b in range(R)]
        gen = torch.Generator(device=device).manual_seed(SEED)
        out, = call_many(fn, [((target, draft, prompts, K, DIST_NEW), {"temperature": T, "generator": gen})],
                         name="batched_generate")
        rows = _rows(out, R, label, DIST_NEW)
        if any(t < 0 or t > 3 for row in rows for t in row):
            fail(f"{label} returned token ids outside the toy pair's vocabulary of 4.")
        x = np.array(rows)
        p_T = target.probs(T).numpy()
        p1 = p_T[3]
        tests = [counts_match_pmf(x[:, 0], np.arange(4), p1, DIST_LEVEL),
                 counts_match_pmf(x[:, 0] * 16 + x[:, 1] * 4 + x[:, 2], np.arange(64), _law3(p_T, 3), DIST_LEVEL),
                 counts_match_pmf(x[0::2, 0] * 4 + x[1::2, 0], np.arange(16), np.outer(p1, p1).reshape(-1),
                                  DIST_LEVEL)]
        if all(tests):
            continue
        if tests[0] and tests[1]:  # each row's law is right, but rows 2i and 2i+1 depend on each other
            fail(f"{label}: {HINT_SHARED_ROWS}")
        q_T, q_raw = draft.probs(T).numpy()[3], draft.probs(1.0).numpy()[3]
        argmax = np.eye(4)[int(np.argmax(q_T))]
        wrong = [(HINT_ARGMAX_DRAFTS, _first_law(p1, argmax, q_T))]
        wrong += [(HINT_SHARED_ROWS, law) for law in _shared_u_laws(p1, q_T)]
        if T != 1.0:
            wrong += [(HINT_RAW_Q, _first_law(p1, q_T, q_raw)), (HINT_RAW_DRAFTS, _first_law(p1, q_raw, q_T)),
                      (HINT_RAW_P, target.probs(1.0).numpy()[3])]
        for hint, law in wrong:  # named only where the first token follows that mistake's exact law
            if counts_match_pmf(x[:, 0], np.arange(4), law, 1e-3):
                fail(f"{label}: {hint}")
        fail(f"{label}: the emitted tokens do not follow the target's distribution at this temperature (drafts "
             "drawn from q at the temperature, each row's own uniforms; batched_generate uses your batch_accept: "
             "make it pass its check first).", generic=True)


def _reproducible(fn, target, draft) -> None:
    __tracebackhide__ = True
    device = default_device()
    prompts = [torch.tensor(DIST_PROMPTS[b % len(DIST_PROMPTS)]) for b in range(16)]
    calls = [((target, draft, [p.clone() for p in prompts], 2, DIST_NEW),
              {"temperature": 1.0, "generator": torch.Generator(device=device).manual_seed(seed)})
             for seed in (11, 11, 12)]
    runs = [_rows(o, 16, "batched_generate (16 prompts, K = 2, temperature 1, on a toy pair)", DIST_NEW)
            for o in call_many(fn, calls, name="batched_generate")]
    if runs[0] != runs[1]:
        fail("batched_generate at temperature 1 gave two different outputs for the same seeded generator: draw "
             "every random number (the drafts and the uniforms) from `generator`.")
    if runs[0] == runs[2]:
        fail("batched_generate at temperature 1 ignores its generator: two different seeds gave the same output.")


_GREEDY: dict = {}  # {(device, prompt's tokens, row): whether row is the prompt's greedy continuation}


def greedy_alone(target, pairs) -> list[bool]:
    """Whether each (prompt, row) pair's row is the prompt's first len(row) greedy tokens decoded alone
    (specdec.engine.plain on the shipped target), judged the way speculative decoding verifies drafts: one
    forward pass over prompt + row (sequences of similar lengths right-padded into batches of 4; the model
    is causal, so the padding reaches no position before it), and the row is that continuation exactly
    when each of its tokens is the argmax after the tokens before it. If the row first differs from the
    plain decode at step i, the argmax there is plain's token (same prefix), so the pass says no; if it
    equals it, every argmax is plain's token. Both hold because the top-two logit gap along each prompt's
    plain decode is above 1e-3 in a forward pass over prompt + decode (tests/test_serving_notebook.py),
    while a cache, a batch or padding change logits by float rounding only (about 1e-5). One pass per
    prompt instead of a cached decode of NEW passes; verdicts are kept per process, as the decodes were."""
    device = target.device
    keys = [(str(device), tuple(int(t) for t in prompt), tuple(row)) for prompt, row in pairs]
    todo = [k for k in dict.fromkeys(keys) if k not in _GREEDY]
    vocab = target.config.vocab
    for key in [k for k in todo if not all(0 <= t < vocab for t in k[2]) or not k[2]]:
        _GREEDY[key] = not key[2]  # a token the model does not have is never its argmax
        todo.remove(key)
    todo.sort(key=lambda k: len(k[1]) + len(k[2]))
    for group in (todo[i:i + 4] for i in range(0, len(todo), 4)):  # sorted by length: little padding
        seqs = [list(prompt) + list(row) for _, prompt, row in group]
        ids = torch.zeros(len(seqs), max(map(len, seqs)), dtype=torch.long)
        for i, seq in enumerate(seqs):
            ids[i, :len(seq)] = torch.tensor(seq)
        with torch.no_grad():
            picks = target(ids.to(device)).argmax(-1).cpu()
        for i, key in enumerate(group):
            start = len(key[1]) - 1
            _GREEDY[key] = picks[i, start:start + len(key[2])].tolist() == list(key[2])
    return [_GREEDY[k] for k in keys]


def check_batched_generate(batched_generate) -> None:
    """Greedy batches of 1-16 prompts on the shipped pair against each prompt decoded alone; what each
    model's batch cache was fed, row by row (text_pair); sampled runs reproducible from their generator;
    the law of the sampled tokens at temperatures 0.5 and 1 (toy_pair)."""
    __tracebackhide__ = True
    device = default_device()
    target, draft = load("target", device), load("draft", device)
    cases = [(B, K, _prompts(B, i * 3)) for i, (B, K) in enumerate(BATCHES)]
    calls = [((target, draft, prompts, K, NEW), {"temperature": 0.0}) for B, K, prompts in cases]
    outs = call_many(batched_generate, calls, name="batched_generate")
    labels = [f"batched_generate ({B} prompts, K = {K}, temperature 0)" for B, K, _ in cases]
    parsed = []  # each batch's rows, or the failure its output gets, raised in batch order below
    for (B, _, _), out, label in zip(cases, outs, labels):
        try:
            parsed.append((_rows(out, B, label), None))
        except CheckFailure as failure:
            parsed.append((None, failure))
    right = iter(greedy_alone(target, [(prompt, row) for (_, _, prompts), (rows, _) in zip(cases, parsed)
                                       if rows is not None for prompt, row in zip(prompts, rows)]))
    for (B, K, prompts), (rows, failure), label in zip(cases, parsed, labels):
        if failure is not None:
            raise failure
        for b, ok in enumerate([next(right) for _ in prompts]):
            if not ok:
                if B > 1:  # each prompt alone: right alone but wrong in a batch is a mistake between rows
                    singles = call_many(batched_generate, [((target, draft, [pr], K, NEW), {"temperature": 0.0})
                                                           for pr in prompts], name="batched_generate")
                    if all(greedy_alone(target, [(pr, _rows(o, 1, label)[0])])[0] for o, pr in zip(singles, prompts)):
                        fail(f"batched_generate: each prompt decoded alone is right, but rows go wrong in a batch: "
                             f"{HINT_ROLLBACK_MIN}")
                problem = feeding_problem(batched_generate)
                if problem:
                    fail(f"batched_generate: {problem}")
                fail(f"{label}: row {b} differs from its prompt decoded alone (plain greedy decoding); "
                     "check each row's cache lengths after the rollback (target: all committed tokens but the "
                     "last; draft: all but the last two) and that each row keeps only its own accepted drafts "
                     "(batched_generate uses your batch_accept: make it pass its check first).",
                     generic=True)
    problem = feeding_problem(batched_generate)
    if problem:
        fail(f"batched_generate: {problem}")
    _reproducible(batched_generate, *toy_pair(device, cache=True))
    _distribution(batched_generate)


# ---------------------------------------------------------------- goodput and best_K

HINT_PER_SEQUENCE = ("this is the goodput of one sequence: a batch step delivers B rows' tokens, so multiply by B "
                     "(tokens per second of the whole batch).")
HINT_OVERHEAD_PER_TOKEN = ("the overhead is paid once per step (sampling, acceptance, rollback for the whole batch), "
                           "not once per token or per position.")
HINT_OVERHEAD_AT_PLAIN = ("K = 0 is plain decoding, which pays no round overhead: add `overhead` to the step only "
                          "when K > 0 (notebook 05's convention, and SmartSpec's).")
HINT_B_PASSES = ("one target pass scores all B(K+1) positions: its time is target_time(B, K + 1, context), not B "
                 "separate passes of one row.")
HINT_ROW_POSITIONS = ("the target pass scores K + 1 positions for each of the B rows: target_time(B, K + 1, context), "
                      "not a pass of one row.")
HINT_ROWS_TOKENS_SWAPPED = ("the pass-time arguments are (batch, tokens per row, context): B rows of K + 1 positions "
                            "each is target_time(B, K + 1, context); B(K+1) rows of one position would read B(K+1) "
                            "caches.")
HINT_DRAFT_PER_ROW = ("each of the K draft passes serves the whole batch: K * draft_time(B, 1, context), not one pass "
                      "per row or per token.")
HINT_NO_CONTEXT = ("the passes ignore the context: every row's cache is read in every pass, so call both "
                   "target_time and draft_time with `context` (speculation reads the target's cache once per round "
                   "instead of once per token).")
HINT_DRAFT_NO_CONTEXT = ("the draft reads its own cache too: each of its K passes is draft_time(B, 1, context), "
                         "not a pass at context 0.")
HINT_TARGET_NO_CONTEXT = "the target's pass reads every row's cache: target_time(B, K + 1, context), not context 0."
HINT_ACCEPTANCE_ALONE = ("K chosen by acceptance alone: the best K depends on the batch through the pass times "
                         "(at large B verification is compute-bound), so maximise the goodput at this B.")
HINT_NEVER_ZERO = "K = 0 (no speculation) must be a candidate: when no K pays, the answer is 0."
HINT_LARGEST_TIE = "on ties return the smallest K (less work for the same goodput)."
HINT_FIRST_DROP = ("the search stops where the goodput first drops, but real pass times are step-shaped (tiles, "
                   "waves, padded CUDA graphs), so the goodput can fall and rise again: compare every K in 0..K_max.")
HINT_K_MAX_LEFT_OUT = "K_max itself is a candidate: search K = 0, 1, ..., K_max (range(K_max + 1))."
HINT_BEST_NO_OVERHEAD = "best_K must pass `overhead` on to goodput: the round's overhead changes which K pays."
HINT_BEST_NO_CONTEXT = "best_K must pass `context` on to goodput: the best K grows with the context at large batch."


def _goodput_growing_draft_context(alpha, K, B, tt, dt, o=0.0, L=0):
    """A correct goodput that reads the draft's cache at context + i in its i-th pass (the round's own
    drafts counted), which the checker accepts as well."""
    step = tt(B, K + 1, L) + (sum(dt(B, 1, L + i) for i in range(K)) + o if K else 0.0)
    return B * float(tokens_per_round(alpha, K)) / step


ACCEPTED = [_goodput_growing_draft_context]


def _wrong_goodput(kind):
    def wrong(alpha, K, B, tt, dt, o=0.0, L=0):
        tokens = float(tokens_per_round(alpha, K))
        Lt = 0 if kind in ("no_context", "target_no_context") else L
        Ld = 0 if kind in ("no_context", "draft_no_context") else L
        draft, verify, rows = K * dt(B, 1, Ld), tt(B, K + 1, Lt), B
        o = o if K or kind == "overhead_at_plain" else 0.0  # plain decoding pays no round overhead
        if kind == "per_sequence":
            rows = 1
        elif kind == "overhead_per_token":
            o = o * B * (K + 1)
        elif kind == "overhead_per_emitted":
            o = o * B * tokens
        elif kind == "b_passes":
            verify = B * tt(1, K + 1, Lt)
        elif kind == "row_positions":
            verify = tt(1, K + 1, Lt)
        elif kind == "swapped":
            verify = tt(B * (K + 1), 1, Lt)
        elif kind == "draft_per_row":
            draft = K * B * dt(1, 1, Ld)
        elif kind == "exponent_k":
            tokens = K if alpha == 1 else (1 - alpha ** K) / (1 - alpha)
        return rows * tokens / (draft + verify + o)
    return wrong


GOODPUT_MISTAKES = [
    (HINT_OVERHEAD_AT_PLAIN, _wrong_goodput("overhead_at_plain")),
    (HINT_PER_SEQUENCE, _wrong_goodput("per_sequence")),
    (HINT_OVERHEAD_PER_TOKEN, _wrong_goodput("overhead_per_token")),
    (HINT_OVERHEAD_PER_TOKEN, _wrong_goodput("overhead_per_emitted")),
    (HINT_NO_CONTEXT, _wrong_goodput("no_context")),
    (HINT_DRAFT_NO_CONTEXT, _wrong_goodput("draft_no_context")),
    (HINT_TARGET_NO_CONTEXT, _wrong_goodput("target_no_context")),
    (HINT_B_PASSES, _wrong_goodput("b_passes")),
    (HINT_ROW_POSITIONS, _wrong_goodput("row_positions")),
    (HINT_ROWS_TOKENS_SWAPPED, _wrong_goodput("swapped")),
    (HINT_DRAFT_PER_ROW, _wrong_goodput("draft_per_row")),
    (HINT_EXPONENT_K, _wrong_goodput("exponent_k")),
]

# Llama-3-8B verifying, Llama-3.2-1B drafting, on an H100 SXM: notebook 05's roofline with both caches
_H100 = dict(bandwidth=3.35e12, flops=989e12)
_LLAMA = (PassTime.roofline(8.03e9, 131072, 524288, **_H100), PassTime.roofline(1.24e9, 32768, 131072, **_H100))
TIMES = {  # name -> (target, draft): pass times of (batch, tokens per row, context)
    "flat": (PassTime(floor=0.01), PassTime(floor=0.002)),
    "compute-bound": (PassTime(per_position=1e-3), PassTime(per_position=1e-4)),
    "roofline": _LLAMA,
    "affine": (PassTime(fixed=0.003, per_position=2e-5, per_cached=1e-8), PassTime(fixed=0.001, per_position=1e-6)),
    # tiles of 64 positions (t = 0.01 ceil(n / 64)) and a draft as cheap as a tenth of a tile
    "step-shaped": (PassTime(per_position=0.01 / 64, tile=64), PassTime(floor=0.001, per_cached=1e-9)),
    # a small model timed on a CPU (specdec.serving.measured_pass_time's shape): interpolated between measured
    # points, plus the context's cost, per row for reading the cache and per scored position for attention
    "measured": (PassTime(knots="1:0.0012 4:0.0013 16:0.0019 64:0.0052 320:0.024 576:0.043", per_cached=2e-6,
                          per_pair=2e-7),
                 PassTime(knots="1:0.0004 4:0.00042 16:0.0005 64:0.0011", per_pair=5e-10)),
}
ALPHAS = (0.0, 0.3, 0.6, 0.8, 0.95, 1.0)
CONTEXTS = (0, 512, 4096)
GRID = [(alpha, K, B, name, o, L) for name in TIMES for alpha in ALPHAS for K in (0, 1, 2, 4, 8, 16)
        for B in (1, 4, 48, 512) for o in (0.0, 1e-3) for L in CONTEXTS
        if (K + B + int(alpha * 10) + L // 512) % 4 == 0 or (K in (0, 4) and L != 512)]


def _close_to_any(got, inputs, rtol=1e-9):
    """Whether the values match the reference, or an accepted way of writing it, on every input."""
    for fn in [ref.goodput, *ACCEPTED]:
        want = [fn(*args) for args in inputs]
        if close(got, want, rtol=rtol, atol=0):
            return True
    return False


def check_goodput(goodput) -> None:
    """Values on a grid of alpha, K, B, pass-time shapes, overheads and contexts, within 1e-9 relative."""
    __tracebackhide__ = True
    calls = [((alpha, K, B, *TIMES[name], o), {"context": L}) for alpha, K, B, name, o, L in GRID]
    got = [require_scalar(v, f"goodput({alpha:g}, {K}, {B}, ..., context={L})")
           for v, (alpha, K, B, name, o, L) in zip(call_many(goodput, calls, name="goodput"), GRID)]
    inputs = [(alpha, K, B, *TIMES[name], o, L) for alpha, K, B, name, o, L in GRID]
    if _close_to_any(got, inputs):
        return
    hint = diagnose(got, GOODPUT_MISTAKES, inputs, rtol=1e-9)
    if hint:
        fail(f"goodput: {hint}")
    want = [ref.goodput(*args) for args in inputs]
    alpha, K, B, name, o, L = next(x for x, g, w in zip(GRID, got, want) if not close(g, w, rtol=1e-9, atol=0))
    fail(f"goodput({alpha:g}, K = {K}, B = {B}, {name} passes, overhead {o:g}, context {L}) is wrong: B rows each "
         "emit (1 - alpha**(K+1)) / (1 - alpha) tokens per step of one target pass target_time(B, K + 1, context), "
         "plus, when K > 0, K draft passes draft_time(B, 1, context) and the overhead.", generic=True)


def _best(goodput_fn, alpha, B, tt, dt, o, K_max, L, Ks=None):
    """The goodput of every K in 0..K_max (or of Ks)."""
    return [goodput_fn(alpha, K, B, tt, dt, o, L) for K in (range(K_max + 1) if Ks is None else Ks)]


def _acceptance_alone(alpha, B, tt, dt, o, K_max, L):
    return ref.best_K(alpha, 1, tt, dt, o, K_max, L)


def _never_zero(alpha, B, tt, dt, o, K_max, L):
    if K_max == 0:
        return 0
    return 1 + int(np.argmax(_best(ref.goodput, alpha, B, tt, dt, o, K_max, L, range(1, K_max + 1))))


def _largest_tie(alpha, B, tt, dt, o, K_max, L):
    rates = np.array(_best(ref.goodput, alpha, B, tt, dt, o, K_max, L))
    return int(np.flatnonzero(rates == rates.max())[-1])


def _first_drop(alpha, B, tt, dt, o, K_max, L):
    rates = _best(ref.goodput, alpha, B, tt, dt, o, K_max, L)
    K = 0
    while K < K_max and rates[K + 1] > rates[K]:
        K += 1
    return K


def _k_max_left_out(alpha, B, tt, dt, o, K_max, L):
    return int(np.argmax(_best(ref.goodput, alpha, B, tt, dt, o, max(K_max - 1, 0), L)))


def _no_overhead(alpha, B, tt, dt, o, K_max, L):
    return ref.best_K(alpha, B, tt, dt, 0.0, K_max, L)


def _no_context(alpha, B, tt, dt, o, K_max, L):
    return ref.best_K(alpha, B, tt, dt, o, K_max, 0)


BEST_MISTAKES = [(HINT_NEVER_ZERO, _never_zero), (HINT_LARGEST_TIE, _largest_tie), (HINT_FIRST_DROP, _first_drop),
                 (HINT_K_MAX_LEFT_OUT, _k_max_left_out), (HINT_ACCEPTANCE_ALONE, _acceptance_alone),
                 (HINT_BEST_NO_OVERHEAD, _no_overhead), (HINT_BEST_NO_CONTEXT, _no_context)]
BEST_GRID = [(alpha, B, name, o, K_max, L) for name in TIMES for alpha in ALPHAS for B in (1, 4, 48, 128, 512)
             for o in (0.0, 1e-3) for K_max in (0, 4, 16) for L in CONTEXTS
             if (K_max != 0 or B == 4) and (L == 0 or alpha in (0.6, 0.8, 0.95))]
# with a free draft and a flat target at alpha = 0 every K has the same goodput: ties (the smallest K)
TIES = [(0.0, B, "free", 0.0, 8, 0) for B in (1, 16)]


def _near_best(rates, exact_ties: bool) -> set:
    """The K a correct best_K may return: the smallest maximum, and where the goodputs of several K agree
    to 1e-9 only through rounding, any of them (two correct ways of writing goodput may round a near-tie
    either way); where the tie is exact by construction (`exact_ties`), the smallest K alone."""
    rates = np.asarray(rates, dtype=float)
    top = rates.max()
    if exact_ties:
        return {int(np.flatnonzero(rates == top)[0])}
    return {int(k) for k in np.flatnonzero(rates >= top * (1 - 1e-9))}


def _agrees(got, inputs, goodput_fn, exact, rows=None) -> bool:
    """Whether every K in `got` is a best K of `goodput_fn` (at batch `rows` instead of B, when given)."""
    for k, args, ex in zip(got, inputs, exact):
        alpha, B, tt, dt, o, K_max, L = args
        with np.errstate(all="ignore"):
            rates = _best(goodput_fn, alpha, B if rows is None else rows, tt, dt, o, K_max, L)
        if not np.all(np.isfinite(rates)) or k not in _near_best(rates, ex):
            return False
    return True


def check_best_K(best_K) -> None:
    """The K of the highest goodput on a grid of alpha, B, pass times (step-shaped and measured ones
    included), overheads, K_max and contexts; ties (the smallest K; where two K agree only up to
    rounding, either). The value is graded (a numpy integer passes; the visible test asks for a
    Python int)."""
    __tracebackhide__ = True
    times = dict(TIMES, free=(PassTime(floor=0.01), PassTime()))
    grid = BEST_GRID + TIES
    exact = [False] * len(BEST_GRID) + [True] * len(TIES)
    calls = [((alpha, B, *times[name], o), {"K_max": K_max, "context": L}) for alpha, B, name, o, K_max, L in grid]
    got = []
    for value, (alpha, B, name, o, K_max, L) in zip(call_many(best_K, calls, name="best_K"), grid):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            fail(f"best_K({alpha:g}, B = {B}, ...) returned {type(value).__name__}; return a whole number K "
                 "(a Python int: int(k)).")
        got.append(int(value))
    inputs = [(alpha, B, *times[name], o, K_max, L) for alpha, B, name, o, K_max, L in grid]
    if any(_agrees(got, inputs, fn, exact) for fn in [ref.goodput, *ACCEPTED]):
        return
    for hint, mistake in BEST_MISTAKES:
        if [mistake(*args) for args in inputs] == got:
            fail(f"best_K: {hint}")
    # best_K calls the learner's own goodput: a goodput mistake shows up here too, alone or with one of best_K's
    for hint, wrong in GOODPUT_MISTAKES:
        if _agrees(got, inputs, wrong, exact) or _agrees(got, inputs, wrong, exact, rows=1):
            fail(f"best_K picks the best K of your goodput, which has a mistake (fix goodput first): {hint}")
    want = [min(_near_best(_best(ref.goodput, *args), True)) for args in inputs]
    alpha, B, name, o, K_max, L = next(x for x, g, w in zip(grid, got, want) if g != w)
    fail(f"best_K({alpha:g}, B = {B}, {name} passes, overhead {o:g}, K_max = {K_max}, context {L}) is wrong: the K "
         "in 0..K_max with the highest goodput at this batch and context, the smallest on ties (best_K uses your "
         "goodput: make goodput pass its check first).", generic=True)


# ---------------------------------------------------------------- the contract

CONTRACT = declare(
    globals(),
    Exercise("batch_accept", "check_batch_accept"),
    Exercise("batched_generate", "check_batched_generate"),
    Exercise("goodput", "check_goodput"),
    Exercise("best_K", "check_best_K"),
)
