"""End to end with stock nbgrader (generate_assignment, autograde, generate_feedback, export):
the reference gets full marks, the release gets 0 without breaking the run, answers written
differently get full marks, and each known mistake loses its points with its hint."""
import csv
import json

import pytest

from tests.conftest import A01, A02, A03, A04, A05, CLASSES
from tests.e2e import assert_hidden_tests_stay_hidden, by_exercise

MAX_SCORE = {A01: 12, A02: 15, A03: 13, A04: 14, A05: 13}
CORRECT = [(a, s) for a, learners in CLASSES.items() for s in learners
           if s == "reference" or not s.startswith(("wrong", "blank"))]


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_every_learner_was_graded(graded, assignment):
    g = graded["by_assignment"][assignment]
    assert g["run"].returncode == 0, g["run"].stderr[-2000:]
    assert set(g["results"]) == set(CLASSES[assignment])
    for result in g["results"].values():
        assert not result.error and result.max_score == MAX_SCORE[assignment], (result.student, result.error)


@pytest.mark.parametrize("assignment, student", CORRECT)
def test_correct_answers_get_full_marks(graded, assignment, student):
    result = graded["by_assignment"][assignment]["results"][student]
    failing = [(c.grade_id, c.hint) for c in result.cells if c.score < c.max_score]
    assert result.score == result.max_score, failing


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_release_scores_zero_with_stub_hints(graded, assignment):
    result = graded["by_assignment"][assignment]["results"]["blank"]
    assert result.score == 0
    assert all("not implemented yet" in c.hint for c in result.cells), [c.hint for c in result.cells]


@pytest.mark.parametrize("assignment, student, exercise, phrase", [
    (A01, "wrong_exponent", "accepted_pmf", "truncation"),
    (A01, "wrong_exponent", "expected_tokens", "exponent K instead of K+1"),
    (A01, "wrong_exponent", "simulate_tokens", "counts accepted drafts"),
    (A01, "wrong_k_alpha", "expected_tokens", "K*alpha"),
    (A01, "wrong_k_alpha", "simulate_tokens", "more than K+1"),
    (A01, "wrong_accepted_only", "expected_tokens", "counts only the accepted drafts"),
    (A01, "wrong_guard", "expected_tokens", "tolerance guard"),
    (A01, "wrong_guard", "simulate_tokens", "ignores its rng argument"),
    (A02, "wrong_c", "round_cost", "target/draft"),
    (A02, "wrong_c", "speedup", "target/draft"),
    (A02, "wrong_c", "break_even_alpha", "target/draft"),
    (A02, "wrong_c", "optimal_K", "do not speculate"),
    (A02, "wrong_cost", "round_cost", "one target pass"),
    (A02, "wrong_cost", "speedup", "not free"),
    (A02, "wrong_cost", "loses", "MEAN"),
    (A02, "wrong_cost", "break_even_alpha", "only for K = 1"),
    (A02, "wrong_cost", "optimal_K", "not free"),
    (A02, "wrong_k_times", "speedup", "every draft is accepted"),
    (A02, "wrong_k_times", "loses", "not a loss"),
    (A02, "wrong_types", "speedup", "one number for scalar inputs"),
    (A02, "wrong_types", "loses", "returned a list"),
    (A02, "wrong_types", "break_even_alpha", "float('nan')"),
    (A02, "wrong_types", "optimal_K", "smallest K on ties"),
    (A03, "wrong_a", "acceptance_rate", "HALF the L1"),
    (A03, "wrong_a", "residual_distribution", "not normalised"),
    (A03, "wrong_a", "speculative_sample", "resamples from p"),
    (A03, "wrong_a", "verify_round", "bonus"),
    (A03, "wrong_b", "acceptance_rate", "sum max(p, q)"),
    (A03, "wrong_b", "residual_distribution", "NaN"),
    (A03, "wrong_b", "speculative_sample", "accepts every"),
    (A03, "wrong_b", "verify_round", "accepts every"),
    (A03, "wrong_c", "residual_distribution", "q - p"),
    (A03, "wrong_c", "speculative_sample", "q - p"),
    (A03, "wrong_c", "verify_round", "resamples a rejected position from p"),
    (A03, "wrong_d", "acceptance_rate", "returned a list"),
    (A03, "wrong_d", "residual_distribution", "only close"),
    (A03, "wrong_d", "speculative_sample", "exactly when p[x] >= q[x]"),
    (A03, "wrong_d", "verify_round", "exactly the K drafts"),
    (A04, "wrong_accept_all", "speculative_generate", "accepts every draft"),
    (A04, "wrong_resample_p", "speculative_generate", "samples from p"),
    (A04, "wrong_raw_q", "speculative_generate", "RAW logits"),
    (A04, "wrong_accept_all", "autoregressive_generate", "not the prompt"),
    (A04, "wrong_bonus_argmax", "speculative_generate", "bonus token is the argmax"),
    (A04, "wrong_bonus_argmax", "autoregressive_generate", "`generator` argument"),
    (A04, "wrong_bonus_q", "speculative_generate", "bonus token follows the DRAFT"),
    (A04, "wrong_bonus_q", "autoregressive_generate", "softmax(logits / temperature)"),
    (A04, "wrong_bonus_untempered", "speculative_generate", "bonus token is drawn without the temperature"),
    (A04, "wrong_bonus_untempered", "autoregressive_generate", "LongTensor"),
    (A04, "wrong_generator", "speculative_generate", "`generator` argument"),
    (A04, "wrong_stats", "speculative_generate", "stats['proposed']"),
    (A05, "wrong_a", "expected_tokens_positional", "off by one"),
    (A05, "wrong_a", "speedup_general", "IS the target pass"),
    (A05, "wrong_a", "ngram_propose", "n-gram itself"),
    (A05, "wrong_b", "expected_tokens_positional", "+1 is missing"),
    (A05, "wrong_b", "speedup_general", "do not multiply"),
    (A05, "wrong_b", "ngram_propose", "longer than K"),
    (A05, "wrong_a", "alpha_from_counters", "acceptance rate"),
    (A05, "wrong_b", "alpha_from_counters", "not a whole number"),
])
def test_known_mistakes_lose_points_with_hint(graded, assignment, student, exercise, phrase):
    got, total, hints = by_exercise(graded["by_assignment"][assignment]["results"][student])[exercise]
    assert got < total
    assert any(phrase in h for h in hints), hints


def test_one_mistake_does_not_cost_unrelated_points(graded):
    scores = by_exercise(graded["by_assignment"][A01]["results"]["wrong_accepted_only"])
    assert scores["accepted_pmf"][0] == scores["accepted_pmf"][1]
    assert scores["simulate_tokens"][0] == scores["simulate_tokens"][1]
    scores = by_exercise(graded["by_assignment"][A03]["results"]["wrong_c"])
    assert scores["acceptance_rate"][0] == scores["acceptance_rate"][1]


@pytest.mark.parametrize("assignment, student", CORRECT)
def test_warnings_never_reach_a_graded_cell(graded, assignment, student):
    """nbgrader scores a cell with stderr output 0: e.g. the noisy learner's warnings must be dropped."""
    nb = json.loads((graded["root"] / "autograded" / student / assignment / f"{assignment}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            assert not [o for o in cell.get("outputs", []) if o.get("name") == "stderr"], cell["source"]


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_feedback_generated(graded, assignment):
    g = graded["by_assignment"][assignment]
    assert g["feedback"].returncode == 0, g["feedback"].stderr[-2000:]
    for student in CLASSES[assignment]:
        assert (graded["root"] / "feedback" / student / assignment / f"{assignment}.html").exists()


def test_export_csv(graded):
    assert graded["export"].returncode == 0, graded["export"].stderr[-2000:]
    rows = list(csv.DictReader((graded["root"] / "grades.csv").open()))
    scores = {(r["assignment"], r["student_id"]): float(r["score"]) for r in rows}
    for assignment, top in MAX_SCORE.items():
        assert scores[(assignment, "reference")] == top and scores[(assignment, "blank")] == 0


def test_release_directory_is_course(graded):
    for assignment in CLASSES:
        assert (graded["root"] / "course" / assignment / f"{assignment}.ipynb").exists()


@pytest.mark.parametrize("assignment", list(CLASSES))
def test_hidden_tests_stay_hidden(graded, assignment):
    """A failing hidden test shows the learner its three-line call and the hint, nothing else: the
    traceback has no frame from a file (no checker code, no paths), and neither the autograded
    notebooks nor the feedback HTML contain a line of the checkers' code or the reference module."""
    assert_hidden_tests_stay_hidden(graded["root"], assignment, CLASSES[assignment])
