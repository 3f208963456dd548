"""Grade classes of fake learners with stock nbgrader, and what the end-to-end tests check on
the results (tests/test_grading.py on every assignment, tests/test_grading_one.py on one).

A class is {student: learner}; a learner is {grade_id of a solution cell: function}; None means
the source notebook itself, {} the untouched release.
"""
from __future__ import annotations

import filecmp
import html
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from coursekit import registry
from coursekit.paths import COURSE, assignments
from tests.support.shared import copy_course
from tests.support.notebooks import fill
from tests.support.catalogue import answers


def derived_class(assignment: str) -> dict[str, dict | None]:
    """The class test_grading.py grades for `assignment`, derived from tests/answers_NN.py: the
    reference (None), the untouched release ({}), a learner of the first and one of the last
    answers of every CORRECT list, a learner made of the first wrong answer of each exercise, and
    the learners of the optional END_TO_END = {student: {exercise: function}} (exercises they leave
    out get the first correct answer, so one mistake is graded on its own). Every other catalogued
    answer is run through the same checkers in process by tests/test_checkers.py."""
    a = registry.read(assignment)
    catalogue = answers(a)
    first = {ex: catalogue.CORRECT[ex][0] for ex in a.exercises}
    last = {ex: catalogue.CORRECT[ex][-1] for ex in a.exercises}
    wrong = {}
    for key, items in catalogue.WRONG.items():
        wrong.setdefault(a.exercise_of(key), items[0][0])
    out = {"reference": None, "blank": {}, "correct_first": first}
    if last != first:
        out["correct_last"] = last
    out["wrong_first"] = wrong
    for student, learner in getattr(catalogue, "END_TO_END", {}).items():
        out[student] = {**first, **learner}
    return out


def grade_class(root: Path, assignment: str, learners: dict, env: dict | None, released: Path) -> dict:
    """In a scratch course root `root`, a copy of `released` (every assignment generated already):
    submit every learner, autograde them in one stock nbgrader run, generate_feedback, export.
    Returns {course, root, run, feedback, export, results: {student: NotebookResult}}."""
    course = copy_course(released, root, env)
    release_nb = course.root / "course" / assignment / f"{assignment}.ipynb"
    for student, learner_answers in learners.items():
        if learner_answers is None:
            course.submit(student, assignment, course.root / "source" / assignment / f"{assignment}.ipynb")
        else:
            course.submit(student, assignment,
                          fill(release_nb, learner_answers, course.root / "tmp" / assignment / student / release_nb.name))
    run = course.autograde(assignment)
    feedback = course.nbgrader("generate_feedback", assignment, "--force", check=False)
    export = course.nbgrader("export", check=False)
    return dict(course=course, root=course.root, run=run, feedback=feedback, export=export,
                results={r.student: r for r in course.results(assignment, list(learners))})


def grade_classes(classes: dict[str, dict], one, jobs: int) -> dict:
    """`one(assignment)` for every assignment of `classes`, `jobs` at a time (the work is in nbgrader
    subprocesses), the largest classes first: tests/conftest.py's `graded`."""
    with ThreadPoolExecutor(jobs) as pool:
        futures = {a: pool.submit(one, a) for a in sorted(classes, key=lambda a: -len(classes[a]))}
    return {a: futures[a].result() for a in classes}


def assert_release_is_committed(fresh: Path, assignment: str) -> None:
    """`fresh` (a folder nbgrader generate_assignment just wrote) is what course/<assignment> holds."""
    committed = COURSE / assignment
    fresh_files = sorted(p.relative_to(fresh) for p in fresh.rglob("*") if p.is_file())
    committed_files = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert fresh_files == committed_files, "course/ has different files: run `make release`"
    for rel in fresh_files:
        assert filecmp.cmp(fresh / rel, committed / rel, shallow=False), f"course/{assignment}/{rel} drifted: run `make release`"


CLASSES = {a: derived_class(a) for a in assignments()}  # what tests/conftest.py's `graded` grades

STUB_HINT = "not implemented yet"


def by_exercise(result):
    out = {}
    for cell in result.cells:
        got, total, hints = out.get(cell.exercise, (0.0, 0.0, []))
        out[cell.exercise] = (got + cell.score, total + cell.max_score, hints + ([cell.hint] if cell.hint else []))
    return out


def outcomes(assignment: str, learner) -> dict[str, list[str]]:
    """{exercise: phrases its hints must contain}; [] means full marks. `learner` is None (the
    source notebook) or {exercise: function}; a function must be catalogued in answers_NN.py."""
    a = registry.read(assignment)
    if learner is None:
        return {ex: [] for ex in a.exercises}
    catalogue = answers(a)
    out = {}
    for ex in a.exercises:
        fn = learner.get(ex)
        if fn is None:
            out[ex] = [STUB_HINT]
        elif any(fn is ok for ok in catalogue.CORRECT.get(ex, [])):
            out[ex] = []
        else:
            out[ex] = [phrase for key, items in catalogue.WRONG.items() if a.exercise_of(key) == ex
                       for wrong, phrase in items if wrong is fn]
            assert out[ex], f"{assignment}: {fn.__name__} is in neither CORRECT[{ex!r}] nor WRONG of answers_{a.number}"
    return out


def all_correct(assignment, learner) -> bool:
    return learner != {} and not any(outcomes(assignment, learner).values())


def assert_graded_as_catalogued(result, assignment: str, learner) -> None:
    """The learner's graded notebook is what the catalogue says: an exercise answered correctly
    has full marks; any other loses points, with hints that contain every phrase catalogued for
    its answer (the stub hint for an untouched cell)."""
    assert not result.error and result.max_score == registry.read(assignment).max_score, (result.student, result.error)
    scores = by_exercise(result)
    for exercise, phrases in outcomes(assignment, learner).items():
        got, total, hints = scores[exercise]
        if not phrases:
            assert got == total, (result.student, exercise, hints)
        else:
            assert got < total and all(any(p in h for h in hints) for p in phrases), \
                (result.student, exercise, phrases, hints)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _checker_code_lines():
    """Lines of the checkers' code (not their hint strings) that must never reach a learner."""
    learner_lines = {ln.strip() for p in Path(__file__).parents[1].glob("answers_*.py") for ln in p.read_text().splitlines()}
    out = set()
    for path in (Path(__file__).parents[2] / "solutions" / "checks").glob("*.py"):
        for line in path.read_text().splitlines():
            s = line.strip()
            if len(s) > 25 and not s.startswith(("#", '"', "'", "f\"", "HINT", "(\"", "(f\"")) and s not in learner_lines \
                    and any(tok in s for tok in ("(", " = ", "[")) and "verdict" not in s:
                out.add(s)
    return out


def assert_hidden_tests_stay_hidden(root: Path, assignment: str, students) -> None:
    """A failing hidden test shows the learner its three-line call and the hint, nothing else: the
    traceback has no frame from a file (no checker code, no paths), and neither the autograded
    notebooks nor the feedback HTML contain a line of the checkers' code or the reference module."""
    code_lines = _checker_code_lines()
    for student in students:
        if student == "reference":
            continue  # its submission is the source notebook itself
        nb = json.loads((root / "autograded" / student / assignment / f"{assignment}.ipynb").read_text())
        for cell in nb["cells"]:
            if "verdict(" not in "".join(cell.get("source", "")):
                continue
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    tb = ANSI.sub("", "\n".join(out["traceback"]))
                    assert "File " not in tb and "solutions/" not in tb, tb
                    assert out["ename"] == "AssertionError" and out["evalue"], out
        html_text = html.unescape((root / "feedback" / student / assignment / f"{assignment}.html").read_text())
        for line in code_lines:
            assert line not in html_text, (student, line)
        assert "solutions.reference" not in html_text and "_common.py" not in html_text
