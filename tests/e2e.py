"""Grade classes of fake learners with stock nbgrader, and what the end-to-end tests check on
the results (tests/test_grading.py on every assignment, tests/test_grading_one.py on one).

A class is {student: learner}; a learner is {grade_id of a solution cell: function}; None means
the source notebook itself, {} the untouched release.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

from coursekit import registry
from coursekit.nbg import ScratchCourse
from tests.notebooks import fill


def grade_classes(root: Path, classes: dict[str, dict]) -> dict:
    """Generate, submit, autograde, generate_feedback per assignment, then export, in a scratch
    course root: {course, root, export, by_assignment: {assignment: {run, feedback, results}}}."""
    course = ScratchCourse(root)
    out = {}
    for assignment, learners in classes.items():
        release_nb = course.generate(assignment) / f"{assignment}.ipynb"
        for student, answers in learners.items():
            if answers is None:
                course.submit(student, assignment, root / "source" / assignment / f"{assignment}.ipynb")
            else:
                course.submit(student, assignment,
                              fill(release_nb, answers, root / "tmp" / assignment / student / release_nb.name))
        run = course.autograde(assignment)
        feedback = course.nbgrader("generate_feedback", assignment, "--force", check=False)
        out[assignment] = dict(run=run, feedback=feedback,
                               results={r.student: r for r in course.results(assignment, list(learners))})
    export = course.nbgrader("export", check=False)
    return dict(course=course, root=Path(root), export=export, by_assignment=out)


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
    answers = a.answers()
    out = {}
    for ex in a.exercises:
        fn = learner.get(ex)
        if fn is None:
            out[ex] = [STUB_HINT]
        elif any(fn is ok for ok in answers.CORRECT.get(ex, [])):
            out[ex] = []
        else:
            out[ex] = [phrase for key, items in answers.WRONG.items() if a.exercise_of(key) == ex
                       for wrong, phrase in items if wrong is fn]
            assert out[ex], f"{assignment}: {fn.__name__} is in neither CORRECT[{ex!r}] nor WRONG of answers_{a.number}"
    return out


def all_correct(assignment, learner) -> bool:
    return learner != {} and not any(outcomes(assignment, learner).values())


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _checker_code_lines():
    """Lines of the checkers' code (not their hint strings) that must never reach a learner."""
    learner_lines = {ln.strip() for p in Path(__file__).parent.glob("answers_*.py") for ln in p.read_text().splitlines()}
    out = set()
    for path in (Path(__file__).parent.parent / "solutions" / "checks").glob("*.py"):
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
