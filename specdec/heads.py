"""Self-drafting heads (Medusa-style) on the shipped target: notebook 05's draft-free proposer.

Head k (k = 1..N) reads the target's final hidden state h_t at position t, the same vector the
target's own output layer turns into the distribution of token t+1, and predicts token t+1+k:
the tokens AFTER next. Each head is one residual block, h + SiLU(W_k h + b_k), followed by the
target's frozen output layer, so it has d_model^2 + d_model parameters of its own (Medusa,
Cai et al. 2024, arXiv 2401.10774, uses the same residual block but gives each head its own
output layer). Proposing costs no extra target pass: the verification pass of the previous
round already produced h_t. What it leaves out: Medusa's tree of candidates (one chain here) and
EAGLE's autoregressive draft over features (arXiv 2401.15077), so acceptance decays with depth.

Trained by `make heads` (`python -m specdec.heads`) on CPU in a few minutes: the target is
frozen; its hidden states on stdlib text are the inputs and the text's own bytes the labels
(Medusa-1's recipe). Seeded; the card is `weights/heads.json`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from specdec.model import WEIGHTS, TinyGPT, load

N_HEADS = 4
SEED = 4321


class SelfDraftHeads(nn.Module):
    def __init__(self, d_model: int, n_heads: int = N_HEADS):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_heads))
        for block in self.blocks:  # start as "copy the hidden state": each head begins as the next-token head
            nn.init.zeros_(block.weight)
            nn.init.zeros_(block.bias)

    def forward(self, h: torch.Tensor, output_layer: nn.Linear) -> torch.Tensor:
        """h (..., d_model) -> logits (..., n_heads, vocab); head k (0-based) predicts k+2 tokens ahead of h's position."""
        return torch.stack([output_layer(h + F.silu(block(h))) for block in self.blocks], dim=-2)


def load_heads(target: TinyGPT) -> SelfDraftHeads:
    card = json.loads((WEIGHTS / "heads.json").read_text())
    heads = SelfDraftHeads(target.config.d_model, card["n_heads"])
    state = torch.load(WEIGHTS / "heads.pt", map_location="cpu", weights_only=True)
    heads.load_state_dict({k: v.float() for k, v in state.items()})
    return heads.to(target.device).eval()


def main(argv=None) -> int:
    from specdec.train import SEQ, batches, build_corpus, lr_at

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args(argv)
    torch.manual_seed(SEED)
    train_data, val_data = build_corpus()
    target = load("target", "cpu")
    for param in target.parameters():
        param.requires_grad_(False)
    heads = SelfDraftHeads(target.config.d_model)
    opt = torch.optim.AdamW(heads.parameters(), lr=1e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(SEED)
    stream = batches(train_data, args.batch, gen, "cpu")
    t0 = time.time()

    def losses(x, y):
        with torch.no_grad():
            _, h = target(x, hidden=True)
        logits = heads(h, target.head)  # (B, T, N, V)
        out = []
        for k in range(N_HEADS):  # head k at position t predicts y[t + k + 1] (= token t + k + 2)
            out.append(F.cross_entropy(logits[:, : SEQ - k - 1, k].reshape(-1, 256), y[:, k + 1:].reshape(-1)))
        return out

    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps, 1e-3, warmup=20)
        x, y = next(stream)
        per_head = losses(x, y)
        opt.zero_grad(set_to_none=True)
        sum(per_head).backward()
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"  step {step:4d}  loss per head " + " ".join(f"{v.item():.3f}" for v in per_head)
                  + f"  {time.time() - t0:.0f}s", flush=True)
    heads.eval()
    with torch.no_grad():
        x, y = next(batches(val_data, 32, torch.Generator().manual_seed(SEED + 1), "cpu"))
        _, h = target(x, hidden=True)
        logits = heads(h, target.head)
        top1 = [round((logits[:, : SEQ - k - 1, k].argmax(-1) == y[:, k + 1:]).float().mean().item(), 4)
                for k in range(N_HEADS)]
        val = [round(v.item(), 4) for v in losses(x, y)]
    print("validation loss per head", val, "top-1 accuracy per head", top1)
    torch.save({k: v.half() for k, v in heads.state_dict().items()}, WEIGHTS / "heads.pt")
    card = dict(n_heads=N_HEADS, d_model=target.config.d_model, seed=SEED, steps=args.steps, batch=args.batch,
                seq=SEQ, device="cpu", torch=torch.__version__, minutes=round((time.time() - t0) / 60, 1),
                params=sum(p.numel() for p in heads.parameters()), val_loss_per_head=val,
                val_top1_per_head=top1,
                note="head k predicts the byte k+2 positions ahead of the hidden state's position")
    (WEIGHTS / "heads.json").write_text(json.dumps(card, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
