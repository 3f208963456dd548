"""Bad and hostile submissions, graded by `make grade`'s code (coursekit.grade, stock nbgrader
underneath) in a scratch course root, on assignment 01 (the quickest to grade).

For each submission: the run finishes, the well-behaved learner's grade is the same as when it
is graded alone, the score is what the rules below say, a flag or hint explains it, and attempts
to reach the solutions, the gradebook or the network are in the integrity report. The same
submission graded three times gets identical scores (checked on the learners whose checks
draw seeded random numbers or hit a limit).

The rules: a test cell scores its points if it passes, 0 otherwise (nbgrader); test cells are
restored from the source before grading, so deleting, editing or retyping them changes nothing;
a notebook that nbgrader cannot grade (missing, renamed, unreadable, empty, duplicated grade
cells) scores 0 with a flag saying why; code that reaches for the solutions or checkers is
graded as written and flagged for the instructor.
"""
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from coursekit.grade import grade, report
from coursekit.nbg import ScratchCourse
from coursekit.registry import read as read_assignment
from tests.notebooks import with_reference_answers

A = "01_acceptance_chain"
FULL = read_assignment(A).max_score
BROKEN = "expected_tokens"  # the solution cell that _prepend breaks
ARTIFACT = Path(__file__).resolve().parent.parent / "build" / "grading" / "corpus-report.md"


def _cells(nb, grade_id):
    return [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id]


def _prepend(code):
    def edit(nb):
        _cells(nb, BROKEN)[0].source = code + "\n" + _cells(nb, BROKEN)[0].source
    return edit


def _set_test(grade_id, source):
    def edit(nb):
        _cells(nb, grade_id)[0].source = source
    return edit


def _delete(grade_id):
    def edit(nb):
        nb.cells = [c for c in nb.cells if c not in _cells(nb, grade_id)]
    return edit


def _retype(grade_id):
    def edit(nb):
        cell = _cells(nb, grade_id)[0]
        nb.cells[nb.cells.index(cell)] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)
    return edit


def _duplicate(grade_id):
    def edit(nb):
        cell = _cells(nb, grade_id)[0]
        nb.cells.insert(nb.cells.index(cell), nbformat.from_dict(json.loads(json.dumps(cell))))
    return edit


# student: (how the reference submission is changed, expected score, phrase expected in flags/report or None)
NOTEBOOK_CASES = {
    "good": (None, FULL, None),
    "infinite_loop": (_prepend("while True:\n    pass"), None, "time limit"),
    "memory_blowup": (_prepend("hog = bytearray(64 * 1024**3)"), None, "MemoryError"),
    "megabytes_of_output": (_prepend("print('x' * 100 + '\\n') or [print('y' * 1000) for _ in range(5000)]"), FULL, None),
    "import_error": (_prepend("import no_such_module_anywhere"), None, "ModuleNotFoundError"),
    "deleted_test": (_delete("test_accepted_pmf__literals"), FULL, None),
    "edited_test": (_set_test("test_expected_tokens__reference", "pass  # trust me"), FULL, None),
    "retyped_test": (_retype("test_simulate_tokens__distribution"), FULL, None),
    "duplicated_test": (_duplicate("test_accepted_pmf__reference"), 0, "appears twice"),
    "input_call": (_prepend("name = input('who are you? ')"), None, "no keyboard"),
    "sys_exit": (_prepend("import sys\nsys.exit(0)"), None, "sys.exit() in a cell"),
    "os_exit": (_prepend("import os\nos._exit(0)"), 0, "could not be graded"),
    "imports_reference": (_prepend("from solutions.reference.a01_acceptance_chain import *"), FULL, "reference solutions"),
    "reads_checkers": (_prepend("import solutions.checks.a01 as spy\nsource = open(spy.__file__).read()"), FULL,
                       "reference solutions"),
    "writes_outside": (_prepend("open('/etc/course-pwned', 'w').write('x')"), None, "refused by the grading sandbox"),
    "writes_gradebook": (_prepend("open('../../../gradebook.db', 'w').write('all A')"), None, "gradebook"),
    "network": (_prepend("import socket\nsocket.create_connection(('10.255.255.1', 80), timeout=3)"), None,
                "refused by the grading sandbox"),
    "fork_bomb": (_prepend("import os\nwhile True:\n    os.fork()"), None, "refused by the grading sandbox"),
    # Walks up from its folder and tries to read every gradebook and list every submitted/ folder
    # it passes (its scratch root's and, under parallel grading, the course root's): each attempt
    # is refused, so nothing leaks and its answers score normally.
    "hunts_gradebooks": (_prepend(
        "from pathlib import Path\nleaked = []\nfor up in Path.cwd().parents:\n"
        "    for attempt in (lambda: open(up / 'gradebook.db', 'rb').read(16), lambda: list((up / 'submitted').iterdir())):\n"
        "        try:\n            leaked.append(attempt())\n        except OSError:\n            pass\n"
        "assert not leaked, leaked"), FULL, "touches the gradebook"),
}
FILE_CASES = {  # student: (file name, bytes, expected score, phrase)
    "invalid_json": (f"{A}.ipynb", b"{ this is not json", 0, "not a readable notebook"),
    "empty_file": (f"{A}.ipynb", b"", 0, "empty file"),
    "renamed": ("my_answers.ipynb", None, 0, "found: my_answers.ipynb"),
    "missing": (None, None, 0, "no notebook"),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus-root")
    course = ScratchCourse(root)
    # A 10 s cell limit instead of 60 s keeps the endless loop cheap; nothing else changes.
    (root / "grader_config.py").write_text((root / "grader_config.py").read_text() + "\nc.Execute.timeout = 10\n")
    release = course.generate(A) / f"{A}.ipynb"
    good = with_reference_answers(release, root / "source" / A / f"{A}.ipynb", root / "tmp" / "good.ipynb")

    def submit(student, name=None, data=None, edit=None):
        folder = root / "submitted" / student / A
        folder.mkdir(parents=True, exist_ok=True)
        if name is None:
            return
        if data is not None:
            (folder / name).write_bytes(data)
            return
        nb = nbformat.read(good, as_version=4)
        if edit:
            edit(nb)
        nbformat.write(nb, folder / name)

    submit("good", f"{A}.ipynb")
    alone = {r.student: r for r in grade(root, [A], jobs=1)}["good"]
    for student, (edit, _, _) in NOTEBOOK_CASES.items():
        submit(student, f"{A}.ipynb", edit=edit)
    for student, (name, data, _, _) in FILE_CASES.items():
        submit(student, name, data)
    # The corpus run grades two learners at a time (make grade's default on this machine).
    runs = [{r.student: r for r in grade(root, [A], jobs=2)}]
    # Determinism, and serial == parallel: two more gradings, one by stock nbgrader in the course
    # root (jobs=1) and one in parallel, of the learners whose checks draw random numbers (the
    # seeded statistical test of simulate_tokens), hit a limit, or hunt for the gradebook.
    again = ["good", "memory_blowup", "hunts_gradebooks"]
    runs += [{r.student: r for r in grade(root, [A], again, jobs=jobs)} for jobs in (1, 2)]
    text = report(list(runs[0].values()))
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(text)  # the corpus run's summary and integrity report, for the record
    return dict(root=root, alone=alone, runs=runs, report=text)


def test_every_submission_was_graded_and_the_run_finished(corpus):
    students = set(NOTEBOOK_CASES) | set(FILE_CASES)
    assert set(corpus["runs"][0]) == students
    assert (corpus["root"] / "grades.csv").exists()


def test_the_good_learner_is_unaffected(corpus):
    assert corpus["alone"].score == FULL
    assert all(run["good"].score == FULL and not run["good"].flags and not run["good"].integrity for run in corpus["runs"])


@pytest.mark.parametrize("student", list(NOTEBOOK_CASES) + list(FILE_CASES))
def test_score_and_explanation(corpus, student):
    row = corpus["runs"][0][student]
    want, phrase = (NOTEBOOK_CASES[student][1:] if student in NOTEBOOK_CASES else FILE_CASES[student][2:])
    score = row.score or 0.0
    if want is None:  # the broken cell (expected_tokens') costs that exercise's points, the rest is graded normally
        lost = {c.exercise for c in row.cells if c.score < c.max_score}
        assert lost == {BROKEN}, [(c.grade_id, c.score, c.hint) for c in row.cells]
        assert score == FULL - read_assignment(A).points(BROKEN), (score, row.flags)
    else:
        assert score == want, (score, row.flags, row.integrity)
    if phrase:
        assert phrase in "; ".join(row.flags + row.integrity), (row.flags, row.integrity)


def test_integrity_report_names_each_attempt(corpus):
    text = corpus["report"].split("## Integrity report")[1]
    expected = {"imports_reference": "reference solutions", "reads_checkers": "reference solutions",
                "writes_gradebook": "gradebook", "network": "network", "fork_bomb": "processes",
                "writes_outside": "absolute or parent path", "sys_exit": "exits the kernel",
                "os_exit": "exits the kernel", "input_call": "keyboard input"}
    for student, phrase in expected.items():
        line = next((ln for ln in text.splitlines() if ln.startswith(f"- {student} / {A}")), "")
        assert phrase in line, (student, text)
    # What the sandbox refused at run time is reported too, including refusals the code caught.
    refused = {"hunts_gradebooks": "opening grading data", "writes_gradebook": "opening grading data",
               "writes_outside": "writing outside", "network": "network", "fork_bomb": "starting processes"}
    for student, kind in refused.items():
        line = next((ln for ln in text.splitlines() if ln.startswith(f"- {student} / {A}")), "")
        assert "the sandbox refused" in line and kind in line, (student, line)


def test_nothing_escaped_the_sandbox(corpus):
    root = corpus["root"]
    assert not Path("/etc/course-pwned").exists()
    assert (root / "gradebook.db").stat().st_size > 0
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert gb.find_submission(A, "good").score == FULL


def test_grading_is_deterministic_serial_or_parallel(corpus):
    first = corpus["runs"][0]
    for run in corpus["runs"][1:]:
        assert run and {s: (r.score, r.flags, r.integrity) for s, r in run.items()} == {
            s: (first[s].score, first[s].flags, first[s].integrity) for s in run}


def test_parallel_merge_is_clean(corpus):
    """After three gradings (parallel, serial, parallel): no scratch roots left, one submission per
    learner in the gradebook, and grades.csv agrees with the rows and holds every learner once."""
    import csv

    from nbgrader.api import Gradebook

    root = corpus["root"]
    assert not (root / ".grading").exists()
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        subs = gb.find_assignment(A).submissions
        students = [sub.student.id for sub in subs]
        assert len(students) == len(set(students))
        scored = {sub.student.id: sub.score for sub in subs}
    with open(root / "grades.csv") as f:
        csv_rows = [r for r in csv.DictReader(f) if r["assignment"] == A]
    assert len(csv_rows) == len({r["student_id"] for r in csv_rows}) == len(scored)
    for r in csv_rows:
        assert float(r["score"]) == scored[r["student_id"]]
    last = {**corpus["runs"][0], **corpus["runs"][-1]}
    for student, row in last.items():
        if row.score is not None:
            assert scored[student] == row.score, student
    for student in ("good", "hunts_gradebooks"):
        assert (root / "feedback" / student / A / f"{A}.html").exists()
