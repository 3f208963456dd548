"""specdec.serving: the continuous-batching simulation that notebook 07 will use (issue 34).
Everything is seeded, so each assertion is deterministic; the statistical one states the
probability that a correct sampler would fail it for a random seed."""
from __future__ import annotations

import numpy as np
import pytest

from specdec.serving import Served, accepted_drafts, crossover, simulate, sweep


def _tokens(alpha, K):
    return (1 - alpha ** (K + 1)) / (1 - alpha)


@pytest.mark.parametrize("alpha, K", [(0.3, 1), (0.7, 4), (0.9, 8), (0.0, 3), (1.0, 5)])
def test_accepted_drafts_follow_the_truncated_geometric_law(alpha, K):
    n = 200_000
    draws = accepted_drafts(np.random.default_rng(1), alpha, K, n)
    assert draws.min() >= 0 and draws.max() <= K
    mean = _tokens(alpha, K) - 1 if alpha < 1 else K
    var = float(np.var(draws)) or 1e-12
    # 6 standard errors: a correct sampler fails this with probability below 2e-9 for a random seed
    assert abs(draws.mean() - mean) <= 6 * np.sqrt(var / n) + 1e-12
    for k in range(1, K + 1):  # P(A >= k) = alpha**k
        p = alpha ** k
        assert abs((draws >= k).mean() - p) <= 6 * np.sqrt(max(p * (1 - p), 1e-12) / n) + 1e-12


def test_plain_decoding_on_an_idle_server_takes_one_step_a_token():
    dt, n = 0.01, 50
    out = simulate(0.1, lambda B, K: dt, lambda B: 0, alpha=0.5, output_tokens=n, requests=300, warmup=10)
    assert out.mean_K == 0 and out.mean_batch == pytest.approx(1.0, abs=0.05)
    assert n * dt - 1e-9 <= out.mean_latency <= (n + 1) * dt  # at most one step's wait to join


def test_a_run_is_reproducible_and_alpha_does_not_touch_plain_decoding():
    step = lambda B, K: 0.002 + 1e-4 * B * (K + 1)  # noqa: E731
    a = simulate(20, step, lambda B: 3, alpha=0.6, requests=400, warmup=50, seed=7)
    assert a == simulate(20, step, lambda B: 3, alpha=0.6, requests=400, warmup=50, seed=7)
    plain = [simulate(20, step, lambda B: 0, alpha=al, requests=400, warmup=50, seed=7) for al in (0.2, 0.9)]
    assert plain[0] == plain[1]


def test_crossover_interpolates_the_first_sign_change():
    def rows(values):
        return [Served(0, v, v, 0, 0, 0, 0) for v in values]

    assert crossover([1, 2, 3], rows([1, 1, 3]), rows([2, 2, 2])) == pytest.approx(2.5)
    assert crossover([1, 2], rows([1, 1]), rows([2, 2])) is None
    assert crossover([1, 2], rows([3, 3]), rows([2, 2])) == 1.0


def test_fixed_K_loses_at_high_load_and_a_goodput_rule_does_not():
    """A roofline-shaped cost model (memory-bound floor, then compute-bound): speculation with a
    fixed K halves the latency at low rates and multiplies it at high ones; choosing each step's K
    (0 allowed) by goodput follows the better of the two."""
    def verify(tokens):
        return max(0.010, tokens * 1e-4)

    def step(B, K):
        return K * 0.1 * verify(B) + verify(B * (K + 1)) + 0.0005

    alpha = 0.7

    def goodput_K(B):
        return int(np.argmax([B * _tokens(alpha, K) / step(B, K) for K in range(9)]))

    rates = [5, 20, 40, 70]
    res = sweep(rates, step, {"plain": lambda B: 0, "fixed": lambda B: 4, "goodput": goodput_K}, alpha,
                requests=1200, output_tokens=128, warmup=200)
    plain, fixed, good = (res[k] for k in ("plain", "fixed", "goodput"))
    assert fixed[0].mean_latency < 0.6 * plain[0].mean_latency  # low load: speculation wins
    assert fixed[-1].mean_latency > 3 * plain[-1].mean_latency  # high load: it loses badly
    assert 20 < crossover(rates, fixed, plain) < 70
    for g, f, p in zip(good, fixed, plain):
        assert g.mean_latency <= 1.05 * min(f.mean_latency, p.mean_latency)
    assert good[0].mean_K > good[-1].mean_K  # the chosen K falls as the batch grows
