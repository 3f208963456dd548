"""The hostile corpus, its grading and the tests on it (collected in tests/test_corpus.py,
tests/test_corpus_landlock.py and tests/test_corpus_fallback.py, one module per sandbox layer, so
that pytest-xdist grades them side by side): bad and hostile submissions, graded by `make grade`'s code (coursekit.grading.cohort, stock nbgrader
underneath) in a scratch course root, on assignment 01 (the quickest to grade).

For each submission: the run finishes, the well-behaved learner's grade is the same as when it
is graded alone, the score is what the rules below say, a flag or hint explains it, and attempts
to reach the solutions, the gradebook or the network are in the integrity report. The same
submission graded twice, serially and in parallel, gets identical scores (checked on the learners
whose checks draw seeded random numbers or hit a limit).

The rules: a test cell scores its points if it passes, 0 otherwise (nbgrader); test cells are
restored from the source before grading, so deleting, editing or retyping them changes nothing;
a notebook that nbgrader cannot grade (missing, renamed, unreadable, empty, duplicated grade
cells) scores 0 with a flag saying why; code that reaches for the solutions or checkers is
graded as written and flagged for the instructor.
"""
import json
import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from coursekit.judge import layers
from coursekit import settings
from coursekit.grading.cohort import grade_course as grade
from coursekit.grading.report import cohort_report as report
from coursekit.registry import read as read_assignment
from tests.support import shared
from coursekit.reference import with_reference_answers
from tests.support.shared import copy_course

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


def _append(code):
    def edit(nb):
        _cells(nb, BROKEN)[0].source += "\n" + code
    return edit


WRONG_ANSWER = "def expected_tokens(alpha, K):\n    return 0.0  # wrong everywhere\n"


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
    # The references and checkers are not readable from a grading kernel (the checkers run in the
    # grader's process): the import fails, so the cell that tried loses its exercise.
    "imports_reference": (_prepend("from solutions.reference.a01_acceptance_chain import *"), None, "reference solutions"),
    "reads_checkers": (_prepend("import solutions.checks.a01 as spy\nsource = open(spy.__file__).read()"), None,
                       "reference solutions"),
    # Issue 14: what the kernel rebinds cannot change a verdict made in the grader's process. Each
    # of these also has a wrong expected_tokens, which must still lose its points.
    "rebinds_verdict": (_append(
        "import sys\nfor _m in list(sys.modules.values()):\n    try:\n        _m.verdict = lambda *a, **k: None\n"
        "    except Exception:\n        pass\n" + WRONG_ANSWER), None, "reference solutions"),
    "patches_checkers": (_append(
        "try:\n    import solutions.checks._common as _c\n    _c.close = lambda *a, **k: True\n"
        "    _c.fail = lambda *a, **k: None\nexcept Exception:\n    pass\n" + WRONG_ANSWER), None, "reference solutions"),
    "patches_libraries": (_append(
        "import numpy as np\nnp.isclose = lambda *a, **k: True\nnp.allclose = lambda *a, **k: True\n" + WRONG_ANSWER),
        None, "patches the course's helpers"),
    # Issue 14, below Python. The course root of these tests lies under /tmp, as a CI clone's may.
    "writes_course_root": (_prepend("from pathlib import Path\n# graded two at a time: <run>/.grading/<student>/autograded/<student>/<assignment> on a worker\n"
                                    "open(Path.cwd().parents[4] / 'pwned-root', 'w').write('x')"),
                           None, "refused by the grading sandbox"),
    "writes_other_learner": (_prepend(
        "from pathlib import Path\n# graded two at a time, each learner in <root>/.grading/<student>/\n"
        "open(Path.cwd().parents[4] / '.grading' / 'good' / 'pwned-other', 'w').write('x')"), None,
        "refused by the grading sandbox"),
    "reads_parent_environ": (_prepend("import os\nleak = open(f'/proc/{os.getppid()}/environ', 'rb').read()"), None,
                             "refused by the grading sandbox"),
    # Native code is invisible to the audit hook: under bubblewrap the write meets a read-only
    # course, under Landlock a ruleset that lets it write only its own folder; under the audit
    # hook alone it gets through (the integrity report names it). No process it leaves behind
    # outlives grading under any layer (the grader is their subreaper).
    # test_native_code_is_contained_below_python.
    "ctypes_write": (_prepend(
        "import ctypes\nfrom pathlib import Path\n_libc = ctypes.CDLL(None)\n"
        "_fd = _libc.open(str(Path.cwd().parents[4] / 'ctypes-escape').encode(), 0o101, 0o644)  # the course root\n"
        "_fd >= 0 and _libc.close(_fd)"), FULL, "native code"),
    "leaves_process": (_prepend("import ctypes\nctypes.CDLL(None).system(b'sleep 4321 &')"), FULL, "native code"),
    # a double fork from native code, without starting a program (Landlock stops execve): the
    # daemon, named lingers4321, outlives its parent and then the kernel unless the grader ends it
    "forks_daemon": (_prepend(
        "import ctypes\n_py = ctypes.PyDLL(None)  # fork holding the GIL: the child runs Python on\n"
        "if _py.fork() == 0:\n    _py.setsid()\n    if _py.fork() == 0:\n"
        "        _py.prctl(15, b'lingers4321', 0, 0, 0)\n        _py.sleep(4321)\n    _py._exit(0)"), FULL, "native code"),
    # a TCP connection from native code to a port the corpus listens on (PORT)
    "raw_connect": (_prepend(
        "import ctypes, socket, struct\n_libc = ctypes.CDLL(None)\n_s = _libc.socket(2, 1, 0)  # AF_INET, SOCK_STREAM\n"
        "_addr = struct.pack('=H', 2) + struct.pack('!H', PORT) + socket.inet_aton('127.0.0.1') + bytes(8)\n"
        "_libc.connect(_s, _addr, len(_addr))\n_libc.close(_s)"), FULL, "native code"),
    # a native read of the reference solutions: the cell fails (and its exercise scores 0) only if it got through
    "ctypes_reads_reference": (_prepend(
        "import ctypes, coursekit\nfrom pathlib import Path\n_libc = ctypes.CDLL(None)\n"
        "_ref = Path(coursekit.__file__).resolve().parents[1] / 'solutions' / 'reference' / 'a01_acceptance_chain.py'\n"
        "_fd = _libc.open(str(_ref).encode(), 0)\n_fd >= 0 and _libc.close(_fd)\n"
        "assert _fd < 0, 'read the reference solutions'"), FULL, "native code"),
    # Replacing the kernel's side of the channel fails closed: no hidden test can reach an answer.
    "replaces_serve": (_append("import coursekit.judge.wire\ncoursekit.judge.wire.serve = lambda *a, **k: None"),
                       read_assignment(A).points("accepted_pmf"), "patches the course's helpers"),
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


# What the sandbox layers decide differently: reading the grading data, writing outside the
# learner's folder, processes, the network, native code, interrupting a cell (by signal or
# message). The strongest layer this machine has grades the whole corpus (test_corpus.py under
# bubblewrap, test_corpus_landlock.py, test_corpus_fallback.py under the audit hook alone, in that
# order); Landlock, where bubblewrap is stronger, grades these (the rest of the corpus does not
# depend on the layer, and grading it again cost minutes):
SANDBOX_CASES = ("good", "infinite_loop", "imports_reference", "patches_checkers", "writes_course_root",
                 "writes_other_learner", "reads_parent_environ", "ctypes_write", "leaves_process", "forks_daemon",
                 "raw_connect", "ctypes_reads_reference", "writes_outside", "writes_gradebook", "network", "fork_bomb",
                 "hunts_gradebooks")
# and the audit hook alone, where a layer below Python exists too, those of them whose outcome the
# audit hook does not decide the same way in every layer: native code, the interrupt (a signal
# here, a message under the other two) and writes into a course root under the real /tmp (the
# kernel's temp folder only here). The rest are the audit hook's own refusals, graded above.
AUDIT_CASES = ("good", "infinite_loop", "writes_course_root", "writes_other_learner", "ctypes_write",
               "leaves_process", "forks_daemon", "raw_connect", "ctypes_reads_reference")
# Native code that the audit hook alone does not stop: their outcome there (a score, as in NOTEBOOK_CASES)
UNCONTAINED = {"ctypes_reads_reference": None}
ALL_CASES = tuple(NOTEBOOK_CASES) + tuple(FILE_CASES)


def has_layer(layer) -> bool:
    try:
        layers.mode()  # a layer named in COURSE_SANDBOX_REQUIRE that this machine lacks: an error
    except RuntimeError as exc:
        raise pytest.UsageError(str(exc))
    return layers.available(layer)


def students_for(layer):
    """The whole corpus under the strongest layer this machine has (under every layer with
    COURSE_CORPUS_ALL=1), the layer-dependent cases under the others."""
    strongest = next(other for other in layers.LAYERS if has_layer(other))
    return ALL_CASES if layer == strongest or settings.CORPUS_ALL.get() else AUDIT_CASES if layer == layers.AUDIT else SANDBOX_CASES


def layer_param(layer):
    """`layer` as a fixture parameter, skipped with the reason where this machine lacks it (CI
    names bubblewrap and landlock in COURSE_SANDBOX_REQUIRE, and then has_layer fails instead)."""
    return layer if has_layer(layer) else pytest.param(layer, marks=pytest.mark.skip(reason=layers.WHY_MISSING[layer]))


def grade_under(layer, namespace):
    """Make a test module (its globals, `namespace`, after `from tests.support.corpus import *`) grade
    the corpus under `layer`: its own corpus fixture, its own score test over the learners it grades,
    and, where those are only the layer-dependent ones, not the tests in which the layer plays no
    part (the strongest layer's module runs them)."""
    students = students_for(layer)

    @pytest.fixture(scope="module", params=[layer_param(layer)], ids=[layer])
    def corpus(request, tmp_path_factory):
        yield from graded_corpus(request.param, tmp_path_factory, students)

    @pytest.mark.parametrize("student", students)
    def test_score_and_explanation(corpus, student):
        assert_score_and_explanation(corpus, student)

    namespace.update(corpus=corpus, test_score_and_explanation=test_score_and_explanation)
    if students != ALL_CASES:
        namespace.pop("test_a_replaced_channel_fails_every_hidden_test_with_a_hint_that_says_so")
        namespace.pop("test_grading_is_deterministic_serial_or_parallel")  # the corpus graded again


NUMBERS = {layers.BWRAP: 4321, layers.AUDIT: 4322, layers.LANDLOCK: 4323}


def graded_corpus(mode, tmp_path_factory, students=ALL_CASES):
    """The corpus (those of its learners in `students`) graded with grading kernels under `mode`
    (a generator for a module fixture)."""
    import socket

    # make grade's workers (started by each grade() call, so they see this environment) unpack
    # their learners here instead of the temp folder: the tests can see what they leave behind
    workers = tmp_path_factory.mktemp("workers")
    chosen = {settings.SANDBOX.name: mode, settings.GRADING_SCRATCH.name: str(workers)}
    saved = {name: os.environ.get(name) for name in chosen}
    os.environ.update(chosen)
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)  # raw_connect's target
    listener.setblocking(False)
    try:
        yield dict(_grade_corpus(tmp_path_factory, mode, set(students), listener), workers=workers)
    finally:
        listener.close()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for pattern in _lingering(mode):  # whatever escaped (a failing test says so)
            subprocess.run(["pkill", *pattern], capture_output=True)


def _lingering(mode):
    """pgrep patterns of the processes leaves_process and forks_daemon start under `mode`. The
    corpora grade side by side under pytest-xdist and share the machine's process table, so each
    layer's get their own number: one run must not count (or kill) another's."""
    return [["-f", f"sleep {NUMBERS[mode]}"], ["-x", f"lingers{NUMBERS[mode]}"]]


def _grade_corpus(tmp_path_factory, mode, students, listener):
    root = tmp_path_factory.mktemp("corpus-root")
    copy_course(shared.released(tmp_path_factory), root)
    # A 10 s CPU limit per cell instead of 60 s keeps the endless loop cheaper: CPU time, not the
    # clock, so two corpora graded side by side on 2 CPUs cannot push a judged cell over it (a
    # 10 s wall-clock limit once did). The wall-clock backstop stays well above any honest cell.
    (root / "grader_config.py").write_text((root / "grader_config.py").read_text()
                                           + "\nc.JudgedExecute.cpu_timeout = 10\nc.JudgedExecute.timeout = 120\n")
    release = root / "course" / A / f"{A}.ipynb"
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
            for cell in nb.cells:
                cell.source = cell.source.replace("4321", str(NUMBERS[mode])).replace(
                    "PORT", str(listener.getsockname()[1]))
        nbformat.write(nb, folder / name)

    # Determinism, serial == parallel, and the good learner graded alone (the whole corpus only: a
    # layer's other modules compare with the full score): first, before any other submission is
    # in, `make grade --jobs 1` (stock nbgrader in the course root, one learner at a time, the good
    # one first) grades the learners whose checks draw random numbers (the seeded statistical test
    # of simulate_tokens), hit a limit, or hunt for the gradebook; then the whole corpus, these
    # three again, two learners at a time (make grade's default on this machine).
    again = ["good", "memory_blowup", "hunts_gradebooks"] if students == set(ALL_CASES) else []
    serial = []
    if again:
        for student in again:
            submit(student, f"{A}.ipynb", edit=NOTEBOOK_CASES[student][0])
        serial = grade(root, [A], again, jobs=1)
        assert [r.student for r in serial] == sorted(again)  # in order of name: the good learner first, alone
    alone = serial[0] if serial else None
    for student, (edit, _, _) in NOTEBOOK_CASES.items():
        if student in students:
            submit(student, f"{A}.ipynb", edit=edit)
    for student, (name, data, _, _) in FILE_CASES.items():
        if student in students:
            submit(student, name, data)
    runs = [{r.student: r for r in grade(root, [A], jobs=2)}]
    if serial:
        runs.append({r.student: r for r in serial})
    text = report(list(runs[0].values()))
    artifact = ARTIFACT.with_name(f"corpus-report-{mode}.md")
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_text(text)  # the corpus run's summary and integrity report, for the record
    escaped = [pid for pattern in _lingering(mode)
               for pid in subprocess.run(["pgrep", *pattern], capture_output=True, text=True).stdout.split()]
    connections = 0
    while True:
        try:
            listener.accept()[0].close()
            connections += 1
        except BlockingIOError:
            break
    return dict(root=root, alone=alone, runs=runs, report=text, mode=mode, escaped_processes=escaped,
                connections=connections, students=students)


def test_every_submission_was_graded_and_the_run_finished(corpus):
    assert set(corpus["runs"][0]) == corpus["students"]
    assert (corpus["root"] / "grades.csv").exists()


def test_the_good_learner_is_unaffected(corpus):
    assert corpus["alone"] is None or corpus["alone"].score == FULL
    assert all(run["good"].score == FULL and not run["good"].flags and not run["good"].integrity for run in corpus["runs"])


def assert_score_and_explanation(corpus, student):
    row = corpus["runs"][0][student]
    want, phrase = (NOTEBOOK_CASES[student][1:] if student in NOTEBOOK_CASES else FILE_CASES[student][2:])
    if corpus["mode"] == layers.AUDIT and student in UNCONTAINED:
        want = UNCONTAINED[student]
    score = row.score or 0.0
    if want is None:  # the broken cell (expected_tokens') costs that exercise's points, the rest is graded normally
        lost = {c.exercise for c in row.cells if c.score < c.max_score}
        assert lost == {BROKEN}, ([(c.grade_id, c.score, c.hint) for c in row.cells], row.flags, row.integrity)
        assert score == FULL - read_assignment(A).points(BROKEN), (score, row.flags)
    else:
        assert score == want, (score, row.flags, row.integrity)
    if phrase:
        assert phrase in "; ".join(row.flags + row.integrity), (row.flags, row.integrity)


def test_a_replaced_channel_fails_every_hidden_test_with_a_hint_that_says_so(corpus):
    """Every hidden test after the cell that replaced it (those of expected_tokens and simulate_tokens)."""
    row = corpus["runs"][0]["replaces_serve"]
    after = [c for c in row.cells if c.exercise != "accepted_pmf"]
    assert after and all(c.score == 0 and "lost contact" in c.hint for c in after), [(c.grade_id, c.hint) for c in after]


def test_integrity_report_names_each_attempt(corpus):
    text = corpus["report"].split("## Integrity report")[1]
    expected = {"imports_reference": "reference solutions", "reads_checkers": "reference solutions",
                "writes_gradebook": "gradebook", "network": "network", "fork_bomb": "processes",
                "writes_outside": "absolute or parent path", "sys_exit": "exits the kernel",
                "rebinds_verdict": "reference solutions", "patches_libraries": "patches the course's helpers",
                "ctypes_write": "native code", "leaves_process": "native code", "forks_daemon": "native code",
                "raw_connect": "native code", "ctypes_reads_reference": "native code",
                "os_exit": "exits the kernel", "input_call": "keyboard input"}
    for student, phrase in expected.items():
        if student not in corpus["students"]:
            continue
        line = next((ln for ln in text.splitlines() if ln.startswith(f"- {student} / {A}")), "")
        assert phrase in line, (student, text)
    # What the sandbox refused at run time is reported too, including refusals the code caught.
    refused = {"hunts_gradebooks": "opening grading data", "writes_gradebook": "opening grading data",
               "writes_course_root": "writing outside", "writes_other_learner": "grading data",
               "reads_parent_environ": "reading another process",
               "patches_checkers": "grading data", "imports_reference": "grading data",
               "writes_outside": "writing outside", "network": "network", "fork_bomb": "starting processes"}
    for student, kind in refused.items():
        if student not in corpus["students"]:
            continue
        line = next((ln for ln in text.splitlines() if ln.startswith(f"- {student} / {A}")), "")
        assert "the sandbox refused" in line and kind in line, (student, line, corpus["report"])


def test_nothing_escaped_the_sandbox(corpus):
    root = corpus["root"]
    assert not Path("/etc/course-pwned").exists()
    assert (root / "gradebook.db").stat().st_size > 0
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert gb.find_submission(A, "good").score == FULL


def test_workers_leave_nothing_behind(corpus):
    """Each task unpacks its learner into the worker's run folder and removes it when done: after
    the gradings nothing is left there, so in particular nothing that writes_course_root or
    writes_other_learner aimed at the run folder or at another learner's scratch root (only the
    audit hook's ctypes escape, test_native_code_is_contained_below_python)."""
    left = [p for p in corpus["workers"].rglob("*") if p.is_file() and p.name != "ctypes-escape"]
    assert not left, left


def native_outcomes(corpus) -> dict[str, bool]:
    """For each native-code case of the corpus graded: whether the layer contained it."""
    root = corpus["root"]
    # the course root graded serially, a worker's run folder in parallel (<run>/.grading/<student>/...)
    escapes = [p for p in (root / "ctypes-escape", *corpus["workers"].rglob("ctypes-escape")) if p.exists()]
    row = corpus["runs"][0].get("ctypes_reads_reference")
    outcomes = {"ctypes_write": not escapes, "raw_connect": not corpus["connections"],
                "ctypes_reads_reference": row is not None and row.score == FULL,
                "leaves_process": not corpus["escaped_processes"], "forks_daemon": not corpus["escaped_processes"]}
    return {case: ok for case, ok in outcomes.items() if case in corpus["students"]}


def test_native_code_is_contained_below_python(corpus):
    """ctypes bypasses the audit hook. Under bubblewrap and under Landlock its write outside the
    learner's folder, its TCP connection and its read of the references all fail; under the audit
    hook alone they get through (and the report says which layer graded the run). Under every
    layer, no process it started outlives grading."""
    outcomes = native_outcomes(corpus)
    lines = [f"| {case} | {'contained' if ok else 'got through'} |" for case, ok in outcomes.items()]
    ARTIFACT.with_name(f"corpus-native-{corpus['mode']}.md").write_text(
        f"{corpus['report'].splitlines()[0]}\n\n| case | outcome |\n|---|---|\n" + "\n".join(lines) + "\n")
    assert not corpus["escaped_processes"], corpus["escaped_processes"]
    if corpus["mode"] == layers.AUDIT:
        assert corpus["report"].startswith("Grading kernels ran under: audit hook only (")
    else:
        assert all(outcomes.values()), outcomes
        assert corpus["report"].startswith("Grading kernels ran under: " + (
            "bubblewrap\n" if corpus["mode"] == layers.BWRAP else "Landlock (ABI "))
    for p in (corpus["root"] / "ctypes-escape", *corpus["workers"].rglob("ctypes-escape")):
        p.unlink(missing_ok=True)


def test_grading_is_deterministic_serial_or_parallel(corpus):
    first = corpus["runs"][0]
    for run in corpus["runs"][1:]:
        assert run and {s: (r.score, r.flags, r.integrity) for s, r in run.items()} == {
            s: (first[s].score, first[s].flags, first[s].integrity) for s in run}


def test_parallel_merge_is_clean(corpus):
    """After the gradings (for the whole corpus: three learners serially, then all in parallel): no
    scratch roots left, one submission per learner in the gradebook, and grades.csv agrees with
    the rows and holds every learner once."""
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
    for student, row in corpus["runs"][0].items():  # the parallel run, the last
        if row.score is not None:
            assert scored[student] == row.score, student
    for student in {"good", "hunts_gradebooks"} & corpus["students"]:
        assert (root / "feedback" / student / A / f"{A}.html").exists()
