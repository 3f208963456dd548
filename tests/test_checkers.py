"""The checkers behind the hidden tests, called directly (fast; nbgrader is in test_grading.py).

Every reference function and every differently written correct answer passes; every known
mistake fails with a hint that names it.
"""
import importlib

import numpy as np
import pytest

from solutions.checks import a01, a02, a03, a04, a05
from solutions.checks._common import CheckFailure
from solutions.reference import a01_acceptance_chain as ref01
from solutions.reference import a02_cost_and_speedup as ref02
from solutions.reference import a03_rejection_sampling as ref03
from solutions.reference import a04_torch_verifier as ref04
from solutions.reference import a05_speculation_in_practice as ref05

ANSWERS = {nb: importlib.import_module(f"tests.answers_{nb}") for nb in ("01", "02", "03", "04", "05")}
REFERENCE = {"01": ref01, "02": ref02, "03": ref03, "04": ref04, "05": ref05}
CHECKERS = {
    "01": {
        "accepted_pmf": [a01.check_accepted_pmf],
        "expected_tokens": [a01.check_expected_tokens, a01.check_expected_tokens_edges],
        "expected_tokens_edges": [a01.check_expected_tokens_edges],
        "simulate_tokens": [a01.check_simulate_tokens],
    },
    "02": {
        "round_cost": [a02.check_round_cost],
        "speedup": [a02.check_speedup, a02.check_speedup_arrays],
        "loses": [a02.check_loses],
        "break_even_alpha": [a02.check_break_even_alpha],
        "optimal_K": [a02.check_optimal_K],
    },
    "03": {
        "acceptance_rate": [a03.check_acceptance_rate],
        "residual_distribution": [a03.check_residual_distribution],
        "speculative_sample": [a03.check_speculative_sample],
        "verify_round": [a03.check_verify_round],
    },
    "04": {
        "autoregressive_generate": [a04.check_autoregressive_generate, a04.check_autoregressive_reproducible],
        "speculative_generate": [a04.check_speculative_greedy, a04.check_speculative_stats,
                                 a04.check_speculative_distribution, a04.check_speculative_bonus,
                                 a04.check_speculative_reproducible],
    },
    "05": {
        "expected_tokens_positional": [a05.check_expected_tokens_positional],
        "speedup_general": [a05.check_speedup_general],
        "ngram_propose": [a05.check_ngram_propose],
        "alpha_from_counters": [a05.check_alpha_from_counters, a05.check_alpha_from_counters_capped],
    },
}


def _name(value):
    return getattr(value, "__name__", None) or (value if isinstance(value, str) and len(value) < 30 else "phrase")


@pytest.mark.parametrize("nb, exercise", [(nb, ex) for nb, exs in CHECKERS.items() for ex in exs
                                          if hasattr(REFERENCE[nb], ex)])
def test_reference_passes(nb, exercise):
    for check in CHECKERS[nb][exercise]:
        check(getattr(REFERENCE[nb], exercise))


@pytest.mark.parametrize("nb, exercise, answer", [
    (nb, ex, fn) for nb, mod in ANSWERS.items() for ex, fns in mod.CORRECT.items() for fn in fns
], ids=_name)
def test_differently_written_correct_answers_pass(nb, exercise, answer):
    for check in CHECKERS[nb][exercise]:
        check(answer)


@pytest.mark.parametrize("nb, exercise, answer, phrase", [
    (nb, ex, fn, phrase) for nb, mod in ANSWERS.items() for ex, items in mod.WRONG.items() for fn, phrase in items
], ids=_name)
def test_known_mistakes_fail_with_their_hint(nb, exercise, answer, phrase):
    messages = []
    for check in CHECKERS[nb][exercise]:
        try:
            check(answer)
        except CheckFailure as failure:
            messages.append(str(failure))
    assert messages, f"{answer.__name__} passed every check"
    assert any(phrase in m for m in messages), messages
    for m in messages:  # one sentence, and no expected values leak into it
        assert "\n" not in m and len(m) < 400


def test_checkers_are_deterministic():
    """Same submission, same verdict: a checker's random streams are all seeded."""
    answer = ANSWERS["01"].simulate_geometric
    a01.check_simulate_tokens(answer)
    a01.check_simulate_tokens(answer)


def test_checkers_do_not_warn(recwarn):
    """A warning reaching stderr would zero a passing nbgrader cell."""
    a01.check_expected_tokens_edges(ANSWERS["01"].expected_closed_form)
    assert not recwarn.list


def test_distribution_test_has_power():
    """A slightly-off acceptance probability (0.7 instead of 0.75 at K = 5) is caught."""
    def off(alpha, K, rounds, rng):
        return ref01.simulate_tokens(alpha - 0.05 if 0 < alpha < 1 else alpha, K, rounds, rng)
    with pytest.raises(CheckFailure):
        a01.check_simulate_tokens(off)


def test_reference_matches_published_table():
    """Leviathan et al. 2023, Table 1 (c = 0): the speedup is expected_tokens, to the 2 decimals printed."""
    table = [(0.6, 2, 1.96), (0.7, 3, 2.53), (0.8, 2, 2.44), (0.8, 5, 3.69), (0.9, 2, 2.71), (0.9, 10, 6.86)]
    for alpha, K, published in table:
        assert round(ref01.expected_tokens(alpha, K), 2) == pytest.approx(published)
    assert np.isclose(ref01.accepted_pmf(0.8, 4).sum(), 1.0)
