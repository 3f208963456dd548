"""The grading contract read from the source notebooks (coursekit.registry) is complete and
consistent, so that the checker and end-to-end tests that iterate over it cover everything."""
import inspect

import pytest

from coursekit import registry
from coursekit.grading.results import CellResult
from coursekit.paths import assignments
from tests.support.catalogue import answers

COURSE = registry.course()


def test_every_assignment_is_read():
    assert [a.name for a in COURSE] == assignments() and COURSE
    assert len({a.number for a in COURSE}) == len(COURSE), "two assignments share a number"


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_every_exercise_has_hidden_tests_and_points(a):
    assert a.exercises, f"{a.name}: no solution cell"
    for exercise in a.exercises:
        assert [c for c in a.hidden if c.exercise == exercise], f"{a.name}: no hidden test calls {exercise}"
    for cell in a.cells:
        # points only where the verdict is made outside the learner's kernel (coursekit.judge)
        assert (cell.points > 0) == bool(cell.checker), cell
        assert cell.exercise in a.exercises, f"{cell.grade_id} tests {cell.exercise}, which no solution cell defines"
        # the graded results (coursekit.grading.results) find a cell's exercise from its grade_id (registry.exercise_of):
        # a hidden test's grade_id must name the exercise its verdict call checks
        assert CellResult(cell.grade_id, 0, 0).exercise == cell.exercise, cell.grade_id
    assert a.max_score == sum(c.points for c in a.cells) > 0


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_hidden_tests_call_existing_checkers_of_their_notebook(a):
    for cell in a.hidden:
        module = cell.checker.split(".")[0]
        assert module == f"a{a.number}", f"{cell.grade_id} calls a checker of another notebook: {cell.checker}"
        assert callable(cell.resolve()), cell.checker


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_every_checker_is_called_by_a_hidden_test(a):
    """A public check_* that no notebook calls is dead code that the checker tests would still run."""
    module = inspect.getmodule(a.hidden[0].resolve())
    defined = {name for name, fn in inspect.getmembers(module, inspect.isfunction)
               if name.startswith("check_") and fn.__module__ == module.__name__}
    assert defined == {c.checker.split(".")[1] for c in a.hidden} == set(a.contract().checks)


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_the_checker_modules_contract_is_the_notebooks(a):
    """CONTRACT (the end of solutions/checks/aNN.py) declares the notebook's exercises in notebook order, each
    with the checks its hidden-test cells call, in cell order: every verdict("aNN.check_x") of the source
    notebook is declared under the exercise it checks, and every declared check is called there. The
    one-sentence groups, the test tiers and gpucheck read the contract, so it must not drift."""
    contract = a.contract()
    assert contract.module == f"a{a.number}"
    assert [e.name for e in contract.exercises] == list(a.exercises)
    for exercise in contract.exercises:
        called = [c.checker for c in a.hidden if c.exercise == exercise.name]
        assert [f"{contract.module}.{name}" for name in exercise.checks] == called, exercise.name
        assert exercise.heavy is None or exercise.heavy.reason.strip(), f"{exercise.name}: heavy, but why?"
        for check in called:
            assert contract.exercise_of(check) == exercise


def test_the_contract_refuses_a_check_the_module_lacks_or_two_exercises_claim():
    from solutions.checks._common import Exercise, declare

    def check_a(fn):
        pass

    def check_b(fn):
        pass

    namespace = {"__name__": "solutions.checks.a99", "check_a": check_a, "check_b": check_b}
    contract = declare(dict(namespace), Exercise("f", ("check_a", "check_b")))
    assert contract.checks == ("check_a", "check_b") and contract["f"].heavy is None
    wrapped = dict(namespace)
    declare(wrapped, Exercise("f", ("check_a", "check_b")))
    assert wrapped["check_a"].__wrapped__ is check_a and wrapped["check_b"].__wrapped__ is check_b
    with pytest.raises(NameError):
        declare(dict(namespace), Exercise("f", "check_c"))
    with pytest.raises(ValueError):
        declare(dict(namespace), Exercise("f", "check_a"), Exercise("g", ("check_b", "check_a")))


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_reference_module_defines_every_exercise(a):
    ref = a.reference()
    for exercise in a.exercises:
        assert callable(getattr(ref, exercise, None)), f"{ref.__name__} has no {exercise}"


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_answer_catalogue_covers_every_exercise(a):
    """tests/answers_NN.py: a correct answer written differently and a known mistake for every exercise,
    and every key names an exercise or a hidden test's checker (a typo would silently test nothing)."""
    catalogue = answers(a)
    assert catalogue is not None, f"tests/answers_{a.number}.py is missing"
    for exercise in a.exercises:
        assert catalogue.CORRECT.get(exercise), f"no differently written correct {exercise} in answers_{a.number}"
        assert [k for k in catalogue.WRONG if a.exercise_of(k) == exercise], f"no known mistake of {exercise}"
    for key in list(catalogue.CORRECT) + list(catalogue.WRONG):
        assert a.checkers(key), key


@pytest.mark.parametrize("a", COURSE, ids=lambda a: a.number)
def test_end_to_end_class_is_derived_from_the_catalogue(a):
    """The class tests/test_grading.py grades: every learner's answers are catalogued (outcomes()
    raises otherwise), END_TO_END names only exercises, and the class has a learner who gets full
    marks with answers unlike the reference and one who fails every exercise."""
    from tests.support.e2e import derived_class, outcomes
    cls = derived_class(a.name)
    for learner in getattr(answers(a), "END_TO_END", {}).values():
        assert set(learner) <= set(a.exercises), set(learner) - set(a.exercises)
    assert not any(outcomes(a.name, cls["correct_first"]).values())
    assert all(outcomes(a.name, cls["wrong_first"]).values())
    for learner in cls.values():
        outcomes(a.name, learner)


def test_verdict_call_is_parsed():
    src = '### BEGIN HIDDEN TESTS\nfrom coursekit.judge.verdict import verdict\nhint = verdict("a01.check_x", fn)\n'
    assert registry.verdict_call(src) == ("a01.check_x", "fn")
    assert registry.verdict_call("assert f(1) == 2") is None
    with pytest.raises(ValueError):
        registry.verdict_call('verdict("a01.check_" + name, fn)')
