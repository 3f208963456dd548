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


C_LABEL = "c = draft pass time / target pass time"


def with_overhead(S, K, c, o):
    """The speedup once every round also pays a per-round overhead of o plain decoding steps (what
    a round costs beyond 1 + K c: its own work, sampling, the acceptance test, rollback, reading
    results back to the host, Python, minus a plain step's own work for the same passes; notebook
    02's o, `specdec.timing.per_round_overhead`), the same at every K: from
    S = E / (1 + K c), return E / (1 + K c + o) = S (1 + K c) / (1 + K c + o). Broadcasts over
    S, K and c. It rescales the learner's own `speedup`, whose API takes no overhead; at o = 0 it
    returns S itself. At K = 0 it gives 1/(1 + o): the speculative loop with no drafts, slower
    than plain decoding by its overhead."""
    if o == 0:
        return S
    cost = 1.0 + np.asarray(K) * np.asarray(c, dtype=float)
    return np.asarray(S, dtype=float) * cost / (cost + o)


def speedup_grid(speedup, n=300, K_max=16, c_max=1.0):
    """(alpha (n,), c (n,), K (K_max+1,), S (n, n, K_max+1)): speedup(alpha, K, c) on an n x n
    grid of (alpha, c) for K = 0..K_max, in one vectorised call."""
    alpha = np.linspace(0.0, 0.99, n)[:, None, None]
    c = np.linspace(0.0, c_max, n)[None, :, None]
    K = np.arange(K_max + 1)[None, None, :]
    S = np.asarray(speedup(alpha, K, c))
    return alpha.ravel(), c.ravel(), K.ravel(), S


def best_over_K(S, K, c, o=0.0):
    """(best speedup, its K) over the last axis of a grid S = speedup(alpha, K, c) (as from
    `speedup_grid`), with a per-round overhead of o plain steps. K = 0 means "do not speculate":
    with o > 0 its column is plain decoding (exactly 1), not the speculative loop with no drafts
    (1/(1 + o)), so the best is never below 1. At o = 0 it is S.max and S.argmax unchanged."""
    if o == 0:
        return S.max(axis=-1), S.argmax(axis=-1)
    S = with_overhead(S, K, np.asarray(c)[:, None], o)
    S[..., 0] = 1.0
    return S.max(axis=-1), S.argmax(axis=-1)  # argmax: the smallest K on ties, as optimal_K


def best_speedup_grid(speedup, n=300, K_max=16, c_max=1.0, overhead=0.0):
    """Best achievable speedup max_K speedup(alpha, K, c) on an n x n grid of (alpha, c); with an
    `overhead` o > 0 per round, max over K of E / (1 + K c + o), plain decoding (1) included."""
    alpha, c, K, S = speedup_grid(speedup, n=n, K_max=K_max, c_max=c_max)
    return (alpha, c) + best_over_K(S, K, c, overhead)


def best_speedup_heatmap(speedup, ax=None, K_max=16, n=300):
    """Heat map of the best achievable speedup (K = 0..K_max, K = 0 meaning plain decoding)."""
    alphas, cs, best, _ = best_speedup_grid(speedup, n=n, K_max=K_max)
    ax = ax or plt.subplots(figsize=(5.5, 4.2))[1]
    mesh = ax.pcolormesh(cs, alphas, best, shading="auto", cmap="viridis", vmin=1.0, vmax=min(5.0, best.max()))
    ax.figure.colorbar(mesh, ax=ax, label=f"best speedup over K = 0..{K_max}")
    ax.contour(cs, alphas, best, levels=[1.5, 2, 3, 4], colors="white", linewidths=0.6)
    ax.plot([0, 0.99], [0, 0.99], "w--", linewidth=1)
    ax.text(0.55, 0.42, "alpha <= c:\nnever wins", color="white", fontsize=8)
    ax.set_xlabel(C_LABEL)
    ax.set_ylabel("acceptance rate alpha")
    ax.set_title("best achievable speedup (contours 1.5x, 2x, 3x, 4x)")
    return ax


def break_even_frontier(break_even_alpha, Ks=(1, 2, 4, 8), ax=None):
    """alpha needed to break even, as a function of c, one curve per K; below a curve, that K loses."""
    ax = ax or plt.subplots(figsize=(5.5, 4.2))[1]
    cs = np.linspace(0.0, 0.99, 100)
    for K in Ks:
        ax.plot(cs, [break_even_alpha(K, c) for c in cs], label=f"K = {K}")
    ax.fill_between(cs, 0, cs, color="tab:red", alpha=0.12, label="alpha <= c: loses for every K")
    ax.set_xlabel(C_LABEL)
    ax.set_ylabel("break-even acceptance rate alpha")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("speculation wins above its curve")
    ax.legend(fontsize=8, loc="lower right")
    return ax


def optimal_K_map(optimal_K, K_max=16, n=60, ax=None):
    """Which K maximises the speedup, over (alpha, c); 0 means do not speculate."""
    alphas = np.linspace(0.0, 0.99, n)
    cs = np.linspace(0.0, 0.6, n)
    best = np.array([[optimal_K(a, c, K_max) for c in cs] for a in alphas])
    ax = ax or plt.subplots(figsize=(5.5, 4.2))[1]
    mesh = ax.pcolormesh(cs, alphas, best, shading="auto", cmap="magma")
    ax.figure.colorbar(mesh, ax=ax, label="optimal K (0 = do not speculate)")
    ax.set_xlabel(C_LABEL)
    ax.set_ylabel("acceptance rate alpha")
    ax.set_title(f"optimal draft length, K_max = {K_max}")
    return ax


def rejection_sampling_check(speculative_sample, acceptance_rate, V=8, n=10_000, pairs=25,
                             n_per_pair=1_000, seed=0):
    """Left: tokens from the learner's speculative_sample against the target p (and the draft q).
    Right: acceptance frequency against the learner's acceptance_rate for random (p, q) pairs.

    beta is the acceptance probability at one position (one pair p, q); alpha, its average over
    positions, does not appear here."""
    rng = np.random.default_rng(seed)
    p_target = rng.dirichlet(np.full(V, 0.8))
    q_draft = rng.dirichlet(np.full(V, 0.8))
    tokens = np.array([speculative_sample(p_target, q_draft, rng)[0] for _ in range(n)])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(V)
    left.bar(x - 0.2, np.bincount(tokens, minlength=V) / n, width=0.4, label=f"emitted ({n:,} samples)")
    left.bar(x + 0.2, p_target, width=0.4, alpha=0.6, label="target p")
    left.step(x, q_draft, where="mid", color="k", linestyle="--", label="draft q (proposals)")
    left.set_xlabel("token")
    left.set_ylabel("probability")
    left.set_title(f"emitted tokens follow p (β = {float(acceptance_rate(p_target, q_draft)):.2f})")
    left.legend(fontsize=8)

    predicted, measured = [], []
    for _ in range(pairs):
        p, q = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
        predicted.append(float(acceptance_rate(p, q)))
        measured.append(np.mean([speculative_sample(p, q, rng)[1] for _ in range(n_per_pair)]))
    right.plot([0, 1], [0, 1], "k:", linewidth=1)
    right.plot(predicted, measured, "o")
    right.set_xlabel("β = acceptance_rate(p, q) = Σ min(p, q)")
    right.set_ylabel(f"accepted fraction of {n_per_pair:,} samples")
    right.set_title("acceptance frequency matches β = 1 - TV(p, q)")
    fig.tight_layout()
    return fig
