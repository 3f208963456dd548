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
import os
import platform
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from specdec.model import Config, TinyGPT, decode, encode, save

# max_len = SEQ: a learned position embedding exists only for positions training reaches. (The
# first training run used max_len 512 on 256-byte windows; its rows 256-511 stayed random and
# the loss past byte 256 was 3.7 nats instead of 0.8, so they were cut from the shipped weights.)
TARGET = Config(d_model=384, n_layers=6, n_heads=6, max_len=256)
DRAFT = Config(d_model=128, n_layers=1, n_heads=4, max_len=256)
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
    # Each file is written under a name of this process's and then renamed into place (atomic), train.bin last:
    # two processes building the cache at once (test workers, two notebooks) never read a half-written file.
    text = (f"Python {platform.python_version()} standard library source (ASCII .py files, no tests), every "
            "20th file held out for validation")
    for name, data in (("source.txt", text.encode()), ("val.bin", b"".join(val)), ("train.bin", b"".join(train))):
        partial = out / f".{name}.{os.getpid()}"
        partial.write_bytes(data)
        os.replace(partial, out / name)
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
