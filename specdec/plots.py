"""Plots for the notebooks. Each takes the learner's functions as arguments, so the picture
shows the learner's own implementation against the learner's own formula."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def monte_carlo_check(accepted_pmf, expected_tokens, simulate_tokens, alpha=0.8, K=4,
                      rounds=20_000, seed=0, Ks=(1, 2, 4, 8)):
    """Left: histogram of simulated tokens per round against the pmf at one (alpha, K).
    Right: simulated mean tokens per round against expected_tokens over alpha, for several K,
    with the K -> infinity ceiling 1/(1 - alpha)."""
    rng = np.random.default_rng(seed)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))

    draws = np.asarray(simulate_tokens(alpha, K, rounds, rng))
    emitted = np.arange(1, K + 2)
    freq = np.array([(draws == n).mean() for n in emitted])
    left.bar(emitted, freq, width=0.6, alpha=0.6, label=f"simulated ({rounds:,} rounds)")
    left.plot(emitted, accepted_pmf(alpha, K), "ko", label="accepted_pmf, shifted by the +1 token")
    left.set_xlabel("tokens emitted in one round (accepted + 1)")
    left.set_ylabel("probability")
    left.set_xticks(emitted)
    left.set_title(f"alpha = {alpha}, K = {K}")
    left.legend(fontsize=8)

    grid = np.linspace(0.0, 0.98, 99)
    sim_alphas = np.linspace(0.05, 0.95, 10)
    for K_ in Ks:
        line, = right.plot(grid, expected_tokens(grid, K_), label=f"K = {K_}: formula")
        means = [np.mean(simulate_tokens(a, K_, 4_000, rng)) for a in sim_alphas]
        right.plot(sim_alphas, means, "o", color=line.get_color(), markersize=4)
    right.plot(grid, 1 / (1 - grid), "k--", linewidth=1, label="1/(1 - alpha): K = infinity")
    right.set_ylim(0.8, max(Ks) + 2)
    right.set_xlabel("acceptance rate alpha")
    right.set_ylabel("expected tokens per round")
    right.set_title("dots: simulated means (4,000 rounds each)")
    right.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
