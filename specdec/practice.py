"""Notebook 05's machinery: one cached speculative loop with pluggable proposers, and timers.

`speculate(target, proposer, prompt, n, K, ...)` is the verifier of notebook 04 with the
target's key/value cache (`specdec.model`): each round the proposer offers up to K tokens, one
target pass scores them, rejection sampling keeps an accepted prefix and adds the target's
correction or bonus token. The output distribution is the target's whatever the proposer does;
only the speed changes. Proposers:

- `DraftModel(draft)`: a small model, one pass per proposed token (notebook 04's draft);
- `PromptLookup(fn, n)`: n-gram lookup in the text so far, `fn` being the learner's
  `ngram_propose`; deterministic proposals (q is one-hot), no model at all;
- `Heads(heads)`: self-drafting heads on the target's own hidden state (`specdec.heads`).

A proposer returns (tokens, q) with q the (len, V) proposal distributions, or None for a
deterministic proposal. The stats count, per draft position i, how often a draft was tested
there (every earlier one accepted) and how often it was accepted, which is the position-wise
acceptance that notebook 05's `expected_tokens_positional` consumes; `vllm_counters(stats)`
renames the totals the way vLLM's metrics do.

Timers: `pass_costs` (uncached passes over k positions at several batch sizes: the shape of the
verification cost), `cached_verify_costs` (the cached pass over k new positions after a context,
batch 1: what `speculate` itself pays per round), `draft_cost` (c) and `compare` (end to end).
"""
from __future__ import annotations

import os
import statistics
import time
from typing import Callable

import torch

from specdec.model import TinyGPT, encode

# While a notebook is being graded (the grading sandbox sets COURSE_GRADING), timings only need
# to run, not to be precise: one repeat instead of several keeps a cohort's grading fast.
GRADING = bool(os.environ.get("COURSE_GRADING"))
MAX_ADAPTIVE_K = 16  # the cap of the adaptive schedule (Hugging Face caps it too, by max_length)


def _ids(tokens, device) -> torch.LongTensor:
    return torch.tensor([list(tokens)], device=device)


def _dist(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)


def _pick(probs: torch.Tensor, temperature: float, generator) -> int:
    if temperature == 0:
        return int(probs.argmax())
    return int(torch.multinomial(probs, 1, generator=generator))


class DraftModel:
    """A draft model with its own cache, kept in step with the committed sequence."""

    name = "draft model"

    def __init__(self, draft: TinyGPT):
        self.draft = draft

    def start(self, prompt: list[int]) -> None:
        self.cache, self.fed = self.draft.new_cache(), []

    def __call__(self, seq, K, hidden, temperature, generator):
        # roll the cache back to the longest prefix of what it saw that is still committed
        keep = 0
        while keep < min(len(self.fed), len(seq)) and self.fed[keep] == seq[keep]:
            keep += 1
        self.cache.rollback(keep)
        self.fed = list(seq[:keep])
        tokens, rows = [], []
        new = list(seq[keep:])
        for _ in range(K):
            logits = self.draft.extend(_ids(new, self.draft.device), self.cache)[0, -1]
            self.fed += new
            q = _dist(logits, temperature)
            tokens.append(_pick(q, temperature, generator))
            rows.append(q)
            new = [tokens[-1]]
        return tokens, (torch.stack(rows) if rows else None)


class PromptLookup:
    """Prompt lookup decoding with the learner's `ngram_propose` (notebook 05's rule: what followed the
    most recent earlier occurrence of the last n tokens; Hugging Face and vLLM take the longest key
    and its earliest occurrence instead)."""

    name = "prompt lookup"

    def __init__(self, propose: Callable, n: int = 3):
        self.propose, self.n = propose, n

    def start(self, prompt):
        pass

    def __call__(self, seq, K, hidden, temperature, generator):
        return [int(t) for t in self.propose(list(seq), K, self.n)][:K], None


class Heads:
    """Self-drafting heads: head k reads the target's hidden state and guesses k+2 tokens ahead."""

    name = "self-drafting heads"

    def __init__(self, heads, target: TinyGPT):
        self.heads, self.target = heads, target

    def start(self, prompt):
        pass

    def __call__(self, seq, K, hidden, temperature, generator):
        K = min(K, len(self.heads.blocks))
        rows = _dist(self.heads(hidden, self.target.head)[:K], temperature)
        return [_pick(q, temperature, generator) for q in rows], rows


@torch.no_grad()
def speculate(target: TinyGPT, proposer, prompt, n: int, K: int, temperature: float = 0.0,
              generator: torch.Generator | None = None, adapt: str | None = None):
    """Generate n tokens after `prompt` (1-D ids, at least 2 tokens); returns (tokens, stats).

    adapt=None keeps K fixed; adapt="hf" is Hugging Face's schedule for assisted generation:
    K += 2 after a round that accepted every draft, K -= 1 (at least 1) otherwise, capped at
    MAX_ADAPTIVE_K.
    stats: rounds, draft_rounds (rounds that proposed at least one draft), proposed, accepted,
    rejected, tested[i] and accepted_at[i] per draft position i, and K_used (the K of every round)."""
    device = target.device
    seq = [int(t) for t in prompt]
    assert len(seq) + n <= target.config.max_len, (
        f"prompt ({len(seq)}) + new tokens ({n}) exceed the model's {target.config.max_len}-token context")
    cache = target.new_cache()
    _, h = target.extend(_ids(seq[:-1], device), cache, hidden=True)
    hidden = h[0, -1]  # the state that predicted seq[-1]; heads read it to guess what follows
    proposer.start(seq)
    width = max(K, 1) if adapt is None else MAX_ADAPTIVE_K
    stats = dict(rounds=0, draft_rounds=0, proposed=0, accepted=0, rejected=0, tested=[0] * width,
                 accepted_at=[0] * width, K_used=[])
    while len(seq) - len(prompt) < n:
        drafts, q_rows = proposer(seq, K, hidden, temperature, generator)
        room = target.config.max_len - len(seq)  # the verify pass must fit the model's context
        if len(drafts) > room:
            drafts, q_rows = drafts[:room], (None if q_rows is None else q_rows[:room])
        k = len(drafts)
        logits, h = target.extend(_ids([seq[-1]] + drafts, device), cache, hidden=True)
        p_rows = _dist(logits[0], temperature)
        n_acc = 0
        for i, token in enumerate(drafts):
            stats["tested"][i] += 1
            p, q = float(p_rows[i, token]), (1.0 if q_rows is None else float(q_rows[i, token]))
            if temperature == 0:
                ok = p == 1.0
            else:
                ok = torch.rand((), generator=generator, device=device).item() < min(1.0, p / q)
            if not ok:
                break
            stats["accepted_at"][i] += 1
            n_acc += 1
        if n_acc < k:
            residual = p_rows[n_acc].clone()
            if q_rows is None:
                residual[drafts[n_acc]] = 0.0
            else:
                residual = (residual - q_rows[n_acc]).clamp(min=0)
            last = _pick(residual / residual.sum(), temperature, generator)
        else:
            last = _pick(p_rows[k], temperature, generator)
        seq += drafts[:n_acc] + [last]
        cache.rollback(len(seq) - 1)
        hidden = h[0, n_acc]
        stats["rounds"] += 1
        stats["draft_rounds"] += int(k > 0)
        stats["proposed"] += k
        stats["accepted"] += n_acc
        stats["rejected"] += int(n_acc < k)
        stats["K_used"].append(K)
        if adapt == "hf":
            K = min(width, K + 2) if (k and n_acc == k) else max(1, K - 1)
    return torch.tensor(seq[len(prompt):len(prompt) + n]), stats


def vllm_counters(stats: dict) -> dict:
    """The totals of a `speculate` run under vLLM's counter names: num_drafts (rounds that proposed
    at least one draft; vLLM records nothing for a round without drafts), num_draft_tokens
    (drafts proposed) and num_accepted_tokens (drafts accepted)."""
    return dict(num_drafts=stats["draft_rounds"], num_draft_tokens=stats["proposed"],
                num_accepted_tokens=stats["accepted"])


@torch.no_grad()
def plain(target: TinyGPT, prompt, n: int, temperature: float = 0.0, generator=None) -> torch.LongTensor:
    """Plain cached decoding with the same code around the model call: the speedup baseline."""
    cache = target.new_cache()
    logits = target.extend(_ids([int(t) for t in prompt], target.device), cache)[0, -1]
    out = []
    for _ in range(n):
        out.append(_pick(_dist(logits, temperature), temperature, generator))
        logits = target.extend(_ids(out[-1:], target.device), cache)[0, -1]
    return torch.tensor(out)


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t0, result


@torch.no_grad()
def pass_costs(target: TinyGPT, positions=range(1, 10), batches=(1,), repeats=9):
    """{(batch, k): time of one target call on `batch` sequences of k positions, divided by the
    time of the call on `batch` sequences of 1 position}: what verifying K+1 = k positions costs
    in units of a plain decoding step, at each batch size. Each shape keeps its fastest time over
    `repeats` rounds taken in rotating order (interference from other processes only adds time),
    and the costs are ratios of those minima."""
    ids = encode("class Config:\n    def __init__(self, path):\n        self.path = path\n" * 4).to(target.device)
    shapes = [(b, k) for b in batches for k in sorted(set(positions) | {1})]
    repeats = 1 if GRADING else repeats
    best = {s: float("inf") for s in shapes}
    for r in range(repeats):
        for b, k in shapes[r % len(shapes):] + shapes[:r % len(shapes)]:
            best[(b, k)] = min(best[(b, k)], timed(lambda: target(ids[None, :k].expand(b, -1)))[0])
    return {(b, k): best[(b, k)] / best[(b, 1)] for b, k in shapes}


@torch.no_grad()
def cached_verify_costs(target: TinyGPT, positions=range(1, 10), context: int = 120, repeats: int = 7) -> dict:
    """{k: time of one cached target pass over k new positions after `context` cached ones, divided
    by the same pass over 1 new position}: the verification cost the speculative loop pays for
    K+1 = k positions, in units of the plain decoding step it replaces (batch 1, one sequence, as
    in `speculate`). Fastest of `repeats` rounds taken in rotating order, as in `pass_costs`."""
    ids = encode("class Config:\n    def __init__(self, path):\n        self.path = path\n" * 4).to(target.device)
    ks = sorted(set(positions) | {1})
    assert context + max(ks) <= min(len(ids), target.config.max_len), "context too long for the sample text"
    cache = target.new_cache()
    target.extend(ids[None, :context], cache)
    best = {k: float("inf") for k in ks}
    for r in range(1 if GRADING else repeats):
        for k in ks[r % len(ks):] + ks[:r % len(ks)]:
            cache.rollback(context)  # every pass starts from the same cached context
            best[k] = min(best[k], timed(lambda: target.extend(ids[None, context:context + k], cache))[0])
    return {k: best[k] / best[1] for k in ks}


@torch.no_grad()
def draft_cost(target: TinyGPT, draft: TinyGPT, repeats: int = 20, context: int = 100) -> float:
    """c: time of one cached one-token draft pass / one cached one-token target pass (fastest of
    `repeats` interleaved timings each, after `context` cached positions)."""
    ids = encode("class Config:\n    def __init__(self, path):\n        self.path = path\n" * 4)[: context + 1]
    caches, best = {}, {}
    for model in (target, draft):  # fill each cache once; every timing rolls back to the same context
        caches[id(model)] = model.new_cache()
        model.extend(ids[None, :context].to(model.device), caches[id(model)])
    for model in (target, draft) * repeats:
        cache = caches[id(model)]
        cache.rollback(context)
        secs = timed(lambda: model.extend(ids[None, context:].to(model.device), cache))[0]
        best[id(model)] = min(best.get(id(model), float("inf")), secs)
    return best[id(draft)] / best[id(target)]


def compare(target: TinyGPT, proposers: dict, workloads: dict, n: int, K: int = 4, schedules: dict | None = None,
            temperature: float = 0.0, repeats: int = 3) -> list[dict]:
    """Speculative decoding with each proposer (and each schedule, {name: dict(K=..., adapt=...)})
    on each workload {name: prompt ids}, timed side by side with plain cached decoding of the same
    target: fastest of `repeats` runs each. Rows: workload, proposer, schedule, alpha (accepted /
    tested drafts), tokens_per_round, mean_K, speedup, and stats (the counters of `speculate`, from
    the last run; at temperature 0 every run gives the same)."""
    schedules = schedules or {f"K={K}": dict(K=K)}
    repeats = 1 if GRADING else repeats
    rows = []
    for wname, prompt in workloads.items():
        for pname, proposer in proposers.items():
            for sname, kwargs in schedules.items():
                t_plain = t_spec = float("inf")
                for r in range(repeats):
                    gen = torch.Generator(device=target.device).manual_seed(r)
                    t_plain = min(t_plain, timed(lambda: plain(target, prompt, n, temperature, gen))[0])
                    gen = torch.Generator(device=target.device).manual_seed(r)
                    secs, (_, st) = timed(lambda: speculate(target, proposer, prompt, n, temperature=temperature,
                                                            generator=gen, **kwargs))
                    t_spec = min(t_spec, secs)
                tested = st["accepted"] + st["rejected"]
                rows.append(dict(workload=wname, proposer=pname, schedule=sname,
                                 alpha=st["accepted"] / tested if tested else float("nan"),
                                 tokens_per_round=(st["accepted"] + st["rounds"]) / st["rounds"],
                                 mean_K=statistics.fmean(st["K_used"]), speedup=t_plain / t_spec, stats=st))
    return rows


@torch.no_grad()
def head_agreement(target: TinyGPT, heads, prompt, n: int) -> list[float]:
    """Offline, unconditional accuracy of each self-drafting head: on the target's own greedy
    continuation of `prompt` (n tokens), the fraction of positions t where head k's argmax on
    the hidden state h_t equals the token k+1 places after the one h_t predicts."""
    seq = torch.cat([prompt.to(target.device), plain(target, prompt, n).to(target.device)])
    _, h = target._run(seq[None], hidden=True)
    guesses = heads(h[0], target.head).argmax(-1)  # (T, n_heads)
    start = len(prompt) - 1  # from the state that predicted the first new token on
    out = []
    for k in range(guesses.shape[1]):
        offset = k + 2  # head k (0-based) at position t guesses token t + k + 2
        rows = range(start, len(seq) - offset)
        out.append(float(sum(int(guesses[t, k]) == int(seq[t + offset]) for t in rows) / len(rows)))
    return out
