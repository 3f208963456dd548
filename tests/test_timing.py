"""specdec.timing: the one timer (fastest of interleaved repeats) and the one definition of c and
verify(k) that notebooks 04 and 05 and `make bench` use. Only ratios' structure is checked here:
timings themselves depend on the machine."""
import pytest

from specdec import timing
from specdec.model import load


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
