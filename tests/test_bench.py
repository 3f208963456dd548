"""`make bench`'s busy-machine rule (benchmarks/speculative.py), on made-up timings: no timing here."""
import importlib.util

import pytest

from coursekit.paths import REPO

_spec = importlib.util.spec_from_file_location("bench_speculative", REPO / "benchmarks" / "speculative.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

STEADY = dict(speedups_by_repeat=[1.50, 1.55], predicted_by_repeat=[1.48, 1.52], step_before_ms=2.00, step_after_ms=2.05)


def test_spread_is_range_over_median():
    assert bench.spread([1.0]) == 0.0
    assert bench.spread([1.0, 1.2]) == pytest.approx(0.2 / 1.1)
    assert bench.spread([0.9, 1.0, 1.2]) == pytest.approx(0.3)


def test_steady_row_passes():
    assert bench.busy_reasons(**STEADY) == []


@pytest.mark.parametrize("field, values, reason", [
    ("speedups_by_repeat", [1.30, 1.60], "speedup repeats"),
    ("predicted_by_repeat", [1.30, 1.60], "prediction repeats"),
])
def test_estimates_that_disagree_by_more_than_the_threshold_mark_the_row(field, values, reason):
    reasons = bench.busy_reasons(**{**STEADY, field: values})
    assert len(reasons) == 1 and reasons[0].startswith(reason)


def test_a_quoted_speedup_outside_its_own_repeats_marks_the_row():
    """Each repeat's ratio can agree (1.34x and 1.35x) while the fastest plain run of one repeat over the fastest
    speculative run of the other gives 1.57x: the pair was slowed in different repeats (seen on 2026-12-05)."""
    steady = {**STEADY, "speedups_by_repeat": [1.34, 1.35]}
    assert bench.busy_reasons(**steady, measured=1.40) == []
    reasons = bench.busy_reasons(**steady, measured=1.57)
    assert len(reasons) == 1 and reasons[0].startswith("fastest of each vs a repeat 17%")


@pytest.mark.parametrize("before, after", [(2.0, 2.6), (2.6, 2.0)])
def test_step_cost_that_moves_during_the_row_marks_it_either_way(before, after):
    reasons = bench.busy_reasons(**{**STEADY, "step_before_ms": before, "step_after_ms": after})
    assert reasons == [f"step cost {before:.2f}->{after:.2f} ms"]


def test_step_cost_has_its_own_wider_threshold():
    """The machine's absolute speed is noisier than side-by-side ratios: a 20 % move is not a regime change."""
    assert bench.busy_reasons(**{**STEADY, "step_before_ms": 2.0, "step_after_ms": 2.4}) == []
    assert bench.busy_reasons(**{**STEADY, "step_before_ms": 2.0, "step_after_ms": 2.4}, pulse=0.1)


def test_the_costs_timed_alone_are_judged_once_for_the_run():
    """c and verify timed alone no longer predict the speedup: their halves do not mark every row, one line says
    whether their columns can be quoted."""
    steady = {"c": [0.12, 0.118, 0.121], 2: [1.10, 1.09, 1.11], "unit": 0.002}
    assert bench.alone_note(steady).endswith("up to 3% (threshold 10%): quote them.")
    assert "do not quote" in bench.alone_note({**steady, 5: [1.5, 1.3, 1.6]})


def _rows(marked, total):
    return [dict(T=0.0, K=k, busy=["speedup repeats 12%"] if k < marked else []) for k in range(total)]


@pytest.mark.parametrize("marked, verdict", [(0, "quiet: every row"), (4, "quiet enough: 4 of 18"),
                                             (5, "MACHINE TOO BUSY"), (18, "MACHINE TOO BUSY")])
def test_run_verdict_counts_marked_rows(marked, verdict):
    line = bench.run_verdict(_rows(marked, 18))
    assert line.startswith(verdict), line
    if marked:
        assert "T=0 K=0" in line


def test_threshold_is_strict_and_adjustable():
    just_under = {**STEADY, "speedups_by_repeat": [1.0, 1.0999]}
    assert bench.busy_reasons(**just_under) == []
    assert bench.busy_reasons(**just_under, threshold=0.05)


def test_run_drift():
    assert bench.run_drift([2.0, 2.1, 2.0]) == pytest.approx(0.05)
    assert bench.run_drift([2.0, 3.0]) == pytest.approx(0.5)


def test_a_run_is_predicted_from_its_prefill_and_its_rounds():
    """predict_run: each term the median over the timed runs; n plain steps (the last without a pass) against
    n / E rounds, each run with its prefill."""
    terms = [dict(c=0.1, verify=1.2, b=0.05, s=0.02, prefill_plain=3.0, prefill_spec=3.5),
             dict(c=0.3, verify=1.4, b=0.15, s=0.04, prefill_plain=5.0, prefill_spec=5.5),
             dict(c=0.2, verify=1.3, b=0.10, s=0.03, prefill_plain=4.0, prefill_spec=4.5)]
    loop, a_round, a_run = bench.predict_run(terms, E=2.5, K=2, n=100)
    assert loop == dict(c=0.2, verify=1.3, b=0.10, s=0.03, prefill_plain=4.0, prefill_spec=4.5)
    assert a_round == pytest.approx(2.5 * 1.03 / (0.4 + 1.3 + 0.1))
    assert a_run == pytest.approx((4.0 + 99 + 100 * 0.03) / (4.5 + 100 / 2.5 * 1.8))
    assert bench.predict_run(terms, E=1.0, K=0, n=100)[1] == pytest.approx(1.0)  # K = 0 is a plain step


def test_the_ratio_to_the_no_overhead_limit_takes_each_temperature_s_best_and_largest_limit():
    """limit_ratio: per temperature, the best measured speedup over the largest prediction from c and verify timed
    alone (o = 0), whichever K each comes from; the report and the summary print it."""
    rows = [dict(T=T, K=K, measured=m, pred_v=p) for T, K, m, p in (
        (0.0, 0, 1.00, 1.00), (0.0, 2, 1.80, 2.10), (0.0, 4, 2.00, 2.40), (0.0, 6, 1.90, 2.50),
        (1.0, 0, 1.00, 1.00), (1.0, 2, 1.40, 1.70), (1.0, 4, 1.30, 1.75))]
    ratio, best, limit = bench.limit_ratio(rows, 0.0)
    assert ratio == pytest.approx(2.00 / 2.50) and best["K"] == 4 and limit["K"] == 6
    assert bench.limit_ratio(rows, 1.0)[0] == pytest.approx(1.40 / 1.75)
    line = bench.ratio_line(rows)
    assert "T=0: best measured 2.00x (K=4) / limit 2.50x (K=6) = 0.80" in line
    assert "T=1: best measured 1.40x (K=2) / limit 1.75x (K=4) = 0.80" in line


def _grading_bench():
    spec = importlib.util.spec_from_file_location("bench_grading", REPO / "benchmarks" / "grading.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_grade_names_every_assignment_and_cell_where_before_and_after_differ():
    """make bench-grade's two configurations must grade alike; `differences` says where they do not (the bench
    then exits 1): a cell's score or hint, a submission's score or flags, a submission graded only once."""
    from types import SimpleNamespace as NS

    def row(assignment, score, cells, flags=()):
        return NS(student="learner00", assignment=assignment, score=score, flags=list(flags),
                  cells=[NS(grade_id=g, score=s, hint=h) for g, s, h in cells])

    before = [row("01_a", 5, [("t1", 3, None), ("t2", 2, None)]), row("04_b", 4, [("t3", 4, None)]),
              row("05_c", 1, [("t4", 1, None)])]
    after = [row("01_a", 5, [("t1", 3, None), ("t2", 2, None)]), row("04_b", 2, [("t3", 2, "a hint")], ["timeout"])]
    bench_grading = _grading_bench()
    assert bench_grading.differences(before, before) == []
    lines = bench_grading.differences(before, after)
    assert any("04_b" in line and "score 4 before, 2 after" in line for line in lines), lines
    assert any("04_b" in line and "cell t3" in line and "a hint" in line for line in lines), lines
    assert any("05_c" in line and "graded only before" in line for line in lines), lines
    assert not any("01_a" in line for line in lines), lines
