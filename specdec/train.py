"""Train the shipped target and draft models (`make train`): byte-level, on the Python standard
library's own source, a code-completion workload that every machine with Python already has.

    python -m specdec.train [--target-steps N] [--draft-steps N] [--device cuda]

The target is trained on next-byte cross-entropy. The draft is DISTILLED from the target: its
loss is the KL divergence from the target's next-byte distribution (plus a little
cross-entropy on the data), which raises the acceptance rate alpha = 1 - TV(p, q) directly.
Everything is seeded; the same device, torch version and stdlib give the same weights.
Nothing is downloaded; the corpus is read from this interpreter's stdlib and never committed.
"""
from __future__ import annotations

import argparse
import math
import platform
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from dataclasses import asdict

from specdec.model import Config, TinyGPT, decode, encode, load, save

TARGET = Config(d_model=384, n_layers=6, n_heads=6, max_len=512)
DRAFT = Config(d_model=128, n_layers=1, n_heads=4, max_len=512)  # stage 1; `grow` adds a second layer
SEQ = 256
SEED = 1234
CORPUS_DIR = Path(__file__).resolve().parent.parent / "build" / "corpus"
PROMPTS = ["def __init__(self", "import os\nimport sys\n\n\ndef main(", "    for i in range(len(", "class Parser:\n    "]


def stdlib_files() -> list[Path]:
    """The stdlib's own .py files, sorted, without tests and vendored/generated code."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"test", "tests", "idle_test", "site-packages", "lib2to3", "ensurepip", "turtledemo", "__pycache__"}
    files = [p for p in sorted(root.rglob("*.py")) if not skip & set(p.relative_to(root).parts)]
    return [p for p in files if p.stat().st_size < 400_000]


def build_corpus(out: Path = CORPUS_DIR) -> tuple[np.ndarray, np.ndarray]:
    """(train, val) byte arrays; every 20th file goes to validation. Cached under build/."""
    if (out / "train.bin").exists():
        return (np.fromfile(out / "train.bin", dtype=np.uint8), np.fromfile(out / "val.bin", dtype=np.uint8))
    train, val = [], []
    for i, path in enumerate(stdlib_files()):
        data = path.read_bytes()
        if max(data, default=0) < 128:  # ASCII only: one byte, one character
            (val if i % 20 == 0 else train).append(data + b"\n\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "source.txt").write_text(f"Python {platform.python_version()} standard library source "
                                    f"(ASCII .py files, no tests), every 20th file held out for validation")
    for name, parts in (("train", train), ("val", val)):
        np.frombuffer(b"".join(parts), dtype=np.uint8).tofile(out / f"{name}.bin")
    return build_corpus(out)


def batches(data: np.ndarray, batch: int, gen: torch.Generator, device):
    data_t = torch.from_numpy(data.astype(np.int64))
    while True:
        starts = torch.randint(0, len(data_t) - SEQ - 1, (batch,), generator=gen)
        chunk = torch.stack([data_t[s:s + SEQ + 1] for s in starts.tolist()]).to(device)
        yield chunk[:, :-1], chunk[:, 1:]


def lr_at(step, steps, peak, warmup=100):
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def autocast(device):
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else torch.autocast("cpu", enabled=False)


def grow(model: TinyGPT) -> TinyGPT:
    """The same model with one more transformer block on top, initialised as the identity (its two
    output projections are zero), so the grown model starts with exactly the old predictions.

    Why: a one-layer model cannot copy from its context. Copying ("the last time `self.` was
    followed by `path`, so it will be again") needs an induction head, which takes two layers of
    attention: one to note which token preceded each position, one to look up the match."""
    bigger = TinyGPT(Config(**{**asdict(model.config), "n_layers": model.config.n_layers + 1})).to(model.head.weight.device)
    missing, unexpected = bigger.load_state_dict(model.state_dict(), strict=False)
    assert not unexpected and all(k.startswith(f"blocks.{model.config.n_layers}.") for k in missing), (missing, unexpected)
    new = bigger.blocks[-1]
    with torch.no_grad():
        for layer in (new.proj, new.mlp[2]):
            layer.weight.zero_()
            layer.bias.zero_()
    return bigger


def train(model, data, steps, batch, peak_lr, device, gen, teacher=None, log_every=200):
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.95), weight_decay=0.1)
    stream = batches(data, batch, gen, device)
    t0 = time.time()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, peak_lr)
        x, y = next(stream)
        with autocast(device):
            logits = model(x).float()
            loss = F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))
            if teacher is not None:
                with torch.no_grad():
                    p_target = F.softmax(teacher(x).float(), dim=-1)
                kl = F.kl_div(F.log_softmax(logits, -1), p_target, reduction="batchmean") / SEQ
                loss = kl + 0.1 * loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % log_every == 0 or step == steps - 1:
            print(f"  step {step:5d}  loss {loss.item():.3f}  {time.time() - t0:.0f}s", flush=True)
    return model.eval()


def extend_context(model, data, steps, batch, device, gen, teacher=None, trained=SEQ, log_every=50):
    """Teach a model trained on `trained`-byte windows the positions from `trained` to max_len.

    Learned position embeddings exist for all max_len positions, but rows the training never
    reached stay random: on 512-byte windows the loss past byte 256 was 3.6 nats instead of
    0.6. Only those rows are trained here (initialised as a copy of positions trained/2..trained,
    repeated), on max_len-byte windows; everything else is frozen, so behaviour on short
    sequences is unchanged."""
    L = model.config.max_len
    weight = model.pos.weight
    with torch.no_grad():
        half = weight[trained // 2:trained].clone()
        weight[trained:] = half.repeat((L - trained) // len(half) + 1, 1)[: L - trained]
    for param in model.parameters():
        param.requires_grad_(False)
    weight.requires_grad_(True)
    opt = torch.optim.Adam([weight], lr=3e-3)
    data_t = torch.from_numpy(data.astype(np.int64))
    t0 = time.time()
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, 3e-3, warmup=20)
        starts = torch.randint(0, len(data_t) - L - 1, (batch,), generator=gen).tolist()
        chunk = torch.stack([data_t[s:s + L + 1] for s in starts]).to(device)
        x, y = chunk[:, :-1], chunk[:, 1:]
        with autocast(device):
            logits = model(x).float()
            if teacher is None:
                loss = F.cross_entropy(logits[:, trained:].reshape(-1, 256), y[:, trained:].reshape(-1))
            else:
                with torch.no_grad():
                    p_target = F.softmax(teacher(x)[:, trained:].float(), dim=-1)
                loss = F.kl_div(F.log_softmax(logits[:, trained:], -1), p_target, reduction="batchmean") / (L - trained)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        weight.grad[:trained] = 0  # the trained positions stay exactly as they were
        opt.step()
        if step % log_every == 0 or step == steps - 1:
            print(f"  step {step:5d}  loss past byte {trained} {loss.item():.3f}  {time.time() - t0:.0f}s", flush=True)
    model.eval()
    for param in model.parameters():
        param.requires_grad_(False)
    return model


@torch.no_grad()
def position_losses(model, data, n_seq=16, seed=SEED + 11):
    """Validation loss (nats/byte) in 64-byte buckets of max_len-byte windows."""
    L = model.config.max_len
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(data) - L - 1, n_seq)
    x = torch.tensor(np.stack([data[s:s + L + 1] for s in starts]).astype(np.int64)).to(model.head.weight.device)
    losses = F.cross_entropy(model(x[:, :-1]).float().transpose(1, 2), x[:, 1:], reduction="none").mean(0)
    return [round(losses[a:a + 64].mean().item(), 3) for a in range(0, L, 64)]


@torch.no_grad()
def evaluate(target, draft, val, device, n_seq=64):
    """Validation loss (nats/byte) of each model, and the per-position acceptance rate of the
    draft against the target on real text: T=1, mean sum min(p, q); T=0, argmax agreement."""
    gen = torch.Generator().manual_seed(SEED + 7)
    x, y = next(batches(val, n_seq, gen, device))
    lt, ld = target(x).float(), draft(x).float()
    loss = lambda logits: F.cross_entropy(logits.reshape(-1, 256), y.reshape(-1)).item()  # noqa: E731
    p, q = F.softmax(lt, -1), F.softmax(ld, -1)
    return dict(target_val_loss=round(loss(lt), 4), draft_val_loss=round(loss(ld), 4),
                alpha_T1=round(torch.minimum(p, q).sum(-1).mean().item(), 4),
                alpha_T0=round((lt.argmax(-1) == ld.argmax(-1)).float().mean().item(), 4))


@torch.no_grad()
def sample(model, prompt, n=80, device="cpu"):
    ids = encode(prompt).to(device)[None]
    for _ in range(n):
        ids = torch.cat([ids, model(ids[:, -model.config.max_len:])[:, -1].argmax(-1, keepdim=True)], dim=1)
    return decode(ids[0, len(prompt):].tolist())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target-steps", type=int, default=3000)
    ap.add_argument("--draft-steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    torch.manual_seed(SEED)
    train_data, val_data = build_corpus()
    print(f"corpus: {len(train_data):,} train bytes, {len(val_data):,} val bytes; device {device}")
    gen = torch.Generator().manual_seed(SEED)
    t0 = time.time()
    print("target", TARGET)
    target = train(TinyGPT(TARGET).to(device), train_data, args.target_steps, args.batch, 1e-3, device, gen)
    for param in target.parameters():
        param.requires_grad_(False)
    print("draft (distilled from the target)", DRAFT)
    draft = train(TinyGPT(DRAFT).to(device), train_data, args.draft_steps, args.batch, 3e-3, device, gen,
                  teacher=target)
    metrics = evaluate(target, draft, val_data, device)
    print(metrics)
    card = dict(trained_on=f"{(CORPUS_DIR / 'source.txt').read_text()}; {len(train_data):,} train / "
                           f"{len(val_data):,} val bytes",
                seed=SEED, device=str(device), torch=torch.__version__, minutes=round((time.time() - t0) / 60, 1),
                batch=args.batch, seq=SEQ, **metrics)
    for name, model, steps in (("target", target, args.target_steps), ("draft", draft, args.draft_steps)):
        samples = {prompt: sample(model, prompt, device=device) for prompt in PROMPTS[:2]}
        params = sum(p.numel() for p in model.parameters())
        save(model.cpu(), name, dict(card, steps=steps, params=params, greedy_samples=samples))
        model.to(device)
        print(name, f"{params:,} params", samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
