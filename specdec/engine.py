"""The course's one speculative decoding engine: the target's KV cache, pluggable proposers,
a vectorised acceptance step and a greedy fast path. Notebook 05, `make bench` and the tests use it.

Letters as everywhere in the course: p is the TARGET distribution, q the proposal (DRAFT) one.

`speculate(target, proposer, prompt, n, K)`: each round the proposer offers up to K tokens, one
cached target pass scores them (K+1 rows), `accept` keeps the accepted prefix and adds the
target's correction or bonus token, and the cache rolls back to what was kept. The output
distribution is the target's whatever the proposer does; only the speed changes.
`plain(target, prompt, n)` is cached plain decoding with the same sampling code: the speedup baseline.

Proposers (called as proposer(seq, K, hidden, temperature, generator) -> (drafts (k,) tokens, q (k, V) or None),
after proposer.start(prompt); `needs_hidden` asks the engine for the target's hidden states):
- `DraftModel(draft)`: a small model with its own cache, one pass per proposed token;
- `PromptLookup(fn, n)`: the tokens that followed an earlier occurrence of the latest n-gram,
  `fn(context, K, n)` being the caller's proposal function (notebook 05's learner writes it);
- `Heads(heads, target)`: self-drafting heads reading the target's own hidden state (`specdec.heads`).
q = None means a deterministic proposal (q one-hot on the proposed token), as every proposal is
at temperature 0: greedy rounds then compare argmaxes and never build a distribution.

Cache bookkeeping, with S the committed sequence: the target cache holds S[:-1]; a round feeds
[S[-1], d_1..d_k] and gets p_1..p_{k+1}, then rolls back to len(S) - 1 of the new S.

What it leaves out: batches (one sequence), trees of drafts, and models without the cache API
(`new_cache`, `extend`): notebook 04's learners write a verifier on the plain model call.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

MAX_ADAPTIVE_K = 16  # the cap of the adaptive schedule (Hugging Face caps it too, by max_length)


def _ids(tokens, device) -> torch.LongTensor:
    return torch.as_tensor(tokens, dtype=torch.long, device=device).view(1, -1)


def probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Last-axis logits -> softmax(logits / T); temperature 0: one-hot on the argmax."""
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)


def pick(logits: torch.Tensor, temperature: float, generator=None) -> torch.Tensor:
    """One token per row of logits (..., V) -> (...,): the argmax at temperature 0, else a draw."""
    if temperature == 0:
        return logits.argmax(-1)
    probs = probabilities(logits, temperature)
    return torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=generator).view(probs.shape[:-1])


def accept(p_logits: torch.Tensor, drafts: torch.Tensor, q_draft: torch.Tensor | None, temperature: float,
           generator=None) -> torch.Tensor:
    """One round's verification, decided on the logits' device: a LongTensor (2,) holding the
    number of accepted drafts n and the token emitted after them (nothing is read back here).

    p_logits (k+1, V): the target's logits at the k draft positions and the bonus position;
    drafts (k,) the proposed tokens; q_draft (k, V) the distributions they were drawn from, or
    None for a deterministic proposal. Greedy: drafts are kept while they equal the target's
    argmax, and the target's argmax follows. Sampling: one uniform per position, draft i is
    accepted when u_i < p_i(d_i) / q_i(d_i); the first failure is the rejection, and the token
    after the accepted prefix is drawn from norm(max(p - q, 0)) there, or from p_{k+1} (the
    bonus token) when every draft was accepted: one draw from the row that applies, chosen on
    the device. (With no drafts this is one plain step: n = 0 and a draw from p_1; `speculate`
    runs such a round with plain decoding's own code.)"""
    k = drafts.shape[0]
    if temperature == 0:
        best = p_logits.argmax(-1)
        miss = torch.cat([drafts != best[:k], best.new_ones(1, dtype=torch.bool)])
        n = miss.int().argmax()  # argmax finds the first True: the first mismatch, or k
        return torch.stack([n, best[n]])
    p_target = torch.softmax(p_logits / temperature, dim=-1)
    if q_draft is None:
        q_draft = F.one_hot(drafts, p_target.shape[-1]).to(p_target.dtype)
    rows = torch.arange(k, device=drafts.device)
    u = torch.rand(k, generator=generator, device=p_target.device)
    # u < p/q without dividing: q(d) > 0 for every drafted token d
    rejected = u * q_draft[rows, drafts] >= p_target[rows, drafts]
    n = torch.cat([rejected, rejected.new_ones(1)]).int().argmax()
    at = n.clamp(max=k - 1)
    residual = (p_target[at] - q_draft[at]).clamp(min=0)
    total = residual.sum()
    # a rejection needs p(d) < q(d), so some mass is left over; rounding may leave none when p ~ q
    residual = torch.where(total > 0, residual / total.clamp(min=torch.finfo(total.dtype).tiny), p_target[at])
    row = torch.where(n == k, p_target[k], residual)
    return torch.stack([n, torch.multinomial(row, 1, generator=generator)[0]])


class DraftModel:
    """A draft model with its own cache, kept in step with the committed sequence. After each round
    the engine reports how many drafts were accepted (`update`), so the draft knows which of its
    cached positions are still committed text without reading its drafts back to the host."""

    name = "draft model"
    needs_hidden = False

    def __init__(self, draft):
        self.draft = draft

    def start(self, prompt: list[int]) -> None:
        self.cache, self.valid, self.base, self.k = self.draft.new_cache(), 0, 0, 0

    def __call__(self, seq, K, hidden, temperature, generator):
        device = self.draft.device
        if self.k:  # no update() since the last drafts: trust only what was committed then
            self.valid, self.k = min(self.base, len(seq)), 0
        if K <= 0:
            return torch.zeros(0, dtype=torch.long, device=device), None
        self.cache.rollback(self.valid)
        new = _ids(seq[self.valid:], device)
        tokens, rows = [], []
        for _ in range(K):
            logits = self.draft.extend(new, self.cache)[0, -1]
            if temperature == 0:
                token = logits.argmax(-1, keepdim=True)
            else:
                rows.append(torch.softmax(logits / temperature, dim=-1))
                token = torch.multinomial(rows[-1], 1, generator=generator)
            tokens.append(token)
            new = token.view(1, 1)
        self.base, self.k = len(seq), K  # the cache now holds seq and the first K - 1 drafts
        return torch.cat(tokens), (torch.stack(rows) if rows else None)

    def update(self, accepted: int) -> None:
        """The engine kept `accepted` of the last drafts: those the draft was fed are still valid."""
        if self.k:
            self.valid, self.k = self.base + min(accepted, self.k - 1), 0


class PromptLookup:
    """Prompt lookup decoding: propose what followed an earlier occurrence of the latest n-gram.
    `propose(context, K, n) -> list of tokens` is the lookup itself, supplied by the caller."""

    name = "prompt lookup"
    needs_hidden = False

    def __init__(self, propose: Callable, n: int = 3):
        self.propose, self.n = propose, n

    def start(self, prompt):
        pass

    def __call__(self, seq, K, hidden, temperature, generator):
        return [int(t) for t in self.propose(list(seq), K, self.n)][:K], None


class Heads:
    """Self-drafting heads: head k reads the target's hidden state and guesses k+2 tokens ahead."""

    name = "self-drafting heads"
    needs_hidden = True

    def __init__(self, heads, target):
        self.heads, self.target = heads, target

    def start(self, prompt):
        pass

    def __call__(self, seq, K, hidden, temperature, generator):
        if K <= 0:
            return [], None
        logits = self.heads(hidden, self.target.head)[:min(K, len(self.heads.blocks))]
        if temperature == 0:
            return logits.argmax(-1), None
        q_draft = torch.softmax(logits / temperature, dim=-1)
        return torch.multinomial(q_draft, 1, generator=generator).view(-1), q_draft


def _stats(width: int, ks: list[int], ns: list[int], Ks: list[int]) -> dict:
    """The run's counters from each round's drafts k and accepted n, counted once at the end."""
    tested, accepted_at = [0] * width, [0] * width
    for k, n in zip(ks, ns):
        for i in range(min(n + 1, k)):
            tested[i] += 1
        for i in range(n):
            accepted_at[i] += 1
    return dict(rounds=len(ks), draft_rounds=sum(k > 0 for k in ks), proposed=sum(ks), accepted=sum(ns),
                rejected=sum(n < k for k, n in zip(ks, ns)), tested=tested, accepted_at=accepted_at, K_used=Ks)


@torch.no_grad()
def speculate(target, proposer, prompt, n: int, K: int, temperature: float = 0.0,
              generator: torch.Generator | None = None, adapt: str | None = None):
    """Generate n tokens after `prompt` (1-D ids, at least 2 tokens); returns (tokens (n,), stats).

    A round does what it must and no more: the proposal, one target pass, the acceptance decided
    on the device (`accept`), and ONE read back to the host (the accepted count, the drafts and the
    emitted token, together); the next round's first token stays on the device. The counters are
    counted from two numbers per round, after the loop.

    adapt=None keeps K fixed; adapt="hf" is the "heuristic" schedule of Hugging Face's assisted
    generation (opt-in since Transformers 4.45, whose default stops drafting on the draft's
    confidence instead): K += 2 after a round that accepted every draft, K -= 1 (at least 1)
    otherwise, capped at MAX_ADAPTIVE_K.
    stats: rounds, draft_rounds (rounds that proposed at least one draft), proposed, accepted,
    rejected (rounds that ended with a rejection), tested[i] and accepted_at[i] per draft
    position i (a draft is tested when every earlier one was accepted), and K_used (each round's K)."""
    device = target.device
    seq = [int(t) for t in prompt]
    assert len(seq) >= 2, "the prompt needs at least 2 tokens"
    assert len(seq) + n <= target.config.max_len, (
        f"prompt ({len(seq)}) + new tokens ({n}) exceed the model's {target.config.max_len}-token context")
    cache = target.new_cache()
    hidden = None
    if proposer.needs_hidden:
        _, h = target.extend(_ids(seq[:-1], device), cache, hidden=True)
        hidden = h[0, -1]  # the state that predicted seq[-1]; heads read it to guess what follows
    else:
        target.extend(_ids(seq[:-1], device), cache)
    proposer.start(seq)
    update = getattr(proposer, "update", None)
    width = max(K, 1) if adapt is None else MAX_ADAPTIVE_K
    last = _ids(seq[-1:], device)[0]  # the committed token the target has not seen yet, on the device
    ks, ns, Ks = [], [], []
    goal = len(seq) + n
    while len(seq) < goal:
        drafts, q_draft = proposer(seq, K, hidden, temperature, generator) if K > 0 else (None, None)
        if drafts is None or len(drafts) == 0:  # no drafts: a plain step, with plain decoding's own code
            fed = last.view(1, 1)
            p_logits, h = target.extend(fed, cache, hidden=True) if proposer.needs_hidden else (target.extend(fed, cache), None)
            last = pick(p_logits[0, 0], temperature, generator).view(1)
            k = n_acc = 0
            seq.append(last.item())  # the round's one read back to the host
            cache.rollback(len(seq) - 1)
        else:
            if not isinstance(drafts, torch.Tensor) or drafts.device != last.device:
                drafts = torch.as_tensor(drafts, dtype=torch.long, device=device)
            drafts = drafts.view(-1)
            room = target.config.max_len - len(seq)  # the verify pass must fit the model's context
            if drafts.shape[0] > room:
                drafts, q_draft = drafts[:room], (None if q_draft is None else q_draft[:room])
            k = drafts.shape[0]
            fed = torch.cat([last, drafts]).view(1, -1)
            if proposer.needs_hidden:
                p_logits, h = target.extend(fed, cache, hidden=True)
            else:
                p_logits = target.extend(fed, cache)
            decided = accept(p_logits[0], drafts, q_draft, temperature, generator)
            got = torch.cat([decided, drafts]).tolist()  # the round's one read back to the host
            n_acc = got[0]
            assert 0 <= n_acc <= k  # a round emits between 1 and k+1 tokens
            seq += got[2:2 + n_acc]
            seq.append(got[1])
            cache.rollback(len(seq) - 1)
            last = decided[1:]
        if update is not None:
            update(n_acc)
        if proposer.needs_hidden:
            hidden = h[0, n_acc]
        ks.append(k)
        ns.append(n_acc)
        Ks.append(K)
        if adapt == "hf":
            K = min(width, K + 2) if (k and n_acc == k) else max(1, K - 1)
    return torch.tensor(seq[len(prompt):len(prompt) + n]), _stats(width, ks, ns, Ks)


@torch.no_grad()
def plain(target, prompt, n: int, temperature: float = 0.0, generator=None) -> torch.LongTensor:
    """Plain cached decoding, one target pass per token, with the engine's sampling code: the speedup baseline."""
    cache = target.new_cache()
    logits = target.extend(_ids([int(t) for t in prompt], target.device), cache)[0, -1]
    out = []
    for i in range(n):
        token = pick(logits, temperature, generator).view(1, 1)
        out.append(token)
        if i < n - 1:  # the last token needs no pass after it
            logits = target.extend(token, cache)[0, -1]
    return torch.cat(out).view(-1).cpu() if out else torch.zeros(0, dtype=torch.long)
