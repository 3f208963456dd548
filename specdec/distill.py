"""Notebook 08: fine-tune a draft for acceptance (distillation), and measure what it buys.

What it offers:
- `corpus_windows(n, length, generator, split)`: random windows of the course's code corpus (the
  standard library's own source, `specdec.train.build_corpus`, every 20th file held out);
- `fine_tune(draft, target, loss, ...)`: the given training loop. Each step takes a batch of
  contexts, the target's logits on them (no gradient) and the draft's, and one AdamW step on
  `loss(target_logits, draft_logits, mask, temperature)`. `source="corpus"` reads fixed windows of
  the corpus; `source="on_policy"` lets the draft write the contexts itself from corpus prompts,
  through `collect(draft, target, prompts, n_new, temperature, generator) -> (ids, target_logits)`
  (the learner's `on_policy_batch`). Seeded: the same arguments give the same draft on one machine;
- `acceptance_rates(target, draft, ids)`: alpha on held-out code, teacher-forced: at T = 1 the mean
  of sum_x min(p, q) over positions, at T = 0 how often the two argmaxes agree;
- `measure(target, drafts, prompts)`: per draft, those two alphas, its cost c, the speedup the
  course's engine (`specdec.engine`, what `make bench` times) measures over plain decoding at
  T = 1 and T = 0 on this machine, and alpha as that decoding met it;
- `DISTILLED`: the drafts distilled offline with each loss and each data source, loaded with
  `specdec.model.load("distilled/<loss>-<source>")`; each has a training card (JSON) beside it.

The offline drafts are made by `make distill` (`python -m solutions.distill`, which trains with
the reference losses: the losses are the notebook's exercises, so they are not in this package).
Every distilled draft starts from the shipped draft (`load("draft")`, itself distilled with a
forward KL on the corpus, specdec/train.py) and takes the same steps on the same prompts.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from specdec import engine
from specdec.model import WEIGHTS, load, model_device
from specdec.timing import fastest
from specdec.train import build_corpus, lr_at

SEQ = 64  # bytes per training context
BATCH = 16  # contexts per step
PROMPT = 16  # on-policy prompts: the first PROMPT bytes of a corpus window; the draft writes the rest
LR = 3e-4  # peak; after WARMUP steps it decays to 0 on a cosine (specdec.train.lr_at)
WARMUP = 30
TEMPERATURE = 1.0  # the temperature the losses and the on-policy draws use in training
LOSSES = ("forward_kl", "reverse_kl", "total_variation", "jensen_shannon")
SOURCES = ("corpus", "on_policy")
DISTILLED = {(loss, source): f"distilled/{loss}-{source}" for loss in LOSSES for source in SOURCES}
SEED = 808


def corpus_windows(n: int, length: int, generator: torch.Generator, split: str = "train") -> torch.LongTensor:
    """(n, length) byte ids: windows of the corpus at random starts drawn with `generator`.
    split "train" or "val" (the held-out files: every 20th standard-library file)."""
    try:  # build_corpus reads the standard library once, then its cache
        data = build_corpus()[0 if split == "train" else 1]
    except OSError:  # an installed package whose build/ cannot be written: cache it in the temp folder
        data = build_corpus(Path(tempfile.gettempdir()) / "specdec-corpus")[0 if split == "train" else 1]
    starts = torch.randint(0, len(data) - length, (n,), generator=generator).tolist()
    return torch.from_numpy(np.stack([data[s:s + length] for s in starts]).astype(np.int64))


def _batch(draft, target, source: str, collect, batch: int, seq: int, temperature: float, gen: torch.Generator,
           draws: torch.Generator):
    """One step's (target_logits, draft_logits, mask) for the loss, the draft's with a gradient: corpus windows
    drawn with `gen` (on the CPU), the draft's on-policy tokens with `draws` (on the models' device)."""
    device = model_device(draft)
    if source == "corpus":
        ids = corpus_windows(batch, seq + 1, gen).to(device)
        with torch.no_grad():
            target_logits = target(ids[:, :-1])
        draft_logits = draft(ids[:, :-1])
    elif source == "on_policy":
        prompts = corpus_windows(batch, PROMPT, gen).to(device)
        draft.eval()
        ids, target_logits = collect(draft, target, prompts, seq + 1 - PROMPT, temperature, draws)
        draft.train()
        target_logits = target_logits.detach()
        draft_logits = draft(ids[:, :-1])[:, PROMPT - 1:]
    else:
        raise ValueError(f"source must be 'corpus' or 'on_policy', not {source!r}")
    mask = torch.ones(draft_logits.shape[:2], dtype=torch.bool, device=device)
    return target_logits.float(), draft_logits.float(), mask


def fine_tune(draft, target, loss, source: str = "corpus", collect=None, steps: int = 200, batch: int = BATCH,
              seq: int = SEQ, lr: float = LR, temperature: float = TEMPERATURE, seed: int = SEED,
              log_every: int = 0) -> list[float]:
    """Fine-tune `draft` in place with `loss` for `steps` AdamW steps (peak `lr`, a short warm-up, then a
    cosine decay to 0, as the shipped pair was trained); returns each step's loss.
    The target is frozen; batches are drawn with a generator seeded by `seed`, so every loss and
    source sees the same corpus windows (or prompts) in the same order."""
    if source == "on_policy" and collect is None:
        raise ValueError("on-policy data needs collect(draft, target, prompts, n_new, temperature, generator)")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)  # the corpus windows: CPU data
    device = model_device(draft)
    # the on-policy draws happen on the models' device, so `collect` gets a generator there (on a CPU, the same one)
    draws = gen if device.type == "cpu" else torch.Generator(device=device).manual_seed(seed)
    for param in target.parameters():
        param.requires_grad_(False)
    target.eval()
    draft.train()
    opt = torch.optim.AdamW(draft.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    losses, t0 = [], time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr, warmup=min(WARMUP, steps))
        target_logits, draft_logits, mask = _batch(draft, target, source, collect, batch, seq, temperature, gen, draws)
        value = loss(target_logits, draft_logits, mask, temperature)
        opt.zero_grad(set_to_none=True)
        value.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        losses.append(float(value.detach()))
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"  step {step:4d}  loss {losses[-1]:.4f}  {time.perf_counter() - t0:.0f} s", flush=True)
    draft.eval()
    return losses


@torch.no_grad()
def acceptance_rates(target, draft, ids: torch.LongTensor, target_logits: torch.Tensor | None = None) -> dict:
    """alpha on the contexts `ids` (n, length), teacher-forced: T1 = mean over positions of
    sum_x min(p, q) at temperature 1; T0 = the fraction of positions whose argmaxes agree.
    `target_logits`: target(ids), when the caller has them already (one target pass for many drafts)."""
    ids = ids.to(model_device(target))
    p_logits = (target(ids) if target_logits is None else target_logits).float()
    q_logits = draft(ids).float()
    p, q = p_logits.softmax(-1), q_logits.softmax(-1)
    return dict(alpha_T1=torch.minimum(p, q).sum(-1).mean().item(),
                alpha_T0=(p_logits.argmax(-1) == q_logits.argmax(-1)).float().mean().item())


def held_out(n: int = 32, length: int = 128, seed: int = SEED) -> torch.LongTensor:
    """(n, length) windows of the held-out code (the files no draft or target was trained on)."""
    return corpus_windows(n, length, torch.Generator().manual_seed(seed), split="val")


def measure(target, drafts: dict, prompts, n_new: int = 64, K: int = 4, repeats: int = 2, seed: int = SEED) -> dict:
    """{name: {alpha_T1, alpha_T0, c, speedup_T1, speedup_T0, engine_alpha_T1, engine_alpha_T0}} for each
    draft of `drafts` (name -> model): alpha on held-out code (`acceptance_rates`, one target pass for
    all), c (one cached draft step over one cached target step, timed once: the drafts share one
    architecture), and speedup = plain decoding's time over the engine's speculative decoding with K
    drafts, `n_new` tokens after each of `prompts` (lists of ids), at T = 1 and T = 0, each the fastest
    of `repeats` runs (plain decoding timed once per temperature for all). engine_alpha is alpha as
    decoding met it: accepted over TESTED drafts (a draft after a rejection is never tested), on the
    contexts of the run itself, where the draft continues its own accepted guesses."""
    from specdec.practice import draft_cost

    device = model_device(target)
    contexts = held_out().to(device)
    with torch.no_grad():
        target_logits = target(contexts)
    c = draft_cost(target, next(iter(drafts.values())))
    out = {name: dict(acceptance_rates(target, draft, contexts, target_logits), c=c) for name, draft in drafts.items()}
    for T in (1.0, 0.0):
        def plain_run(T=T):
            gen = torch.Generator(device=device).manual_seed(seed)
            for prompt in prompts:
                engine.plain(target, prompt, n_new, T, gen)
        plain_s = fastest({"plain": plain_run}, repeats + 1)["plain"]
        for name, draft in drafts.items():
            counts = {}

            def spec_run(T=T, draft=draft, counts=counts):
                gen = torch.Generator(device=device).manual_seed(seed)
                counts.clear()
                for prompt in prompts:
                    stats = engine.speculate(target, engine.DraftModel(draft), prompt, n_new, K, T, gen)[1]
                    counts["tested"] = counts.get("tested", 0) + sum(stats["tested"])
                    counts["accepted"] = counts.get("accepted", 0) + sum(stats["accepted_at"])

            out[name][f"speedup_T{T:.0f}"] = plain_s / fastest({"spec": spec_run}, repeats)["spec"]
            out[name][f"engine_alpha_T{T:.0f}"] = counts["accepted"] / max(counts["tested"], 1)
    return out


def distilled(device=None) -> dict:
    """{(loss, source): the draft distilled offline with that loss on that data}, loaded from WEIGHTS."""
    return {key: load(name, device) for key, name in DISTILLED.items() if (WEIGHTS / f"{name}.pt").exists()}
