"""Hidden-test checkers for 04_torch_verifier: autoregressive_generate, speculative_generate,
speculative_generate_cached.

Every model a checker hands to learner code lives on `default_device()`, the device notebook
04's setup cell calls DEVICE (CUDA when present), and prompts are CPU tensors as in the
notebook's own tests: `specdec.toy.small_pair` (the shipped draft as the target and a noisy copy
of it as the draft: a real transformer pair, a 36th of the shipped target's cost per pass on the
2-core course machine, which the greedy checks decode on; the notebook's visible tests run the
shipped pair itself), and toy
bigram pairs (`specdec.toy`) that are `nn.Module`s with a parameter, so every usual way of
finding a model's device works on all of them.

One checker per idea (one hidden test cell each), each with its own false-failure budget; a
correct answer fails any of them with probability below 1e-6 in all (2e-7 autoregressive
sampling + 2e-7 speculative distribution + 2e-7 bonus token + 2 x 1e-9 reproducibility, the
rest below 1e-30: 6.1e-7):

- autoregressive_generate: greedy equals argmax decoding on the small pair's target
  (deterministic); two sampled tokens follow softmax(logits / T) on the toy target, T = 1 and 0.5
  (exact binomial tests, 1e-7 per temperature), N_SAMPLES = 400 runs each: the catalogued
  temperature mistake (no temperature: TV 0.33 from the law at T = 0.5) passes with probability
  below 3e-16, a temperature applied twice (TV 0.22) below 9e-16 (exact binomial arithmetic on the
  toy target, the same test: for each bin, the probability under the mistake's law that its count
  lands where the test accepts, the smallest over the bins; 1,000 runs gave 1e-57 and 1e-65).
- autoregressive_generate, speculative_generate: the same seeded generator gives the same tokens
  while torch's, numpy's and Python's global generators are reset differently; another seed
  gives other tokens (a correct answer repeats 32 sampled toy tokens with probability below 1e-9).
- speculative_generate, greedy: output equals the target's greedy output, 3 prompts, K = 1..8, on
  the small pair (varied text on each prompt; the draft agrees with the target 62-81 % of the way,
  so rounds accept and reject; tests/test_checkers.py checks both, and the margins).
- speculative_generate, stats: at temperature 0 the counters equal the ones the greedy run must
  produce (computed from where the draft's argmax agrees with the target's; on these prompts
  the smallest top-2 logit margin along the way is 0.03 for the target, 0.05 for the draft, far
  above float32 rounding), for K drafts per round or a proposal capped at the tokens still needed
  (each STATS_CASES K makes the capped last round differ); at temperature 1 they add up.
- speculative_generate, distribution: the first two tokens (K = 2, so never a bonus token) follow
  the target's joint law at T = 1 and 0.5 (exact tests, 1e-7 each whatever the number of runs):
  acceptance and residual. Runs (DIST_RUNS), sized by what a wrong answer needs to fail (exact
  multinomial arithmetic on the toy pair): 3,000 at T = 0.5, where the subtlest named mistake, q
  taken from the draft's raw logits (TV 0.10 on the joint law), still passes with probability 8e-5
  (3 % with 2,000 runs, so no fewer); 500 at T = 1, where no temperature mistake exists (raw and
  tempered logits agree) and accepting every draft, a q - p residual or min(1, q/p) as the test
  (TV 0.50) pass with probability below 1e-86, resampling from p (TV 0.18) below 2e-3 there, and
  every one of them is tested at T = 0.5 as well, where resampling from p passes below 1e-41
  (bounds computed as for the autoregressive check above; 1,000 runs at T = 1 gave 1e-11 for it). Each run is one
  call, of about 1.6 rounds: 3,500 calls where there were 6,000, which matters on a GPU, where
  every pass of a call waits for the device.
- speculative_generate, bonus token: with draft == target every round emits K+1 tokens; on a
  close toy pair, runs that accepted all K drafts (stats['rounds'] == 1) end with a token drawn
  from p_{K+1} at temperature T (K = 1 at T = 1, K = 2 at T = 0.5; exact tests, 1e-7 each).
- speculative_generate_cached: the same greedy (K = 0..8), stats, distribution, bonus-token (close
  pair only) and reproducibility checks on toy pairs with the cache API (the same budgets: 6.1e-7 in
  all), and a feeding check (deterministic): greedy runs on `specdec.toy.text_pair`, whose models
  record what they are fed, judged position by position (`feeding_problem`). Named there: a plain
  model(ids) call; the target's rollback one position short (a rejected draft's entry kept) or one
  too far (the last accepted token dropped); the draft never rolled back; the draft never fed the
  correction or bonus token; tokens fed again (a cache rebuilt each round). A counter mismatch at
  T = 0 that a feeding mistake explains costs the feeding cell, not the stats cell.
  What still passes: a loop that feeds each model correctly on text_pair's runs (K = 1, 2, 4, 24
  tokens) but not on others (say only for K > 4), when its output on the shipped pair is also right;
  a kernel that forges the toy models' records (the records come from the learner's kernel; this
  only moves the feeding cell's 2 points, and preflight flags patched course helpers).
  What could fail a correct answer: none found; a loop that re-feeds up to two tokens a round
  (a harmless extra rollback) is allowed by the re-feeding threshold (prompt + 2 per round).
Distributions are judged by statistical tests, never by the random stream.
"""
from __future__ import annotations

import random

import numpy as np
import torch
from scipy import stats as scipy_stats

from solutions.checks._common import (
    SEED, CheckFailure, Exercise, Heavy, call, call_many, counts_match_pmf, declare, fail,
)
from specdec.model import default_device, encode, model_device
from specdec.toy import TEXT_TOKENS, small_pair, text_pair, toy_pair

PROMPTS = ["        self.", "    @property\n    def ", "    if not isinstance("]  # varied greedy text on _pair()
N_GREEDY = 24
K_MAX = 8
N_SAMPLES = 400         # runs per temperature in autoregressive_generate's distribution test (docstring)
DIST_RUNS = {1.0: 500, 0.5: 3_000}  # runs per temperature in the speculative distribution tests (docstring)
N_BONUS = 1_000         # runs per configuration in the bonus-token tests
N_REPRO = 32            # sampled tokens compared in the reproducibility tests
_CACHE: dict = {}


def _pair():
    """The pair the greedy checks decode on: `specdec.toy.small_pair` (the shipped draft as the
    target, a noisy copy as its draft): a real transformer pair, as the learner's loops meet in the
    notebook, whose passes cost a 36th of the shipped target's on the 2-core course machine (the
    notebook's own tests run the shipped pair)."""
    if "pair" not in _CACHE:
        _CACHE["pair"] = small_pair(default_device())
    return _CACHE["pair"]


def _toys(close: bool = False, cache: bool = False):
    return toy_pair(default_device(), close=close, cache=cache)


@torch.no_grad()
def greedy_reference(model, prompt, n):
    """Greedy decoding with the plain model(ids) call (no cache): n new tokens, a CPU LongTensor."""
    ids = prompt[None].to(model_device(model))
    for _ in range(n):
        ids = torch.cat([ids, model(ids)[:, -1:].argmax(-1)], dim=1)
    return ids[0, len(prompt):].cpu()


@torch.no_grad()
def greedy_cached(model, prompt, n):
    """greedy_reference's tokens through the model's KV cache: one pass per token instead of one
    over the whole sequence. The two agree on the small pair's target for PROMPTS, whose smallest
    top-2 logit margins along the way (0.03, 0.04, 0.12) are far above float32 rounding
    (tests/test_checkers.py checks both on the CPU; not yet run on a GPU)."""
    cache, out = model.new_cache(), []
    logits = model.extend(prompt[None].to(model_device(model)), cache)
    for _ in range(n):
        out.append(int(logits[0, -1].argmax()))
        if len(out) < n:
            logits = model.extend(torch.tensor([[out[-1]]], device=model_device(model)), cache)
    return torch.tensor(out, dtype=torch.long)


def _want(prompt: str, n: int = N_GREEDY) -> list[int]:
    """The target's greedy continuation of `prompt`, N_GREEDY + K_MAX tokens long (cached)."""
    if ("want", prompt) not in _CACHE:
        _CACHE[("want", prompt)] = greedy_cached(_pair()[0], encode(prompt), N_GREEDY + K_MAX).tolist()
    return _CACHE[("want", prompt)][:n]


# ---------------------------------------------------------------- reading what the learner returned

def _tokens(out, label, n, strict=True):
    """The learner's new tokens as a list of ints. strict: also insist on a LongTensor (the greedy
    checks do; the statistical ones accept anything that holds n integer token ids, so that a
    wrong return type costs the points of one cell, not of every cell)."""
    __tracebackhide__ = True
    if strict and not isinstance(out, torch.Tensor):
        fail(f"{label} must return a LongTensor of new tokens, not {type(out).__name__}.")
    if strict and out.dtype != torch.long:
        fail(f"{label} returned a tensor of dtype {out.dtype}: return token ids as a LongTensor (torch.long).")
    try:
        values = torch.as_tensor(out).reshape(-1) if not isinstance(out, torch.Tensor) else out.reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        fail(f"{label} must return a LongTensor of new tokens, not {type(out).__name__}.")
    if values.shape != (n,):
        fail(f"{label} must return exactly max_new_tokens = {n} new tokens (not the prompt), got shape "
             f"{tuple(values.shape)}.")
    tokens = [float(t) for t in values.detach().cpu()]
    if any(t != int(t) for t in tokens):
        fail(f"{label} returned non-integer token ids: return token ids as a LongTensor (torch.long).")
    return [int(t) for t in tokens]


def _spec(fn, *args, label="speculative_generate", n=None, strict=False, **kwargs):
    __tracebackhide__ = True
    return _spec_out(call(fn, *args, **kwargs), label, n, strict)


def _spec_runs(fn, runs: int, target, draft, prompt, n, K, label, **kwargs):
    """`runs` calls speculative_generate(target, draft, prompt, n, K, **kwargs) in turn (one
    generator, advancing), each on its own copy of the prompt: [(tokens, stats), ...]."""
    __tracebackhide__ = True
    outs = call_many(fn, [((target, draft, prompt.clone(), n, K), kwargs) for _ in range(runs)])
    return [_spec_out(out, label, n, False) for out in outs]


def _spec_out(out, label, n, strict):
    __tracebackhide__ = True
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
        fail(f"{label} must return (tokens, stats), stats a dict with rounds, proposed and accepted.")
    tokens, stats = out
    counters = {}
    for key in ("rounds", "proposed", "accepted"):
        if key not in stats:
            fail(f"{label}: the stats dict has no {key!r} entry.")
        try:
            counters[key] = int(stats[key])
        except (TypeError, ValueError, RuntimeError):
            fail(f"{label}: stats[{key!r}] must be an int, not {type(stats[key]).__name__}.")
        if counters[key] != stats[key]:
            fail(f"{label}: stats[{key!r}] must be a whole number of tokens or rounds.")
    return _tokens(tokens, label, n, strict=strict), counters


# ---------------------------------------------------------------- autoregressive_generate

def check_autoregressive_generate(autoregressive_generate) -> None:
    """Greedy equals argmax decoding with the plain call; sampling follows the toy target."""
    __tracebackhide__ = True
    for prompt in PROMPTS[:2]:
        label = f"autoregressive_generate(target, prompt, {N_GREEDY}, temperature=0)"
        got = _tokens(call(autoregressive_generate, _pair()[0], encode(prompt), N_GREEDY, temperature=0),
                      label, N_GREEDY)
        if got != _want(prompt):
            fail("autoregressive_generate(..., temperature=0) must pick the argmax of the LAST row of "
                 "model(ids) at every step (row t predicts token t+1).")
    toy_target, _ = _toys()
    for T in (1.0, 0.5):
        # Exact binomial tests on the 16 pairs (x1, x2), N_SAMPLES runs: false failure below 1e-7 per T.
        gen = torch.Generator().manual_seed(SEED)
        label = f"autoregressive_generate at temperature {T}"
        outs = call_many(autoregressive_generate, [((toy_target, torch.tensor([0]), 2), dict(temperature=T, generator=gen))
                                                   for _ in range(N_SAMPLES)])
        pairs = [tuple(_tokens(out, label, 2, strict=False)) for out in outs]
        if not _joint_ok(pairs, _joint(toy_target.probs(T)), 1e-7):
            fail(f"{label}: the tokens do not follow softmax(logits / temperature) of the last row.", generic=True)


# ---------------------------------------------------------------- reproducibility (both functions)

def _reproducible(run, label):
    """run(generator) -> tokens. Same seed, global generators reset differently: same tokens;
    another seed: other tokens. On the toy pair at T = 1 every token has a collision probability
    sum_x p(x)^2 <= 0.48, so a correct answer repeats 32 tokens under another seed with
    probability below 0.48^32 < 1e-10 (budget 1e-9)."""
    __tracebackhide__ = True
    saved = torch.get_rng_state(), np.random.get_state(), random.getstate()
    saved_cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    runs = []
    try:
        for global_seed, seed in ((1, SEED), (2, SEED), (3, SEED + 1)):
            torch.manual_seed(global_seed)  # seeds every device's global generator
            np.random.seed(global_seed)
            random.seed(global_seed)
            runs.append(run(torch.Generator().manual_seed(seed)))
    finally:
        torch.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])
        if saved_cuda is not None:
            torch.cuda.set_rng_state_all(saved_cuda)
    same_seed_a, same_seed_b, other_seed = runs
    if same_seed_a != same_seed_b:
        fail(f"{label}: two runs with equally seeded generators gave different tokens: draw every random "
             "number from the `generator` argument (torch.multinomial(..., generator=generator), "
             "torch.rand(..., generator=generator)), never from torch's or numpy's global generator.")
    if same_seed_a == other_seed:
        fail(f"{label}: generators with different seeds gave the same tokens: use the `generator` you are "
             "given and never reseed it (or create a fixed-seed one) inside your function.")


def check_autoregressive_reproducible(autoregressive_generate) -> None:
    """A seeded generator reproduces a sampled run; the global generators play no part."""
    __tracebackhide__ = True
    toy_target, _ = _toys()
    label = f"autoregressive_generate(toy, prompt, {N_REPRO}, temperature=1.0, generator=...)"
    _reproducible(lambda gen: _tokens(call(autoregressive_generate, toy_target, torch.tensor([0, 1]), N_REPRO,
                                           temperature=1.0, generator=gen), label, N_REPRO, strict=False), label)


def _speculative_reproducible(speculative_generate, name: str = "speculative_generate", cache: bool = False) -> None:
    """A seeded generator reproduces a sampled speculative run; the global generators play no part."""
    __tracebackhide__ = True
    toy_target, toy_draft = _toys(cache=cache)
    label = f"{name}(toy_target, toy_draft, prompt, {N_REPRO}, K=3, temperature=1.0, generator=...)"
    _reproducible(lambda gen: _spec(speculative_generate, toy_target, toy_draft, torch.tensor([0, 1]), N_REPRO, 3,
                                    temperature=1.0, generator=gen, label=label, n=N_REPRO)[0], label)


def check_speculative_reproducible(speculative_generate) -> None:
    __tracebackhide__ = True
    _speculative_reproducible(speculative_generate)



# ---------------------------------------------------------------- speculative_generate: greedy

def _speculative_greedy(speculative_generate, name: str = "speculative_generate", cache: bool = False, Ks=(1, 2, 3, 5, K_MAX)) -> None:
    """temperature=0: output == the target's greedy output, several prompts, K = 1..8."""
    __tracebackhide__ = True
    target, draft = _pair()
    for prompt in PROMPTS:
        ids = encode(prompt)
        want = _want(prompt)
        for K in Ks:
            label = f"{name}(target, draft, prompt, {N_GREEDY}, K={K}, temperature=0)"
            got, stats = _spec(speculative_generate, target, draft, ids.clone(), N_GREEDY, K, temperature=0,
                               label=label, n=N_GREEDY, strict=True)
            if got == want:
                continue
            if stats["accepted"] == stats["proposed"] > 0:
                fail(f"{label} accepts every draft token: a draft must be rejected where it differs from "
                     "the target's argmax (min(1, p/q) is 0 there).")
            if got == greedy_reference(draft, ids, N_GREEDY).tolist():
                fail(f"{label} returns the DRAFT's greedy output: the target must verify the drafts.")
            fail(f"{label} differs from the target's own greedy output: p_i is the row of target(ids + drafts) "
                 "just before draft i (row t predicts token t+1); keep drafts while they equal the target's "
                 "argmax, then emit the target's argmax (after all K, the bonus token: the argmax of the row "
                 "after the last draft).", generic=True)


def check_speculative_greedy(speculative_generate) -> None:
    __tracebackhide__ = True
    _speculative_greedy(speculative_generate)



# ---------------------------------------------------------------- speculative_generate: stats

# The ways a round may size its proposal: the stats contract accepts each of them.
POLICIES = {
    "K drafts every round": lambda K, needed: K,
    "capped at the tokens still needed": lambda K, needed: min(K, needed),
    "capped so that the round cannot overshoot": lambda K, needed: min(K, needed - 1),
}
STATS_CASES = [(PROMPTS[0], 4), (PROMPTS[1], 5), (PROMPTS[2], 3)]  # each K makes a capped last round differ (docstring)


def _draft_agrees(prompt: str) -> list[bool]:
    """agree[t]: the draft's argmax after prompt + want[:t] is want[t], the target's greedy token."""
    if ("agree", prompt) not in _CACHE:
        _, draft = _pair()
        ids = torch.tensor(encode(prompt).tolist() + _want(prompt, N_GREEDY + K_MAX), device=model_device(draft))
        n0 = len(encode(prompt))
        with torch.no_grad():  # one call per prefix: the shapes the learner's loop uses
            agree = [int(draft(ids[None, :n0 + t])[0, -1].argmax()) == int(ids[n0 + t])
                     for t in range(N_GREEDY + K_MAX)]
        _CACHE[("agree", prompt)] = agree
    return _CACHE[("agree", prompt)]


def greedy_stats(agree: list[bool], K: int, n: int, policy) -> dict:
    """The counters of a greedy speculative run: each round proposes policy(K, tokens still needed)
    drafts, accepts them while the draft's argmax agrees with the target's, and emits one more."""
    done = rounds = proposed = accepted = 0
    while done < n:
        k = policy(K, n - done)
        a = 0
        while a < k and agree[done + a]:
            a += 1
        rounds, proposed, accepted, done = rounds + 1, proposed + k, accepted + a, done + a + 1
    return dict(rounds=rounds, proposed=proposed, accepted=accepted)


def _stats_add_up(stats, K, n, label):
    __tracebackhide__ = True
    if stats["rounds"] < 1:
        fail(f"{label}: stats['rounds'] must count the verification rounds (one target call each).")
    if not 0 <= stats["accepted"] <= stats["proposed"]:
        fail(f"{label}: stats['accepted'] must count accepted DRAFT tokens (not the correction or bonus "
             "token), between 0 and stats['proposed'].")
    if stats["proposed"] > K * stats["rounds"]:
        fail(f"{label}: stats['proposed'] counts more than K drafts per round.")
    emitted = stats["accepted"] + stats["rounds"]  # each round emits its accepted drafts + 1 (before the cut)
    if not n <= emitted <= n + K:
        fail(f"{label}: stats['accepted'] + stats['rounds'] should be the tokens generated before the final "
             f"cut, between max_new_tokens and max_new_tokens + K, and it is {'more' if emitted > n else 'less'}: "
             "count only accepted DRAFT tokens, and end every round with exactly one target token (the "
             "correction, or the bonus token when all drafts are accepted).")


def _speculative_stats(speculative_generate, name: str = "speculative_generate", cache: bool = False) -> None:
    """rounds, proposed, accepted: exact at temperature 0 (for each allowed proposal size), and
    consistent at temperature 1."""
    __tracebackhide__ = True
    target, draft = _pair()
    for prompt, K in STATS_CASES:
        label = f"{name}(target, draft, prompt, {N_GREEDY}, K={K}, temperature=0)"
        _, got = _spec(speculative_generate, target, draft, encode(prompt), N_GREEDY, K, temperature=0,
                       label=label, n=N_GREEDY)
        _stats_add_up(got, K, N_GREEDY, label)
        agree = _draft_agrees(prompt)
        expected = [greedy_stats(agree, K, N_GREEDY, policy) for policy in POLICIES.values()]
        if got in expected:
            continue
        # A correct answer is deterministic at temperature 0. One that samples its drafts repeats the
        # same counters in a run with probability at most 0.2 on these prompts and pair (0.18, 0.13 and
        # 0.16 for the commonest counters over 300 seeds each), so 8 more runs all equal to this one
        # have probability about 0.2**8 < 3e-6.
        for _ in range(8):
            _, again = _spec(speculative_generate, target, draft, encode(prompt), N_GREEDY, K, temperature=0,
                             label=label, n=N_GREEDY)
            if again != got:
                fail(f"{label}: two runs gave different counters ({got} and {again}): at temperature 0 every "
                     "draft must be the draft's argmax (q one-hot), not a sample, so every run proposes and "
                     "accepts the same drafts.")
        if K > 1 and got in [greedy_stats(agree, K - 1, N_GREEDY, policy) for policy in POLICIES.values()]:
            fail(f"{label}: the counters are those of a run that proposes K - 1 = {K - 1} drafts per round: a round "
                 "proposes K drafts (the draft loop is one step short).")
        # Name the one counter that is off, against a proposal policy that explains the other two.
        off = [{key for key in e if e[key] != got[key]} for e in expected]
        if {"proposed"} in off:
            fail(f"{label}: stats['proposed'] should count the draft tokens actually proposed: K per round, "
                 "fewer only in a round you capped at the tokens still needed.")
        if {"accepted"} in off:
            fail(f"{label}: stats['accepted'] should count the draft tokens the target accepted (not the "
                 "correction or bonus token).")
        if {"rounds"} in off:
            fail(f"{label}: stats['rounds'] should count verification rounds (one target call each).")
        fail(f"{label}: the counters do not match a greedy run: at temperature 0 every draft is the draft's "
             "argmax (q one-hot), so rounds (target calls), proposed and accepted drafts are the same on "
             "every run.", generic=True)
    toy_target, toy_draft = _toys(cache=cache)
    gen = torch.Generator().manual_seed(SEED)
    for K, n in ((3, 12), (2, 7)):
        label = f"{name}(toy_target, toy_draft, prompt, {n}, K={K}, temperature=1.0)"
        for _, got in _spec_runs(speculative_generate, 20, toy_target, toy_draft, torch.tensor([0]), n, K, label,
                                 temperature=1.0, generator=gen):
            _stats_add_up(got, K, n, label)


def check_speculative_stats(speculative_generate) -> None:
    __tracebackhide__ = True
    _speculative_stats(speculative_generate)



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


def _accepts_all_on_pair(speculative_generate, name) -> bool:
    """Whether a greedy run on the shipped pair (whose drafts the target rejects now and then) accepts every draft."""
    __tracebackhide__ = True
    target, draft = _pair()
    label = f"{name}(target, draft, prompt, {N_GREEDY}, K=2, temperature=0)"
    _, stats = _spec(speculative_generate, target, draft, encode(PROMPTS[0]), N_GREEDY, 2, temperature=0, label=label,
                     n=N_GREEDY)
    return stats.get("accepted") == stats.get("proposed")


def _speculative_distribution(speculative_generate, name: str = "speculative_generate", cache: bool = False) -> None:
    """First two emitted tokens ~ the target's joint distribution (toy pair, T = 1 and 0.5, K = 2).
    With K = 2 and two tokens no run reaches a bonus token: this cell judges acceptance and residual."""
    __tracebackhide__ = True
    toy_target, toy_draft = _toys(cache=cache)
    for T in (1.0, 0.5):
        # Exact binomial tests on the 16 pairs, DIST_RUNS[T] runs: false failure below 1e-7 per temperature.
        gen = torch.Generator().manual_seed(SEED)
        label = f"{name} at temperature {T}"
        runs = _spec_runs(speculative_generate, DIST_RUNS[T], toy_target, toy_draft, torch.tensor([0]), 2, 2, label,
                          temperature=T, generator=gen)
        pairs = [tuple(tokens) for tokens, _ in runs]
        # "accepts every draft" only where its own counters say so, here and on the shipped pair at T = 0 (where the
        # target rejects drafts): on this toy pair other mistakes (rows off by one) can accept every draft too
        accepted_all = all(stats.get("accepted") == stats.get("proposed") for _, stats in runs)
        if len(set(pairs)) == 1:
            fail(f"{label} returned the same tokens {DIST_RUNS[T]} times: draw every random number from the "
                 "generator argument and never reseed inside the loop (a reseed makes every draw identical).")
        if _joint_ok(pairs, _joint(toy_target.probs(T)), 1e-7):
            continue
        p1 = toy_target.probs(T)[0].numpy()
        q1 = toy_draft.probs(T)[0].numpy()
        q_raw = toy_draft.probs(1.0)[0].numpy()
        first = np.array([a for a, _ in pairs])
        residual = lambda p, q: np.maximum(p - q, 0) / np.maximum(p - q, 0).sum()  # noqa: E731
        wrong = [
            ("after a rejection it samples from p; it must sample from the residual norm(max(p - q, 0)).",
             _first_token_mixture(p1, q1, q1, lambda p, q: p)),
        ]
        if accepted_all and _accepts_all_on_pair(speculative_generate, name):
            wrong.append(("it accepts every draft token: accept x ~ q only with probability min(1, p[x] / q[x]).", q1))
        if T != 1.0:
            wrong.append(("the acceptance test uses q from the draft's RAW logits while the draft sampled from "
                          "temperature-scaled ones: apply the temperature to both p and q before the test.",
                          _first_token_mixture(p1, q1, q_raw, residual)))
        for hint, dist in wrong:
            if counts_match_pmf(first, np.arange(4), dist, 1e-3):
                fail(f"{label}: {hint}")
        if T != 1.0 and _joint_ok(pairs, _joint(toy_target.probs(1.0)), 1e-3):
            fail(f"{label}: the tokens follow the target at temperature 1: apply the temperature to p "
                 "(the target's rows) as well as to q.")
        fail(f"{label}: the first two tokens do not follow the target's distribution (draw x ~ q, accept "
             "with probability min(1, p[x]/q[x]), resample from the residual).", generic=True)


def check_speculative_distribution(speculative_generate) -> None:
    __tracebackhide__ = True
    _speculative_distribution(speculative_generate)



# ---------------------------------------------------------------- speculative_generate: bonus token

BONUS_CASES = [(1, 2, 1.0), (2, 3, 0.5)]  # (K, tokens, temperature): one round of K drafts + bonus


def _all_accepted(p: np.ndarray, q: np.ndarray, K: int, start: int = 0) -> np.ndarray:
    """w[a] = P(the first round accepts all K drafts and the last of them is a), from `start`."""
    w = np.zeros(len(p))
    w[start] = 1.0
    for _ in range(K):
        w = w @ np.minimum(p, q)  # P(draft x proposed and accepted) = min(p(x), q(x))
    return w


def _conditional_ok(groups: np.ndarray, cond: np.ndarray, level: float) -> bool:
    """groups[a, x]: runs whose bonus token x followed token a. Given the group sizes, each count is
    Binomial(group size, cond[a, x]) under the null: exact tests, Bonferroni over the 16 cells."""
    per_cell = level / groups.size
    for a in range(groups.shape[0]):
        size = int(groups[a].sum())
        for x in range(groups.shape[1]):
            k, pr = int(groups[a, x]), float(cond[a, x])
            if size == 0:
                continue
            if pr <= 0.0 or pr >= 1.0:
                if k != (size if pr >= 1.0 else 0):
                    return False
            elif scipy_stats.binomtest(k, size, pr).pvalue < per_cell:
                return False
    return True


def _speculative_bonus(speculative_generate, name: str = "speculative_generate", cache: bool = False,
                       same_pair: bool = True) -> None:
    """All K drafts accepted: the round adds a bonus token drawn from p_{K+1} at temperature T."""
    __tracebackhide__ = True
    # Draft == target (the toy target, whose rows are exact table lookups, so p == q bit for bit):
    # every draft is accepted, and every round emits K+1 tokens: ceil(N / (K+1)) rounds. One round
    # more is tolerated (a p/q a rounding error below 1 could reject one draft, and one short round
    # costs at most one extra round); without the bonus token it takes N/K rounds (12 and 8 here).
    toy_target, _ = _toys(cache=cache)
    gen = torch.Generator().manual_seed(SEED)
    for K in ((2, 3) if same_pair else ()):
        label = f"{name}(toy_target, toy_target, prompt, {N_GREEDY}, K={K}, temperature=1.0)"
        _, stats = _spec(speculative_generate, toy_target, toy_target, torch.tensor([0]), N_GREEDY, K,
                         temperature=1.0, generator=gen, label=label, n=N_GREEDY)
        if stats["rounds"] > -(-N_GREEDY // (K + 1)) + 1:
            fail(f"{label} needed {stats['rounds']} rounds, where every draft is accepted: a round proposes K "
                 "drafts and, when all are accepted, also emits the bonus token from the target's last row, "
                 "K+1 tokens per round.")
    # A close toy pair (most rounds accept everything). A run of `n` = K+1 tokens with
    # stats['rounds'] == 1 accepted all K drafts; its last token is the bonus, whose law given the
    # token before it is p_T[that token]. Exact tests given the group sizes, 1e-7 per case.
    toy_target, toy_draft = _toys(close=True, cache=cache)
    for K, n, T in BONUS_CASES:
        label = f"{name}(toy_target, toy_draft, prompt, {n}, K={K}, temperature={T})"
        p, q = toy_target.probs(T).numpy(), toy_draft.probs(T).numpy()
        gen = torch.Generator().manual_seed(SEED)
        groups = np.zeros((4, 4), dtype=int)
        runs = set()
        for tokens, stats in _spec_runs(speculative_generate, N_BONUS, toy_target, toy_draft, torch.tensor([0]), n, K,
                                        label, temperature=T, generator=gen):
            runs.add(tuple(tokens))
            if stats["rounds"] == 1:
                groups[tokens[-2], tokens[-1]] += 1
        if len(runs) == 1:
            fail(f"{label} returned the same tokens {N_BONUS} times: draw every random number from the "
                 "generator argument and never reseed inside the loop (a reseed makes every draw identical).")
        # A correct answer accepts all K with probability P = sum(_all_accepted) >= 0.37 here, so
        # fewer than a quarter of the expected count has probability below 1e-30 (Chernoff).
        expected_full = N_BONUS * _all_accepted(p, q, K).sum()
        if groups.sum() < expected_full / 4:
            fail(f"{label}: in only {groups.sum()} of {N_BONUS} runs did one round emit all {n} tokens; when "
                 "all K drafts are accepted the round must also emit the bonus token (K+1 tokens).")
        if _conditional_ok(groups, p, 1e-7):
            continue
        wrong = [
            ("the bonus token is the argmax of the target's last row; at temperature > 0 sample it from "
             "softmax(logits / temperature) like every other token.", np.eye(4)[p.argmax(1)]),
            ("the bonus token follows the DRAFT's distribution; draw it from the TARGET's last row "
             "p_{K+1} (the row after the last draft).", q),
        ]
        if T != 1.0:
            wrong.append(("the bonus token is drawn without the temperature; apply it to the target's last row "
                          "too: softmax(logits / temperature).", toy_target.probs(1.0).numpy()))
        for hint, cond in wrong:
            if _conditional_ok(groups, cond, 1e-3):
                fail(f"{label}: {hint}")
        fail(f"{label}: the bonus token (all K drafts accepted) does not follow the target's last row "
             "p_{K+1} = softmax(target row after the last draft / temperature).", generic=True)


def check_speculative_bonus(speculative_generate) -> None:
    __tracebackhide__ = True
    _speculative_bonus(speculative_generate)


# ---------------------------------------------------------------- speculative_generate_cached
#
# The cached verifier has the contract of speculative_generate, so the same checks run on it (on the
# toy pairs with the cache API), with K = 0 added to the greedy one (no drafts: cached plain
# decoding, which notebook 04 times it against). What only a cache can get wrong is judged from what
# each model was fed: `text_pair` records every call, and its tokens tell text from rejected drafts.

CACHED = "speculative_generate_cached"
LOG_PROMPT = list(range(6))   # text_pair's text is 0, 1, 2, ...: the prompt is its first 6 tokens
LOG_CASES = (1, 2, 4)         # K of the runs whose feeding is judged (greedy, N_GREEDY new tokens each)


def _text(n: int) -> list[int]:
    """text_pair's greedy text: the prompt and the n tokens after it."""
    return [t % TEXT_TOKENS for t in range(len(LOG_PROMPT) + n)]


def _read_events(events, role: str) -> list[dict]:
    """A recording model's events as checked plain data (they come from the learner's kernel)."""
    __tracebackhide__ = True
    if not isinstance(events, list):
        fail(f"{CACHED}: the grader could not read what the {role} model was fed (was the model or its cache "
             "replaced?).")
    out = []
    for ev in events:
        try:
            op = str(ev["op"])
            item = dict(op=op, t=int(ev["t"]))
            if op in ("call", "extend"):
                item["fed"] = [int(x) for x in ev["fed"]]
            if op == "extend":
                item["before"] = [int(x) for x in ev["before"]]
            out.append(item)
        except (KeyError, TypeError, ValueError):
            fail(f"{CACHED}: the grader could not read what the {role} model was fed (was the model or its "
                 "cache replaced?).")
    return out


def _text_prefix(seq: list[int], text: list[int]) -> int:
    """How many leading tokens of seq are the text."""
    m = 0
    while m < min(len(seq), len(text)) and seq[m] == text[m]:
        m += 1
    return m


def feeding_problem(target_events, draft_events, text: list[int], n: int, K: int, label: str) -> str | None:
    """What went wrong in feeding the caches, from text_pair's records (None: nothing). `text` is the
    target's greedy text (prompt, the n new tokens and a margin). A correct loop's target cache only ever
    holds text, each text token at its own position; the draft's holds text and then, within one
    round, its own drafts (a rejected draft and everything drafted after it lie outside the text);
    both models see every committed token; nothing is fed twice."""
    n_prompt = len(LOG_PROMPT)
    for role, events in (("target", target_events), ("draft", draft_events)):
        if any(ev["op"] == "call" for ev in events):
            return (f"{label} calls the {role} as {role}(ids), the plain call that recomputes the whole sequence: "
                    f"use {role}.extend(ids, cache) and feed it only what its cache lacks.")
    for ev in (e for e in target_events if e["op"] == "extend"):
        before, fed = ev["before"], ev["fed"]
        stale = [pos for pos, token in enumerate(before[:len(text)]) if token != text[pos]]
        if stale and all(token >= TEXT_TOKENS for token in before[stale[0]:]):
            if stale == [len(before) - 1]:
                return (f"{label}: the target's cache still holds a rejected draft's entry when the next round "
                        "starts: the rollback keeps one position too many; roll back to the prompt plus the "
                        "accepted drafts (what it was fed and is still committed).")
            return (f"{label}: the target's cache still holds rejected drafts when the next round starts: roll "
                    "it back after every verification to the committed tokens it was fed.")
        pos = len(before)
        if not stale and fed and pos + 1 < len(text) and fed[0] != text[pos] and fed[0] == text[pos + 1]:
            return (f"{label}: the target's cache lacks the last accepted token: the rollback drops one position "
                    "too many, so the next round's tokens land one place early.")
    for ev in (e for e in draft_events if e["op"] == "extend"):
        before, seq = ev["before"], ev["before"] + ev["fed"]
        for pos, token in enumerate(seq[:len(text)]):
            if token == text[pos]:
                continue
            if token >= TEXT_TOKENS:  # a draft outside the text: rejected, or this round's own
                if pos < len(before) and any(t < TEXT_TOKENS for t in seq[pos + 1:]):
                    return (f"{label}: the draft's cache still holds rejected drafts of an earlier round: roll the "
                            "draft's cache back after every round too, to the committed tokens it was fed.")
                break
            if pos >= len(before) and pos + 1 < len(text) and token == text[pos + 1]:
                return (f"{label}: the draft model never saw a committed token (the correction or bonus token "
                        "that ended a round): feed the draft every token its cache lacks before it drafts again.")
            break  # judged below, once the draft's coverage is known
    # The draft must keep up with the text: the last round that drafts starts at most K + 1 tokens
    # before the last one it needs (a proposal capped at the tokens still needed minus one), and the
    # draft sees the committed text up to there.
    extends = [e for e in draft_events if e["op"] == "extend"]
    if extends and K > 0:
        seen = max(_text_prefix(e["before"] + e["fed"], text) for e in extends)
        if seen < n_prompt + n - (K + 2):
            return (f"{label}: the draft model stops seeing the text after a few rounds: feed it the correction or "
                    "bonus token that ends each round (and anything else its cache lacks) before it drafts again.")
    for role, events in (("target", target_events), ("draft", draft_events)):
        for ev in (e for e in events if e["op"] == "extend"):
            seq = ev["before"] + ev["fed"]
            wrong = [pos for pos, token in enumerate(seq[:len(text)]) if token < TEXT_TOKENS and token != text[pos]
                     and (role == "target" or pos < len(ev["before"]) or all(t < TEXT_TOKENS for t in seq[:pos]))]
            if wrong:
                return (f"{label}: the {role}'s cache holds a token at the wrong position: after each round its "
                        "cache must hold exactly the committed tokens it has been fed, in order.")
    for role, events in (("target", target_events), ("draft", draft_events)):
        refed, seen = 0, 0
        for ev in (e for e in events if e["op"] == "extend"):
            start, seq = len(ev["before"]), ev["before"] + ev["fed"]
            refed += max(0, min(seen, len(seq)) - start)  # positions this model had computed before
            seen = max(seen, _text_prefix(seq, text))
        rounds = sum(1 for e in target_events if e["op"] == "extend")
        if refed > n_prompt + 2 * rounds:
            return (f"{label} returns the right tokens, but the {role} is fed {refed} tokens it had already seen: the "
                    "cache is not used. Keep one cache per model for the whole call, roll it back after a round, "
                    "and feed only what it lacks.")
    return None


def _feeding(fn, K: int) -> str | None:
    __tracebackhide__ = True
    target, draft = text_pair(default_device())
    label = f"{CACHED}(target, draft, prompt, {N_GREEDY}, K={K}, temperature=0)"
    target.reset_events()
    draft.reset_events()
    out, = call_many(fn, [((target, draft, torch.tensor(LOG_PROMPT), N_GREEDY, K), dict(temperature=0))], events=True)
    tokens, _ = _spec_out(out, label, N_GREEDY, False)
    problem = feeding_problem(_read_events(target.events, "target"), _read_events(draft.events, "draft"),
                              _text(N_GREEDY + K_MAX + 2), N_GREEDY, K, label)
    if problem is None and tokens != _text(N_GREEDY)[len(LOG_PROMPT):]:
        return f"{label} differs from the target's greedy output."
    return problem


def cache_diagnosis(fn) -> str | None:
    """The first feeding problem of a few greedy runs on text_pair, or None."""
    __tracebackhide__ = True
    for K in LOG_CASES:
        problem = _feeding(fn, K)
        if problem is not None:
            return problem
    return None


def check_cached_greedy(speculative_generate_cached) -> None:
    """temperature=0 on the shipped pair: the target's greedy output, K = 0..8; a mismatch is named
    from what the models were fed (text_pair)."""
    __tracebackhide__ = True
    try:
        _speculative_greedy(speculative_generate_cached, CACHED, True, (0, 1, 2, 3, 5, K_MAX))
    except CheckFailure as failure:
        # a named mistake of the verification itself (every draft accepted, the draft's output returned)
        # comes before what it did to the caches; a wrong output without a name is explained by the caches
        diagnosis = None if not failure.generic else cache_diagnosis(speculative_generate_cached)
        if diagnosis:
            fail(diagnosis)
        raise failure from None


def check_cached_feeding(speculative_generate_cached) -> None:
    """Each model is fed only what its cache lacks: no plain calls, no rejected draft left in a cache,
    no committed token skipped or fed twice (greedy runs on text_pair, K = 1, 2, 4)."""
    __tracebackhide__ = True
    problem = cache_diagnosis(speculative_generate_cached)
    if problem is not None:
        fail(problem)


def check_cached_stats(speculative_generate_cached) -> None:
    __tracebackhide__ = True
    try:
        _speculative_stats(speculative_generate_cached, CACHED, True)
    except CheckFailure as failure:
        # Counters off at T = 0 because a model was fed the wrong context count another run faithfully:
        # that mistake costs the feeding cell (and the greedy one when the output changes), not this one.
        if cache_diagnosis(speculative_generate_cached) is None:
            raise failure from None


def check_cached_distribution(speculative_generate_cached) -> None:
    __tracebackhide__ = True
    _speculative_distribution(speculative_generate_cached, CACHED, True)


def check_cached_bonus(speculative_generate_cached) -> None:
    __tracebackhide__ = True
    # Not the draft == target round count: a draft cache fed the wrong context rejects drafts there
    # too (the feeding cell's mistake); the close pair's first rounds still catch a missing bonus token.
    _speculative_bonus(speculative_generate_cached, CACHED, True, same_pair=False)


def check_cached_reproducible(speculative_generate_cached) -> None:
    __tracebackhide__ = True
    _speculative_reproducible(speculative_generate_cached, CACHED, True)


# ---------------------------------------------------------------- the contract

# Every exercise's checks decode greedily on a transformer pair (`_pair`, `_want`) and make thousands of seeded
# calls on toy pairs: about 3 s of CPU for one answer's 13 checks in process on the 2-core course machine, 40 s for
# the catalogue of 04's answers (tests/test_checkers.py), which the fast tier cannot hold.
RUNS_MODEL = Heavy("its checks decode on a transformer pair and make thousands of seeded calls: about 3 s of CPU "
                   "an answer in process, 40 s for its catalogue", in_process=True)

# Each exercise's hidden tests in cell order. One mistake, one sentence: every failing cell of an exercise says
# its first named mistake (a generic hint only where no cell names one), not its consequences next to it.
CONTRACT = declare(
    globals(),
    Exercise("autoregressive_generate", ("check_autoregressive_generate", "check_autoregressive_reproducible"),
             heavy=RUNS_MODEL),
    Exercise("speculative_generate", ("check_speculative_greedy", "check_speculative_stats",
                                      "check_speculative_distribution", "check_speculative_bonus",
                                      "check_speculative_reproducible"), heavy=RUNS_MODEL),
    Exercise("speculative_generate_cached", ("check_cached_greedy", "check_cached_feeding", "check_cached_stats",
                                             "check_cached_distribution", "check_cached_bonus",
                                             "check_cached_reproducible"), heavy=RUNS_MODEL),
)
