"""`make distill`: notebook 08's drafts, one per loss and data source, distilled from the shipped target.

    python -m solutions.distill [--steps 300] [--only forward_kl-corpus ...] [--device cpu]

Each starts from the shipped draft (`specdec/weights/draft.pt`) and takes `--steps` AdamW steps of
`specdec.distill.fine_tune` with one of the four losses of notebook 08 (the reference answers,
solutions/reference/a08_raising_alpha.py) on corpus windows or on on-policy batches (the reference
`on_policy_batch`), with the same seed, so that the eight differ only in the loss and the data.
Weights go to specdec/weights/distilled/<loss>-<source>.pt (fp16) with a training card (.json):
the settings, the machine, the loss curve's ends and alpha on held-out code before and after.
This lives under solutions/ because it trains with the answers; the learner's package ships the
weights and cards, not this script. Seeded: the same machine and torch give the same weights.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import torch

from solutions.reference import a08_raising_alpha as ref
from specdec import distill
from specdec.model import WEIGHTS, load, save

LOSS_FUNCTIONS = {"forward_kl": ref.forward_kl, "reverse_kl": ref.reverse_kl,
                  "total_variation": ref.total_variation, "jensen_shannon": ref.jensen_shannon}
STEPS = 600


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--only", nargs="*", default=None, help="<loss>-<source> names (default: all eight)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--recard", action="store_true", help="only re-measure the saved drafts into their cards")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    target = load("target", args.device)
    contexts = distill.held_out()
    if args.recard:
        for name in distill.DISTILLED.values():
            recard(target, name, contexts)
        return 0
    start = distill.acceptance_rates(target, load("draft", args.device), contexts)
    print(f"shipped draft on held-out code: {start}")
    (WEIGHTS / "distilled").mkdir(exist_ok=True)
    for (loss, source), name in distill.DISTILLED.items():
        if args.only and f"{loss}-{source}" not in args.only:
            continue
        draft = load("draft", args.device)
        t0 = time.perf_counter()
        print(f"{name}: {args.steps} steps", flush=True)
        curve = distill.fine_tune(draft, target, LOSS_FUNCTIONS[loss], source=source, collect=ref.on_policy_batch,
                                  steps=args.steps, log_every=50)
        minutes = (time.perf_counter() - t0) / 60
        card = dict(loss=loss, source=source, start="the shipped draft (specdec/weights/draft.pt)",
                    steps=args.steps, batch=distill.BATCH, seq=distill.SEQ, prompt=distill.PROMPT, lr=distill.LR,
                    temperature=distill.TEMPERATURE, seed=distill.SEED, device=args.device, torch=torch.__version__,
                    machine=f"{platform.machine()}, {torch.get_num_threads()} torch threads",
                    minutes=round(minutes, 1),
                    loss_first_20=round(sum(curve[:20]) / 20, 4), loss_last_20=round(sum(curve[-20:]) / 20, 4),
                    held_out_before={k: round(v, 4) for k, v in start.items()})
        save(draft.cpu(), name, card)
        recard(target, name, contexts)
    return 0


def recard(target, name: str, contexts) -> dict:
    """Measure the saved (fp16) draft on held-out code and write it into its card: what a learner loads."""
    path = WEIGHTS / f"{name}.json"
    card = json.loads(path.read_text())
    after = distill.acceptance_rates(target, load(name, target.device), contexts)
    card.update(held_out_after={k: round(v, 4) for k, v in after.items()},
                held_out="32 windows of 128 bytes of the held-out files (specdec.distill.held_out), the fp16 weights")
    path.write_text(json.dumps(card, indent=1) + "\n")
    print(f"  {name}: held-out alpha {card['held_out_after']} (fp16 weights as shipped)", flush=True)
    return card


if __name__ == "__main__":
    sys.exit(main())
