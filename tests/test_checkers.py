"""The checkers behind the hidden tests, called directly (fast; nbgrader is in test_grading.py).

Every reference function and every differently written correct answer passes; every known
mistake fails with a hint that names it. What to run comes from coursekit.registry (which
checkers each exercise's hidden tests call, read from the source notebooks) and from each
notebook's tests/answers_NN.py: a new notebook needs no edit here.
"""
import functools
import inspect
import itertools
import re

import numpy as np
import pytest

from coursekit import registry
from solutions.checks import a01, a03
from solutions.checks._common import CheckFailure, agreed, fail, one_sentence
from solutions.reference import a01_acceptance_chain as ref01
from tests.support.catalogue import answers
from tests.support.tiers import heavy

COURSE = registry.by_number()


def _name(value):
    return getattr(value, "__name__", None) or (value if isinstance(value, str) and len(value) < 30 else "phrase")


@pytest.mark.parametrize("nb, exercise", [(nb, ex) for nb, a in COURSE.items() for ex in a.exercises])
def test_reference_passes(nb, exercise):
    a = COURSE[nb]
    for check in a.checkers(exercise):
        check(getattr(a.reference(), exercise))


@pytest.mark.parametrize("nb, exercise, answer", [
    (nb, ex, fn) for nb, a in COURSE.items() for ex, fns in answers(a).CORRECT.items() for fn in fns
], ids=_name)
def test_differently_written_correct_answers_pass(nb, exercise, answer):
    for check in COURSE[nb].checkers(exercise):
        check(answer)


def _own_failures(nb, key, answer):
    """Each hidden test of the exercise run once on `answer`, without the agreement between them
    (`one_sentence` wraps each checker; __wrapped__ is the check alone): its failure or None, in cell
    order, up to the first failure that names a mistake. What every failing cell shows (`agreed`)
    is that failure whatever the cells after it say, so they are not run (04's cost seconds each)."""
    a = COURSE[nb]
    out = []
    for check in a.checkers(a.exercise_of(key)):
        try:
            getattr(check, "__wrapped__", check)(answer)
            out.append(None)
        except CheckFailure as failure:
            out.append(failure)
            if not failure.generic:
                break
    return out


def _hints_shown(nb, key, answer):
    """What `make check` shows for `answer` under its exercise: each distinct hint of the hidden tests
    of the whole exercise (every cell, not only the one the catalogue's key names), in cell order."""
    a = COURSE[nb]
    hints = []
    for check in a.checkers(a.exercise_of(key)):
        try:
            check(answer)
        except CheckFailure as failure:
            hints.append(str(failure))
    return list(dict.fromkeys(hints))


@pytest.mark.parametrize("nb, key, answer, phrase", [
    (nb, key, fn, phrase) for nb, a in COURSE.items() for key, items in answers(a).WRONG.items() for fn, phrase in items
], ids=_name)
def test_known_mistakes_fail_with_their_hint(nb, key, answer, phrase):
    """Each known mistake fails, and the one sentence its exercise shows (issue 32: every failing hidden test of
    the exercise says the same, `_common.agreed`) names it: a consequence such as "guard alpha == 1 exactly"
    next to "exponent K instead of K+1" sent the learner after a guard they never wrote. Each check runs once
    here; test_one_sentence_* show that the wrapped checks say what `agreed` picks."""
    failures = _own_failures(nb, key, answer)
    assert any(failures), f"{answer.__name__} passed every check"
    for failure in filter(None, failures):  # one sentence, and no expected values leak into it
        assert "\n" not in str(failure) and len(str(failure)) < 400
    shown = str(agreed(failures))
    assert phrase in shown, (shown, [str(f) for f in failures if f])


@pytest.mark.parametrize("nb, key, answer, phrase", [
    # every notebook but those whose checks are heavy (their contract, tests/support/tiers.heavy): a new one is
    # covered with no edit
    (nb, key, fn, phrase) for nb in COURSE if not heavy(nb)
    for key, items in answers(COURSE[nb]).WRONG.items()
    for fn, phrase in items
], ids=_name)
def test_the_wrapped_checks_show_one_sentence(nb, key, answer, phrase):
    """End to end through the checkers the hidden tests call (a heavy notebook's, 04's, are covered by `agreed`
    above: each of its checks costs seconds): one distinct hint for the whole exercise, the one naming the mistake."""
    hints = _hints_shown(nb, key, answer)
    assert len(hints) == 1 and phrase in hints[0], hints


@pytest.mark.parametrize("nb, checker, answer, phrase", [
    ("01", "a01.check_expected_tokens_edges", "expected_exponent_K_guarded", "exponent K instead of K+1"),
    ("02", "a02.check_speedup_arrays", "speedup_no_draft_cost", "not free"),
    ("02", "a02.check_speedup_arrays", "speedup_exponent_K", "exponent K"),
    ("05", "a05.check_alpha_from_counters_capped", "alpha_floor_division", "integer division"),
    ("04", "a04.check_speculative_stats", "spec_accept_all", "accepts every draft"),
])
def test_a_later_cell_names_the_mistake_an_earlier_one_found(nb, checker, answer, phrase):
    """The cases issue 32 found: a later hidden test of the exercise, failing because of the earlier test's named
    mistake, says that mistake (before: "guard alpha == 1 exactly" for the exponent K, "disagrees with its scalar
    values" for a free draft)."""
    from coursekit.judge.verdict import checker as find

    check = find(checker)
    wrong = getattr(answers(COURSE[nb]), answer)
    with pytest.raises(CheckFailure) as raw:
        check.__wrapped__(wrong)
    assert phrase not in str(raw.value)  # alone, the later cell says something else
    with pytest.raises(CheckFailure) as shown:
        check(wrong)
    assert phrase in str(shown.value)


def _fake_checks(*outcomes):
    """Checks that fail with (message, generic) or pass (None), counting their runs."""
    runs = []

    def make(i, outcome):
        def check(fn):
            runs.append(i)
            if outcome is not None:
                fail(*outcome)
        return check
    return one_sentence(*(make(i, o) for i, o in enumerate(outcomes))), runs


def _said(checks):
    out = []
    for check in checks:
        try:
            check(None)
            out.append(None)
        except CheckFailure as failure:
            out.append((str(failure), failure.generic))
    return out


def test_one_sentence_repeats_the_first_named_hint_in_every_failing_cell():
    checks, runs = _fake_checks(("exponent K", False), None, ("guard alpha == 1", False))
    assert _said(checks) == [("exponent K", False), None, ("exponent K", False)]


def test_one_sentence_prefers_a_later_named_hint_to_a_generic_one():
    checks, _ = _fake_checks(("is wrong", True), ("modifies its input", False), ("disagrees with scalars", True))
    assert _said(checks) == [("modifies its input", False)] * 3


def test_one_sentence_without_a_named_hint_says_the_first():
    checks, _ = _fake_checks(None, ("is wrong", True), ("disagrees", True))
    assert _said(checks) == [None, ("is wrong", True), ("is wrong", True)]


def test_one_sentence_costs_nothing_when_a_check_passes_and_runs_no_more_than_it_needs():
    checks, runs = _fake_checks(None, None, None)
    _said(checks)
    assert runs == [0, 1, 2]
    checks, runs = _fake_checks(("named", False), ("own", False), ("generic", True), ("later", False))
    with pytest.raises(CheckFailure):
        checks[1](None)
    assert runs == [1, 0]  # its own, then the ones before it up to the first named; none after
    runs.clear()
    with pytest.raises(CheckFailure):
        checks[2](None)
    assert runs == [2, 0]


@pytest.mark.parametrize("nb", sorted(COURSE))
def test_every_exercise_with_several_hidden_tests_agrees_on_one_sentence(nb):
    """Each checker behind an exercise with more than one hidden test is wrapped by `one_sentence`, with the
    others of the exercise in cell order."""
    a = COURSE[nb]
    for exercise in a.exercises:
        checks = a.checkers(exercise)
        if len(checks) > 1:
            assert all(hasattr(c, "__wrapped__") for c in checks), exercise
            for check in checks:
                together = inspect.getclosurevars(check).nonlocals["checks"]
                assert list(together) == [c.__wrapped__ for c in checks], exercise


def _hint_constants() -> dict[tuple[str, str], str]:
    """{(module, name): text} of every HINT_* constant a checker module defines itself (a top-level
    assignment of a literal, read from the source; an imported one is its defining module's)."""
    import ast

    from coursekit.paths import REPO

    out = {}
    for path in sorted((REPO / "solutions" / "checks").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id.startswith("HINT_"):
                out[path.stem, node.targets[0].id] = ast.literal_eval(node.value)
    return out


def _mistake(hint: str) -> list[str]:
    """The words naming a hint's mistake: its leading clause, up to the first ':' or ';' (the course's hints
    say the mistake first, then why: "exponent K instead of K+1 in the expected tokens: ...")."""
    return re.split(r"[:;]", hint, maxsplit=1)[0].lower().split()


def test_one_wording_per_named_mistake():
    """A mistake that several notebooks name has one hint, defined once (solutions/checks/_common.py) and
    imported: no HINT_* name is defined by two modules, and no two hints of different modules open with the
    same mistake (equal leading clauses, or one the other's first words) in different wordings (issue 43:
    the exponent K had two)."""
    hints = _hint_constants()
    assert len(hints) > 50, "the HINT_* constants were not found"
    names = {}
    for module, name in hints:
        names.setdefault(name, []).append(module)
    assert not {n: m for n, m in names.items() if len(m) > 1}, "define a shared hint once, in _common.py"
    clash = []
    for (key, text), (other_key, other) in itertools.combinations(hints.items(), 2):
        a, b = _mistake(text), _mistake(other)
        if key[0] != other_key[0] and text != other and a[:len(b)] == b[:len(a)]:
            clash.append((key, other_key, " ".join(a), " ".join(b)))
    assert not clash, clash


@functools.lru_cache(maxsize=None)
def _given(nb) -> dict:
    """What a notebook's own given code defines: its setup cell and the read-only cells that are
    neither tests nor left out while grading (05's published model shapes, 07's pass times), run
    once per notebook with the exercises' references in place, as they run in the notebook."""
    import contextlib
    import io
    import math

    import nbformat
    import torch

    from coursekit.paths import source_notebooks

    ns = {"np": np, "math": math, "torch": torch}
    a = COURSE[nb]
    ns.update({ex: getattr(a.reference(), ex) for ex in a.exercises})
    for path in source_notebooks(a.name):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if (cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution")
                    and not str(meta.get("grade_id", "")).startswith("test_")
                    and not set(cell.metadata.get("tags", [])) & {"measurement", "demo", "explorer"}):
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(cell.source, meta.get("grade_id", "given"), "exec"), ns)
    return ns


def _visible_namespace(nb):
    """What a visible test cell sees in the notebook: the given code's names (`_given`) and every
    exercise (the reference's)."""
    return dict(_given(nb))


@pytest.mark.parametrize("nb, exercise, answer", [
    (nb, ex, fn) for nb, a in COURSE.items() for ex, fns in answers(a).CORRECT.items() for fn in fns
], ids=_name)
def test_differently_written_correct_answers_pass_the_visible_tests(nb, exercise, answer, capsys):
    """A correct answer must not lose the visible tests' points either (their tolerances are the
    learner's first grader): run each visible test cell of the exercise on it."""
    cells = [c for c in COURSE[nb].visible if c.exercise == exercise]
    assert cells, exercise
    for cell in cells:
        capsys.readouterr()
        exec(compile(cell.source, cell.grade_id, "exec"), {**_visible_namespace(nb), exercise: answer})
        # a passing visible-test cell says so, naming its exercise (issue 32: no more silent credit)
        assert capsys.readouterr().out.splitlines()[-1] == f"\u2713 {exercise}: visible tests passed"


def _recording(answer):
    """The answer, recording every random number its `rng` argument gives it."""
    seen = []

    class Recorder:
        def __init__(self, rng):
            self.rng = rng

        def __getattr__(self, name):
            method = getattr(self.rng, name)

            def draw(*args, **kwargs):
                out = method(*args, **kwargs)
                seen.append(np.array(out, dtype=float).ravel().tolist())
                return out
            return draw

    def wrapped(*args):
        return answer(*args[:-1], Recorder(args[-1]))
    return wrapped, seen


@pytest.mark.parametrize("check, answer", [
    (a01.check_simulate_tokens, ref01.simulate_tokens),
    (a03.check_speculative_sample, COURSE["03"].reference().speculative_sample),
    (a03.check_verify_round, COURSE["03"].reference().verify_round),
], ids=lambda v: getattr(v, "__name__", "answer"))
def test_checkers_are_deterministic(check, answer):
    """Same submission, same verdict: every random number a checker hands to the learner's code
    comes from its own seeded stream, whatever the global generators hold (the learner may have
    reseeded or drawn from numpy's and Python's global generators before the hidden test runs)."""
    import random

    runs = []
    for seed in (1, 2):
        np.random.seed(seed)
        random.seed(seed)
        wrapped, seen = _recording(answer)
        check(wrapped)
        runs.append(seen)
    assert runs[0] and runs[0] == runs[1]


def test_checkers_do_not_warn(recwarn):
    """A warning reaching stderr would zero a passing nbgrader cell."""
    a01.check_expected_tokens_edges(answers(COURSE["01"]).expected_closed_form)
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


def test_the_learners_guide_sample_is_what_the_course_prints():
    """docs/learners.md's `make check` sample: the exponent K in expected_tokens scores 0/5 with one hint, the checker's."""
    import re

    from coursekit.paths import REPO
    from tests.answers_01 import expected_exponent_K_guarded as expected_exponent_K

    guide = (REPO / "docs" / "learners.md").read_text()
    sample = guide[guide.index("01_acceptance_chain: grading ..."):guide.index("TOTAL 13/27")]
    assert re.search(r"\n\s+expected_tokens\s+0/5\n", sample), sample
    hints = _hints_shown("01", "expected_tokens", expected_exponent_K)
    assert len(hints) == 1 and f"- {hints[0]}" in sample


def test_04s_greedy_reference_through_the_cache_is_the_plain_calls():
    """a04's expected greedy tokens come from the KV cache (greedy_cached); they are what the plain
    model(ids) call gives on every prompt the checks use, with every step's top-2 logit margin far
    above float32 rounding, the target's and the draft's (so a learner's plain or cached loop meets
    the same argmax, and the counters the stats check expects from where the draft agrees). The
    text is varied (a run of one repeated token would hide a loop off by a position), and the
    draft both agrees and disagrees with it (drafts are accepted and rejected) on every prompt."""
    import itertools

    import torch

    from solutions.checks import a04
    from specdec.model import encode
    from specdec.toy import small_pair

    target, draft = small_pair("cpu")
    n = a04.N_GREEDY + a04.K_MAX
    for prompt in a04.PROMPTS:
        ids = encode(prompt)
        plain = a04.greedy_reference(target, ids, n).tolist()
        assert a04.greedy_cached(target, ids, n).tolist() == plain, prompt
        assert len(set(plain)) >= 10 and max(len(list(run)) for _, run in itertools.groupby(plain)) <= 2, plain
        with torch.no_grad():
            context = torch.tensor([ids.tolist() + plain[:-1]])
            rows_t, rows_d = target(context)[0, len(ids) - 1:], draft(context)[0, len(ids) - 1:]
        for rows in (rows_t, rows_d):
            top2 = rows.topk(2, dim=-1).values
            assert float((top2[:, 0] - top2[:, 1]).min()) > 0.02, prompt
        agree = (rows_d.argmax(-1) == rows_t.argmax(-1)).float().mean()
        assert 0.5 < float(agree) < 0.9, (prompt, float(agree))
