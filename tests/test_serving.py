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
    out = simulate(0.1, lambda B, K, L: dt, lambda B, L: 0, alpha=0.5, output_tokens=n, requests=300, warmup=10)
    assert out.mean_K == 0 and out.mean_batch == pytest.approx(1.0, abs=0.05)
    assert n * dt - 1e-9 <= out.mean_latency <= (n + 1) * dt  # at most one step's wait to join


def test_a_run_is_reproducible_and_alpha_does_not_touch_plain_decoding():
    step = lambda B, K, L: 0.002 + 1e-4 * B * (K + 1)  # noqa: E731
    a = simulate(20, step, lambda B, L: 3, alpha=0.6, requests=400, warmup=50, seed=7)
    assert a == simulate(20, step, lambda B, L: 3, alpha=0.6, requests=400, warmup=50, seed=7)
    plain = [simulate(20, step, lambda B, L: 0, alpha=al, requests=400, warmup=50, seed=7) for al in (0.2, 0.9)]
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

    def step(B, K, L):
        return K * 0.1 * verify(B) + verify(B * (K + 1)) + 0.0005

    alpha = 0.7

    def goodput_K(B, L):
        return int(np.argmax([B * _tokens(alpha, K) / step(B, K, L) for K in range(9)]))

    rates = [5, 20, 40, 70]
    res = sweep(rates, step, {"plain": lambda B, L: 0, "fixed": lambda B, L: 4, "goodput": goodput_K}, alpha,
                requests=1200, output_tokens=128, warmup=200)
    plain, fixed, good = (res[k] for k in ("plain", "fixed", "goodput"))
    assert fixed[0].mean_latency < 0.6 * plain[0].mean_latency  # low load: speculation wins
    assert fixed[-1].mean_latency > 3 * plain[-1].mean_latency  # high load: it loses badly
    assert 20 < crossover(rates, fixed, plain) < 70
    for g, f, p in zip(good, fixed, plain):
        assert g.mean_latency <= 1.05 * min(f.mean_latency, p.mean_latency)
    assert good[0].mean_K > good[-1].mean_K  # the chosen K falls as the batch grows


def test_pass_time_is_notebook_05s_roofline_with_both_caches():
    """PassTime.roofline gives what 05's reference roofline_time gives, for every batch, positions and context."""
    from solutions.reference.a05_speculation_in_practice import roofline_time
    from specdec.serving import PassTime

    model = dict(params=8.03e9, bytes_per_param=2, kv_bytes_per_token=131072, attn_flops_per_pair=524288)
    hardware = dict(bandwidth=3.35e12, flops=989e12)
    t = PassTime.roofline(model["params"], model["kv_bytes_per_token"], model["attn_flops_per_pair"], **hardware)
    for batch in (1, 8, 64, 256):
        for tokens in (1, 5, 17):
            for context in (0, 512, 4096, 32768):
                want = roofline_time(batch, tokens, context, model, hardware)
                assert t(batch, tokens, context) == pytest.approx(want, rel=1e-12)


def test_pass_time_steps_and_tables_and_crosses_the_wire_as_a_description():
    from specdec.madeby import MadeBy
    from specdec.serving import PassTime

    tiles = PassTime(per_position=0.01 / 64, tile=64)
    assert [round(tiles(48, K + 1), 12) for K in range(5)] == [0.01, 0.02, 0.03, 0.03, 0.04]
    table = PassTime(knots="1:0.001 4:0.002 16:0.004", per_pair=1e-7)
    assert table(1, 1) == pytest.approx(0.001) and table(2, 2) == pytest.approx(0.002)  # 4 positions in all
    assert table(8, 4) == pytest.approx(0.004 + (0.002 / 12) * 16)  # past the last knot: the last slope
    assert table(4, 4, 100) == pytest.approx(0.004 + 1e-7 * 16 * 100)  # attention to the cache
    for t in (tiles, table, PassTime.roofline(1.24e9, 32768, 131072, 3.35e12, 989e12)):
        copy = MadeBy.from_json(t.made_by.to_json()).build()
        assert copy == t and copy(64, 5, 1000) == t(64, 5, 1000)


def test_the_best_K_at_large_batch_grows_with_the_context():
    """Issue 42's figures: alpha 0.8, batch 256, Llama-3-8B with a 1B draft on an H100, both caches counted."""
    from solutions.checks.a07 import TIMES
    from solutions.reference import a07_speculation_in_a_server as ref

    target, draft = TIMES["roofline"]
    got = [ref.best_K(0.8, 256, target, draft, context=L) for L in (0, 512, 1024, 4096)]
    assert got == [0, 1, 2, 3]
    gain = ref.goodput(0.8, 1, 256, target, draft, context=512) / ref.goodput(0.8, 0, 256, target, draft, context=512)
    assert gain == pytest.approx(1.50, abs=0.005)
    assert ref.goodput(0.8, 0, 4, target, draft, overhead=1.0) == ref.goodput(0.8, 0, 4, target, draft)  # plain: no o


def test_contexts_grow_and_a_step_is_priced_at_the_batchs_mean_context():
    seen = []

    def step(B, K, L):
        seen.append(L)
        return 0.01

    out = simulate(1.0, step, lambda B, L: 0, alpha=0.5, output_tokens=20, requests=30, warmup=5,
                   prompt_tokens=(100, 200), seed=3)
    assert min(seen) >= 100 and max(seen) <= 220 and 100 <= out.mean_context <= 220
    assert any(b > a for a, b in zip(seen, seen[1:]))  # a request's context grows step by step


def test_turning_speculation_back_on_pays_the_drafts_catch_up():
    """A policy that alternates K = 0 and K = 2 pays one catch-up pass after each plain step; fixed K and
    plain decoding never do; without catch_up the switch is free."""
    step = lambda B, K, L: 0.01  # noqa: E731
    calls = []

    def catch_up(rows, tokens, L):
        calls.append((rows, tokens))
        return 0.004

    flip = iter(range(10**6))
    alternate = lambda B, L: 2 * (next(flip) % 2)  # noqa: E731
    kw = dict(alpha=0.7, output_tokens=32, requests=60, warmup=10, seed=5)
    free = simulate(2.0, step, alternate, **kw)
    flip = iter(range(10**6))
    paid = simulate(2.0, step, alternate, catch_up=catch_up, **kw)
    assert calls and all(tokens >= 1 and rows >= 1 for rows, tokens in calls)
    assert paid.catch_up > 0 and free.catch_up == 0 and paid.mean_latency > free.mean_latency
    for K in (0, 3):
        calls.clear()
        assert simulate(2.0, step, lambda B, L, K=K: K, catch_up=catch_up, **kw).catch_up == 0 and not calls


def test_measured_pass_time_fits_the_cost_of_the_context():
    """Times made from a known table plus known costs of the context (reading every row's cache; attention's
    arithmetic per scored position) are read back, in the roofline's shape."""
    from specdec.serving import measured_pass_time

    def true(B, T, L):
        return 0.001 + 1e-5 * B * T + max(3e-7 * B * L, 2e-8 * B * T * L)

    times = {("target", B, T, 8): true(B, T, 8) for B in (1, 4, 16) for T in (1, 3, 9, 27)}
    times.update({("target", B, T, 160): true(B, T, 160) for B in (1, 4, 16) for T in (1, 27)})
    fitted = measured_pass_time(times, "target")
    assert fitted.per_cached == pytest.approx(3e-7, rel=1e-6) and fitted.per_pair == pytest.approx(2e-8, rel=1e-6)
    for B, T, L in [(1, 1, 0), (4, 3, 50), (16, 9, 200), (16, 27, 100), (2, 5, 120)]:
        assert fitted(B, T, L) == pytest.approx(true(B, T, L), rel=1e-6)


def test_the_batched_loops_overhead_is_notebook_05s_o_in_seconds():
    """batch_round_overhead takes a batched loop apart: it finds the plain steps and the rounds among the
    target's calls, and its o is 05's o (specdec.timing.per_round_overhead) times a plain step's pass."""
    from solutions.reference import a07_speculation_in_a_server as ref
    from specdec.model import encode, load
    from specdec.serving import batch_round_overhead
    from specdec.timing import per_round_overhead

    target, draft = load("target", "cpu"), load("draft", "cpu")
    prompts = [encode("def parse(self, path):\n"), encode("import os\n")]
    parts = batch_round_overhead(ref.batched_generate, target, draft, prompts, K=2, new_tokens=6, repeats=1)
    assert 2 <= parts["rounds"] <= 6  # 6 tokens a row, 1 to 3 a round
    assert parts["t"] > 0 and parts["P"] > 0 and parts["s"] >= 0 and parts["b"] >= 0
    t = parts["t"]
    assert parts["o"] == pytest.approx(t * per_round_overhead(parts["P"] / t, parts["b"] / t, parts["s"] / t))


def test_with_long_prompts_fixed_K_no_longer_loses_at_high_load():
    """The reversal that the cache brings (notebook 07, section 4): on the published roofline (Llama-3-8B with
    a 1B draft, H100, both caches) fixed K = 4 loses at high load without prompts, and with prompts of 1-2k
    tokens it beats plain decoding at every rate, up to past plain decoding's capacity."""
    from solutions.checks.a07 import TIMES

    target, draft = TIMES["roofline"]

    def step(B, K, L):
        return target(B, K + 1, L) + K * draft(B, 1, L)

    policies = {"plain": lambda B, L: 0, "fixed": lambda B, L: 4}
    kw = dict(requests=600, output_tokens=128, warmup=100, seed=7, catch_up=draft)
    short = sweep([350, 450], step, policies, 0.8, max_batch=256, **kw)
    assert all(f.mean_latency > p.mean_latency for f, p in zip(short["fixed"], short["plain"]))
    long = sweep([20, 60, 90], step, policies, 0.8, max_batch=128, prompt_tokens=(1024, 2048), **kw)
    assert all(f.mean_latency < 0.6 * p.mean_latency for f, p in zip(long["fixed"], long["plain"]))
