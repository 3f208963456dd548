"""Hidden-test checkers for 04_torch_verifier: autoregressive_generate, speculative_generate.

- Greedy (temperature 0) on the shipped pair: the speculative output must equal the target's
  greedy output token for token, for several prompts and K = 1..8. Deterministic.
- Sampling on a toy bigram pair whose distributions are known exactly: the first two emitted
  tokens must follow the target's joint distribution at temperatures 1 and 0.5. Exact binomial
  tests, 16 bins per temperature, total level 2e-7 (union bound), so a correct answer fails
  with probability below 2e-7. Judged by distribution, never by the random stream.
- Stats: rounds, proposed and accepted add up.
"""
from __future__ import annotations

import numpy as np
import torch

from solutions.checks._common import SEED, call, counts_match_pmf, fail
from specdec.model import encode, load
from specdec.toy import toy_pair

PROMPTS = ["import os\n\n\ndef walk(", "class Stack:\n    def push(self, item):\n        ", "    return {"]
N_GREEDY = 24
N_SAMPLES = 3_000
LEVEL = 2e-7
_PAIR = {}


def _pair():
    if not _PAIR:
        _PAIR["target"], _PAIR["draft"] = load("target", "cpu"), load("draft", "cpu")
    return _PAIR["target"], _PAIR["draft"]


@torch.no_grad()
def greedy_reference(model, prompt, n):
    """Greedy decoding with the plain model(ids) call: no cache involved."""
    ids = prompt[None]
    for _ in range(n):
        ids = torch.cat([ids, model(ids)[:, -1:].argmax(-1)], dim=1)
    return ids[0, len(prompt):]


def _tokens(out, label, n):
    __tracebackhide__ = True
    if not isinstance(out, torch.Tensor):
        fail(f"{label} must return a LongTensor of new tokens, not {type(out).__name__}.")
    out = out.reshape(-1)
    if out.shape != (n,):
        fail(f"{label} must return exactly max_new_tokens = {n} new tokens (not the prompt), got shape "
             f"{tuple(out.shape)}.")
    return [int(t) for t in out]


def _spec(fn, *args, label="speculative_generate", n=None, **kwargs):
    __tracebackhide__ = True
    out = call(fn, *args, **kwargs)
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
        fail(f"{label} must return (tokens, stats), stats a dict with rounds, proposed and accepted.")
    tokens, stats = out
    for key in ("rounds", "proposed", "accepted"):
        if key not in stats:
            fail(f"{label}: the stats dict has no {key!r} entry.")
    return _tokens(tokens, label, n), {k: int(stats[k]) for k in ("rounds", "proposed", "accepted")}


# ---------------------------------------------------------------- autoregressive_generate

def check_autoregressive_generate(autoregressive_generate) -> None:
    """Greedy equals argmax decoding with the plain call; sampling follows the toy target."""
    __tracebackhide__ = True
    target, _ = _pair()
    for prompt in PROMPTS[:2]:
        ids = encode(prompt)
        got = _tokens(call(autoregressive_generate, target, ids.clone(), N_GREEDY, temperature=0),
                      "autoregressive_generate", N_GREEDY)
        if got != greedy_reference(target, ids, N_GREEDY).tolist():
            fail("autoregressive_generate(..., temperature=0) must pick the argmax of the LAST row of "
                 "model(ids) at every step (row t predicts token t+1).")
    toy_target, _ = toy_pair()
    for T in (1.0, 0.5):
        gen = torch.Generator().manual_seed(SEED)
        pairs = [tuple(_tokens(call(autoregressive_generate, toy_target, torch.tensor([0]), 2, temperature=T,
                                    generator=gen), "autoregressive_generate", 2)) for _ in range(N_SAMPLES)]
        if not _joint_ok(pairs, _joint(toy_target.probs(T)), LEVEL / 2):
            fail(f"autoregressive_generate at temperature {T}: the tokens do not follow "
                 "softmax(logits / temperature) of the last row.")


# ---------------------------------------------------------------- speculative_generate: greedy

def check_speculative_greedy(speculative_generate) -> None:
    """temperature=0: output == the target's greedy output, several prompts, K = 1..8."""
    __tracebackhide__ = True
    target, draft = _pair()
    for prompt in PROMPTS:
        ids = encode(prompt)
        want = greedy_reference(target, ids, N_GREEDY).tolist()
        for K in (1, 2, 3, 5, 8):
            label = f"speculative_generate(target, draft, prompt, {N_GREEDY}, K={K}, temperature=0)"
            got, stats = _spec(speculative_generate, target, draft, ids.clone(), N_GREEDY, K, temperature=0,
                               label=label, n=N_GREEDY)
            if got == want:
                _check_stats(stats, K, N_GREEDY, label)
                continue
            if stats["accepted"] == stats["proposed"]:
                fail(f"{label} accepts every draft token: a draft must be rejected where it differs from "
                     "the target's argmax (min(1, p/q) is 0 there).")
            if got == greedy_reference(draft, ids, N_GREEDY).tolist():
                fail(f"{label} returns the DRAFT's greedy output: the target must verify the drafts.")
            fail(f"{label} differs from the target's own greedy output; with one-hot p and q, keep drafts "
                 "while they equal the target's argmax, then emit the target's argmax.")
    # Draft == target: every draft is accepted, so every round must emit K+1 tokens (bonus).
    for K in (2, 4):
        label = f"speculative_generate(target, target, prompt, {N_GREEDY}, K={K}, temperature=0)"
        got, stats = _spec(speculative_generate, target, target, encode(PROMPTS[0]), N_GREEDY, K,
                           temperature=0, label=label, n=N_GREEDY)
        if stats["rounds"] > -(-N_GREEDY // (K + 1)):
            fail(f"{label} needed {stats['rounds']} rounds: when all K drafts are accepted the round must "
                 "also emit the bonus token from the target's last row, K+1 tokens per round.")


def _check_stats(stats, K, n, label):
    __tracebackhide__ = True
    if stats["proposed"] != K * stats["rounds"]:
        fail(f"{label}: stats['proposed'] should be K * rounds (K drafts per round).")
    if not 0 <= stats["accepted"] <= stats["proposed"]:
        fail(f"{label}: stats['accepted'] must be between 0 and proposed.")
    emitted = stats["accepted"] + stats["rounds"]  # each round emits accepted + 1 (before the final cut)
    if not n <= emitted < n + K + 1:
        fail(f"{label}: rounds and accepted do not add up to the tokens emitted: each round emits its "
             "accepted drafts plus one target token (the correction, or the bonus token when all K are "
             "accepted).")


# ---------------------------------------------------------------- speculative_generate: sampling

def _joint(p_T: torch.Tensor, start=0) -> np.ndarray:
    """P(x1, x2) for two tokens from a bigram chain starting after token `start`."""
    p = p_T.double().numpy()
    return (p[start][:, None] * p).reshape(-1)


def _joint_ok(pairs, pmf, level) -> bool:
    codes = np.array([a * 4 + b for a, b in pairs])
    return counts_match_pmf(codes, np.arange(16), pmf, level)


def _first_token_mixture(p1, q_sample, q_test, resample) -> np.ndarray:
    """First-token distribution when drafts come from q_sample, the test uses q_test and a rejection
    samples from `resample` (a function of p1 and q_test)."""
    accept = q_sample * np.minimum(1.0, p1 / q_test)
    return accept + (1 - accept.sum()) * resample(p1, q_test)


def check_speculative_distribution(speculative_generate) -> None:
    """First two emitted tokens ~ the target's joint distribution (toy pair, T = 1 and 0.5, K = 2)."""
    __tracebackhide__ = True
    toy_target, toy_draft = toy_pair()
    for T in (1.0, 0.5):
        gen = torch.Generator().manual_seed(SEED)
        label = f"speculative_generate at temperature {T}"
        pairs = []
        for _ in range(N_SAMPLES):
            tokens, _ = _spec(speculative_generate, toy_target, toy_draft, torch.tensor([0]), 2, 2,
                              temperature=T, generator=gen, label=label, n=2)
            pairs.append(tuple(tokens))
        if len(set(pairs)) == 1:
            fail(f"{label} returned the same tokens {N_SAMPLES} times: draw every random number from the "
                 "generator argument and never reseed inside the loop (a reseed makes every draw identical).")
        if _joint_ok(pairs, _joint(toy_target.probs(T)), LEVEL / 2):
            continue
        p1 = toy_target.probs(T)[0].double().numpy()
        q1 = toy_draft.probs(T)[0].double().numpy()
        q_raw = toy_draft.probs(1.0)[0].double().numpy()
        first = np.array([a for a, _ in pairs])
        residual = lambda p, q: np.maximum(p - q, 0) / np.maximum(p - q, 0).sum()  # noqa: E731
        wrong = {
            "after a rejection it samples from p; it must sample from the residual norm(max(p - q, 0)).":
                _first_token_mixture(p1, q1, q1, lambda p, q: p),
            "it accepts every draft token: accept x ~ q only with probability min(1, p[x] / q[x]).": q1,
        }
        if T != 1.0:
            wrong["the acceptance test uses q from the draft's RAW logits while the draft sampled from "
                  "temperature-scaled ones: apply the temperature to both p and q before the test."] = \
                _first_token_mixture(p1, q1, q_raw, residual)
        for hint, dist in wrong.items():
            if counts_match_pmf(first, np.arange(4), dist, 1e-3):
                fail(f"{label}: {hint}")
        fail(f"{label}: the first two tokens do not follow the target's distribution (draw x ~ q, accept "
             "with probability min(1, p[x]/q[x]), resample from the residual, add the bonus token).")
