"""One nbgrader run per assignment, shared by the end-to-end tests: a scratch copy of the course
root, the assignment generated with stock nbgrader, a class of fake learners submitted,
autograded, feedback generated and grades exported.

A learner is {grade_id of a solution cell: function}; None means the source notebook itself,
{} the untouched release. Wrong learners fill their other cells with correct answers written
differently, so each wrong answer is graded on its own.
"""
from __future__ import annotations

import pytest

from tests import answers_01 as a01
from tests import answers_02 as a02
from tests import answers_03 as a03
from tests import answers_04 as a04
from tests import answers_05 as a05
from tests.e2e import grade_classes

A01, A02, A03, A04 = "01_acceptance_chain", "02_cost_and_speedup", "03_rejection_sampling", "04_torch_verifier"
A05 = "05_speculation_in_practice"

OK02 = {"round_cost": a02.round_cost_np, "speedup": a02.speedup_power_sum, "loses": a02.loses_mean_of_powers,
        "break_even_alpha": a02.break_even_roots, "optimal_K": a02.optimal_K_loop}
OK03 = {"acceptance_rate": a03.acceptance_rate_tv, "residual_distribution": a03.residual_loop,
        "speculative_sample": a03.sample_cdf, "verify_round": a03.verify_vectorised}

CLASSES = {
    A01: {
        "reference": None,
        "blank": {},
        "alternate": {"accepted_pmf": a01.pmf_survival, "expected_tokens": a01.expected_closed_form,
                      "simulate_tokens": a01.simulate_geometric},
        "loops": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_loop,
                  "simulate_tokens": a01.simulate_loop},
        "noisy": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_noisy,
                  "simulate_tokens": a01.simulate_argmin},
        "wrong_exponent": {"accepted_pmf": a01.pmf_untruncated, "expected_tokens": a01.expected_exponent_K,
                           "simulate_tokens": a01.simulate_accepted_count},
        "wrong_k_alpha": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_K_alpha,
                          "simulate_tokens": a01.simulate_untruncated},
        "wrong_accepted_only": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_accepted_only,
                                "simulate_tokens": a01.simulate_loop},
        "narrow_guard": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_narrow_guard,
                         "simulate_tokens": a01.simulate_geometric_capped},
        "wrong_guard": {"accepted_pmf": a01.pmf_survival, "expected_tokens": a01.expected_isclose_guard,
                        "simulate_tokens": a01.simulate_fixed_seed},
    },
    A02: {
        "reference": None,
        "blank": {},
        "alternate": OK02,
        "closed_form": {**OK02, "speedup": a02.speedup_closed_form},
        "wrong_c": {**OK02, "round_cost": a02.round_cost_inverted, "speedup": a02.speedup_inverted_c,
                    "break_even_alpha": a02.break_even_inverted, "optimal_K": a02.optimal_K_never_zero},
        "wrong_cost": {**OK02, "round_cost": a02.round_cost_no_target, "speedup": a02.speedup_no_draft_cost,
                       "loses": a02.loses_alpha_below_c, "break_even_alpha": a02.break_even_is_c,
                       "optimal_K": a02.optimal_K_free_draft},
        "wrong_k_times": {**OK02, "speedup": a02.speedup_K_times, "loses": a02.loses_le},
        "shortcuts": {**OK02, "break_even_alpha": a02.break_even_k1_shortcut, "optimal_K": a02.optimal_K_shortcut},
        "wrong_types": {**OK02, "speedup": a02.speedup_shape_one, "loses": a02.loses_list,
                        "break_even_alpha": a02.break_even_none, "optimal_K": a02.optimal_K_largest_on_ties},
    },
    A03: {
        "reference": None,
        "blank": {},
        "alternate": OK03,
        "wrong_a": {"acceptance_rate": a03.acceptance_rate_l1, "residual_distribution": a03.residual_unnormalised,
                    "speculative_sample": a03.sample_from_p, "verify_round": a03.verify_no_bonus},
        "wrong_b": {"acceptance_rate": a03.acceptance_rate_max, "residual_distribution": a03.residual_nan,
                    "speculative_sample": a03.sample_always_accept, "verify_round": a03.verify_always_accept},
        "wrong_c": {**OK03, "residual_distribution": a03.residual_q_minus_p,
                    "speculative_sample": a03.sample_q_minus_p, "verify_round": a03.verify_resample_p},
        "numpy_types": {"acceptance_rate": a03.acceptance_rate_tv, "residual_distribution": a03.residual_small_threshold,
                        "speculative_sample": a03.sample_numpy_types, "verify_round": a03.verify_numpy_array},
        "wrong_d": {"acceptance_rate": a03.acceptance_rate_list, "residual_distribution": a03.residual_allclose,
                    "speculative_sample": a03.sample_deterministic_accept, "verify_round": a03.verify_bonus_sometimes},
    },
    A04: {
        "reference": None,
        "blank": {},
        "alternate": {"autoregressive_generate": a04.ar_list, "speculative_generate": a04.spec_list},
        # device from next(model.parameters()) / the notebook's DEVICE; proposals capped at what is still needed
        "capped": {"autoregressive_generate": a04.ar_gumbel, "speculative_generate": a04.spec_capped},
        "capped_tight": {"autoregressive_generate": a04.ar_global_device, "speculative_generate": a04.spec_capped_tight},
        "wrong_accept_all": {"autoregressive_generate": a04.ar_with_prompt, "speculative_generate": a04.spec_accept_all},
        "wrong_resample_p": {"autoregressive_generate": a04.ar_list, "speculative_generate": a04.spec_resample_p},
        "wrong_raw_q": {"autoregressive_generate": a04.ar_list, "speculative_generate": a04.spec_raw_q},
        "wrong_bonus_argmax": {"autoregressive_generate": a04.ar_global_rng, "speculative_generate": a04.spec_bonus_argmax},
        "wrong_bonus_q": {"autoregressive_generate": a04.ar_no_temperature, "speculative_generate": a04.spec_bonus_from_q},
        "wrong_bonus_untempered": {"autoregressive_generate": a04.ar_float_tokens,
                                   "speculative_generate": a04.spec_bonus_untempered},
        "wrong_generator": {"autoregressive_generate": a04.ar_list, "speculative_generate": a04.spec_global_rng},
        "wrong_stats": {"autoregressive_generate": a04.ar_list, "speculative_generate": a04.spec_capped_proposed_K},
    },
    A05: {
        "reference": None,
        "blank": {},
        "alternate": {"expected_tokens_positional": a05.positional_horner, "speedup_general": a05.general_via_cost,
                      "ngram_propose": a05.ngram_numpy, "alpha_from_counters": a05.alpha_roots},
        "wrong_a": {"expected_tokens_positional": a05.positional_off_by_one,
                    "speedup_general": a05.general_double_count, "ngram_propose": a05.ngram_itself,
                    "alpha_from_counters": a05.alpha_acceptance_rate},
        "wrong_b": {"expected_tokens_positional": a05.positional_no_one,
                    "speedup_general": a05.general_times_positions, "ngram_propose": a05.ngram_uncapped,
                    "alpha_from_counters": a05.alpha_whole_K},
    },
}


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """{assignment: {course, root, run, feedback, export, results}}, graded once per test session."""
    return grade_classes(tmp_path_factory.mktemp("course-root"), CLASSES)
