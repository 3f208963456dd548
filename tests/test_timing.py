"""specdec.timing: the one timer (fastest of interleaved repeats) and the one definition of c and
verify(k) that notebooks 04 and 05 and `make bench` use. Only ratios' structure is checked here:
timings themselves depend on the machine."""
import pytest

from specdec import timing
from specdec.model import load
from tests.support.fakes import Clock as _Clock, Costly as _Costly


@pytest.fixture(scope="module")
def pair():
    return load("target", "cpu"), load("draft", "cpu")


def test_interleaved_rotates_the_order_and_keeps_every_time():
    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in "abc"}
    times = timing.interleaved(fns, repeats=3)
    assert order == list("abc" "bca" "cab")
    assert all(len(ts) == 3 and min(ts) >= 0 for ts in times.values())
    assert timing.fastest(fns, 2).keys() == fns.keys()


def test_limit_repeats_caps_every_timing():
    calls = []
    try:
        timing.limit_repeats(1)
        timing.interleaved({"a": lambda: calls.append(1)}, repeats=7)
    finally:
        timing.limit_repeats(None)
    assert calls == [1]
    assert timing.capped_repeats(7) == 7 and timing.capped_repeats(0) == 1


@pytest.mark.parametrize("cached, batch, context", [(True, 1, 60), (False, 1, 60), (False, 4, 0)])
def test_step_costs_are_ratios_to_a_one_position_target_step(pair, cached, batch, context):
    target, draft = pair
    costs = timing.step_costs(target, draft if batch == 1 else None, positions=(1, 5), context=context,
                              batch=batch, cached=cached, repeats=2)
    assert costs[1] == 1.0 and costs[5] > 0
    assert ("c" in costs) == (batch == 1) and costs.get("c", 1.0) > 0


def test_costs_from_uses_the_fastest_time_of_the_chosen_repeats():
    times = {("target", 1): [2.0, 1.0, 4.0, 4.0], ("target", 3): [3.0, 9.0, 6.0, 8.0], ("draft", 1): [0.5, 0.5, 1.0, 2.0]}
    assert timing.costs_from(times) == {1: 1.0, 3: 3.0, "c": 0.5}
    assert timing.costs_from(times, slice(2, None)) == {1: 1.0, 3: 1.5, "c": 0.25}


def test_the_kv_cache_holds_one_sequence(pair):
    with pytest.raises(AssertionError):
        timing.step_costs(pair[0], positions=(1, 2), batch=2, cached=True, repeats=1)


# ------------------------------------------------------------------ the per-round overhead o

@pytest.mark.parametrize("s", [0.0, 0.006, 0.028, 0.1, 0.37])
def test_plain_decoding_has_no_round_overhead(s):
    """One o (issue 42): a plain step (one pass, its own work s) is a round with o = 0, exactly."""
    assert timing.per_round_overhead(1.0, s, s) == 0.0


@pytest.mark.parametrize("passes, b, s", [(1.4, 0.05, 0.02), (1.9, 0.3, 0.0), (1.2, 0.01, 0.02), (2.5, 0.167, 0.027)])
def test_the_overhead_is_what_a_round_costs_beyond_its_passes_in_plain_steps(passes, b, s):
    """A round costs passes + b target passes, (passes + b) / (1 + s) plain steps: that is passes + o
    exactly; o is the round's own work minus a plain step's own work for the same passes (in plain
    steps), negative when the round is the leaner of the two per pass."""
    o = timing.per_round_overhead(passes, b, s)
    assert passes + o == pytest.approx((passes + b) / (1 + s), rel=1e-12)
    assert o == pytest.approx((b - s * passes) / (1 + s), rel=1e-12)
    assert (o < 0) == (b < s * passes)


def _notebook_cell(nb, needle):
    import nbformat

    from coursekit.paths import SOURCE

    cells = [c.source for c in nbformat.read(SOURCE / nb / f"{nb}.ipynb", as_version=4).cells
             if c.cell_type == "code" and needle in c.source]
    assert len(cells) == 1, (nb, needle, len(cells))
    return cells[0]


def test_notebook_04_measures_the_same_o_as_loop_costs():
    """Notebook 04's measurement cell computes o with the definition `specdec.practice.loop_costs` (and
    so `make bench` and notebook 05) uses, and predicts with a round cost of passes + o plain steps."""
    import inspect

    from specdec import practice

    cell = _notebook_cell("04_torch_verifier", "loop_work(")
    assert "o = per_round_overhead(passes, b_round, s_plain)" in cell
    assert "per_round / (passes + o)" in cell
    assert "per_round_overhead(K * c + verify, b, s)" in inspect.getsource(practice.loop_costs)

def _toy_loop(target, draft, n=12, global_rng=False):
    """A small sampling loop on the cache API (one draft and one target step per token)."""
    import torch

    gen = None if global_rng else torch.Generator().manual_seed(0)
    tc, dc, seq = target.new_cache(), draft.new_cache(), [0]
    for _ in range(n):
        ids = torch.tensor([seq[tc.length:]], device=target.device)
        draft.extend(torch.tensor([seq[dc.length:]], device=target.device), dc)
        probs = torch.softmax(target.extend(ids, tc)[0, -1].double().cpu(), -1)
        seq.append(int(torch.multinomial(probs, 1, generator=gen)))
    return torch.tensor(seq[1:])


@pytest.fixture
def clock(monkeypatch):
    made_up = _Clock()
    monkeypatch.setattr(timing.time, "perf_counter", made_up)
    return made_up


def test_loop_work_times_each_call_apart_and_keeps_the_rest(clock):
    from specdec.toy import toy_pair

    target, draft = (_Costly(m, clock, lambda k, cost=cost: cost * k)
                     for m, cost in zip(toy_pair("cpu", cache=True), (1.0, 0.25)))
    runs = []

    def loop(t, d):  # 0.5 s of its own work a token, and 10 s more on its first run (a busy moment)
        runs.append(1)
        out = _toy_loop(t, d, n=4)
        clock.now += 4 * 0.5 + (10.0 if len(runs) == 1 else 0.0)
        return out

    out = timing.loop_work(loop, target, draft, repeats=2)
    assert len(runs) == 2  # the fastest repeat is kept
    assert out["seconds"] == pytest.approx(4 * (1.0 + 0.25 + 0.5)) and out["own"] == pytest.approx(2.0)
    assert out["target"] == [(1, 1.0)] * 4 and out["draft"] == [(1, 0.25)] * 4


def test_loop_work_forwards_what_a_loop_reads_of_its_models(clock):
    from specdec.toy import toy_pair

    target, draft = toy_pair("cpu", cache=True)
    target.note = "a loop may read an attribute of its own"
    out = timing.loop_work(lambda t, d: (t.note, _toy_loop(t, d, n=2))[1], target, draft, repeats=1)
    assert [w for w, _ in out["target"]] == [1, 1]


# explain_speedup: every branch, from synthetic numbers (measured, passes-only, with o, o).
VERDICTS = [
    # the passes alone predict a loss: their cost is the cause, whatever o is
    ((0.90, 0.95, 0.88, 0.05), ["passes alone cost more than the tokens", "0.95x", "model with o fits"]),
    ((0.80, 0.95, None, None), ["passes alone cost more than the tokens"]),
    ((1.20, 0.90, None, None), ["although its passes alone predict a loss", "rerun"]),
    # the passes predict a win, the measurement loses: the overhead, with its value
    ((0.91, 1.19, 0.92, 0.28), ["predict a win (1.19x)", "per-round overhead, o = 0.28 plain steps", "model with o fits"]),
    ((0.91, 1.19, None, None), ["predict a win (1.19x)", "work beyond the passes", "not measured here"]),
    ((0.80, 1.30, 1.10, 0.05), ["still predicts a win (1.10x)", "o = 0.05", "Even with o"]),
    # wins: below, near or above the passes-only prediction
    ((1.10, 1.50, 1.12, 0.30), ["less than its passes alone predict", "o = 0.30 plain steps", "model with o fits"]),
    ((1.10, 1.50, None, None), ["less than its passes alone predict", "work beyond the passes"]),
    ((1.40, 1.50, 1.45, 0.07), ["about what its passes alone predict", "small here (o = 0.07", "model with o fits"]),
    ((1.40, 1.50, None, None), ["about what its passes alone predict"]),
    ((2.00, 1.50, 1.40, 0.07), ["more than its passes alone predict", "less than the 2.00x measured"]),
    ((1.00, 1.50, 1.45, 0.07), ["less than its passes alone predict", "Even with o", "ratio 0.69"]),
    # o <= 0 (a round's own work no more than plain decoding's for the same passes) is never the cause
    ((0.90, 1.20, 1.22, -0.02), ["overhead cannot be the cause (o = -0.02", "Even with o"]),
    ((1.10, 1.50, 1.52, -0.02), ["less than its passes alone predict", "not the per-round overhead (o = -0.02"]),
    ((1.50, 1.50, 1.52, -0.02), ["about what its passes alone predict", "negative here (o = -0.02", "model with o fits"]),
]


@pytest.mark.parametrize("numbers, phrases", VERDICTS, ids=[str(n) for n, _ in VERDICTS])
def test_explain_speedup_names_the_cause_in_every_branch(numbers, phrases):
    text = " ".join(timing.explain_speedup(*numbers))
    for phrase in phrases:
        assert phrase in text, (phrase, text)
    measured, passes, with_o, o = numbers
    # the passes are blamed exactly when the round-cost prediction itself is below 1
    assert ("cost more than the tokens" in text) == (passes < 1 and measured < 1)
    # a loss predicted as a win is put down to the overhead, with its value when it was measured
    if passes >= 1 and measured < 1 and (with_o is None or with_o < 1) and (o is None or o > 0):
        assert ("overhead, o = " in text) == (o is not None) and "round-cost model does not count" in text
    # an overhead that is not positive is never named as what costs the difference
    if o is not None and o <= 0:
        assert "overhead, o = " not in text
    assert ("model with o fits" in text) == (with_o is not None and abs(measured / with_o - 1) <= 0.15)


def test_explain_speedup_says_where_an_unmeasured_overhead_is_measured():
    text = " ".join(timing.explain_speedup(0.9, 1.2, unmeasured="section 4 measures it"))
    assert "(section 4 measures it)" in text


def test_when_the_best_K_with_o_is_never_shorter_than_without():
    """Notebook 05, section 7: S_o(K) = S(K) / (1 + o(K)/C(K)). An o >= 0 the same at every K never
    shortens the best K where speculation wins; o = 0.05 + 0.05 K does (alpha .8, c .1: 5 against 6),
    as a draft of cost (c + o_1)/(1 + o_0) with no overhead would; a negative constant o can too."""
    import numpy as np

    from solutions.reference.a05_speculation_in_practice import speedup_general

    Ks = np.arange(0, 17)

    def best(alpha, c, o):
        S = speedup_general(alpha, Ks, c, 1.0, o)
        S[0] = 1.0  # K = 0: plain decoding, no round overhead
        return int(np.argmax(S))

    assert (best(0.8, 0.1, 0.05 + 0.05 * Ks), best(0.8, 0.1, 0.0)) == (5, 6)
    assert best(0.8, (0.1 + 0.05) / 1.05, 0.0) == 5
    shorter_negative = 0
    for alpha in np.linspace(0.05, 0.95, 19):
        for c in np.linspace(0.01, 0.6, 12):
            K0 = best(alpha, c, 0.0)
            for o in (0.02, 0.1, 0.3, 1.0):
                K_o = best(alpha, c, o)
                assert K0 == 0 or K_o == 0 or K_o >= K0, (alpha, c, o)
            K_neg = best(alpha, c, -0.2)
            shorter_negative += K0 > 0 and K_neg < K0
    assert shorter_negative > 0
