"""coursekit.grading.merge: learners recorded in batches give the very gradebook that one-at-a-time
nbgrader (`merge_gradebook`, what `make grade` did per learner) gives, and their folders land
where the old copy put them.

The course gradebook and the learners' scratch gradebooks are built with nbgrader's API (no
grading: a few seconds): two assignments with grade, solution, task and manually graded cells
(a grade and a solution cell of the same name), a third that the scratch gradebooks lack, seeded
random scores, comments, timestamps, extensions and flags; some learners already in the course
gradebook with manual scores, comments, an extension and a different email; one learner graded
twice; one whose results name a cell the course gradebook lacks.
"""
from __future__ import annotations

import datetime
import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from coursekit.grading.gradebook import dump, merge_gradebook
from coursekit.grading.merge import Merger, MergeError, merge_folders, merge_many

CELLS = {  # assignment -> notebook -> [(name, kind)]
    "a1": {"nb1": [("g1", "grade"), ("s1", "solution"), ("m1", "grade"), ("m1", "solution"), ("t1", "task")],
           "nb2": [("g2", "grade"), ("s2", "solution")]},
    "a2": {"nb3": [("g3", "grade"), ("s3", "solution"), ("t3", "task")]},
    "a3": {"nb4": [("g4", "grade"), ("s4", "solution")]},  # the scratch gradebooks never know it
}
STUDENTS = [f"learner{k}" for k in range(8)]
# nbgrader's add_submission (building the cohort, and the one-at-a-time merge) warns about rows it
# builds before adding them to the session; they are stored correctly (coursekit.grading.gradebook says so too)
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


def course_gradebook(path: Path, assignments=("a1", "a2", "a3")) -> Path:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{path}") as gb:
        for a in assignments:
            gb.add_assignment(a, duedate="2026-12-01 12:00:00 UTC")
            for nb, cells in CELLS[a].items():
                gb.add_notebook(nb, a)
                for name, kind in cells:
                    if kind == "grade":
                        gb.add_grade_cell(name, nb, a, max_score=3, cell_type="code")
                    elif kind == "solution":
                        gb.add_solution_cell(name, nb, a)
                    else:
                        gb.add_task_cell(name, nb, a, max_score=2, cell_type="markdown")
    return path


def maybe(rng: random.Random, value, p=0.5):
    return value if rng.random() < p else None


def fill(gb, assignment: str, student: str, rng: random.Random) -> None:
    """Random values in every field a merge copies."""
    ts = rng.choice([None, "2026-12-01 10:00:00 UTC", "2026-12-02 09:30:15.250000 +0100", "2026-11-30 23:59:59"])
    ext = rng.choice([None, datetime.timedelta(days=2), datetime.timedelta(hours=5, minutes=30)])
    gb.update_or_create_submission(assignment, student, timestamp=ts, extension=ext)
    for nb in CELLS[assignment]:
        snb = gb.find_submission_notebook(nb, assignment, student)
        snb.flagged, snb.late_submission_penalty = rng.random() < 0.3, maybe(rng, float(rng.randint(0, 4)))
        for g in snb.grades:
            g.auto_score = maybe(rng, float(rng.randint(0, 3)), 0.8)
            g.manual_score, g.extra_credit = maybe(rng, float(rng.randint(0, 3)), 0.3), maybe(rng, 0.5, 0.2)
            g.needs_manual_grade = rng.random() < 0.4
        for c in snb.comments:
            c.auto_comment, c.manual_comment = maybe(rng, f"auto {rng.random():.3f}"), maybe(rng, "seen", 0.3)
    gb.db.commit()


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """The course gradebook (a1, a2, a3, no learner) and a learner's scratch one before grading
    (a1 and a2: the course bundle's). nbgrader asks the `alembic` command for the schema's
    version when it creates a gradebook: the environment's bin/ goes first on PATH."""
    base = tmp_path_factory.mktemp("templates")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        return course_gradebook(base / "course.db"), course_gradebook(base / "scratch.db", assignments=("a1", "a2"))


def scratch(base: Path, template: Path, student: str, work: list[str], rng: random.Random) -> Path:
    """A learner's scratch course root as a worker sends it back: a gradebook that knows a1 and a2
    with the learner's results of `work`, and autograded/ and feedback/ folders."""
    from nbgrader.api import Gradebook

    root = base / f"{student}-{rng.randrange(10 ** 6)}"
    root.mkdir(parents=True)
    shutil.copy(template, root / "gradebook.db")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.add_student(student, first_name=maybe(rng, "Ada"), last_name=maybe(rng, f"L{rng.randint(0, 9)}"),
                       email=maybe(rng, f"{student}@example.org"), lms_user_id=maybe(rng, str(rng.randint(0, 99))))
        for a in work:
            if a in ("a1", "a2"):
                fill(gb, a, student, rng)
    for a in work:
        for kind in ("autograded", "feedback"):
            folder = root / kind / student / a
            folder.mkdir(parents=True)
            (folder / f"{kind}.txt").write_text(f"{student} {a} {rng.random()}")
    return root


@pytest.fixture
def cohort(tmp_path, templates):
    """(the course gradebook before merging, [(scratch root, pairs)] in arrival order)."""
    from nbgrader.api import Gradebook

    rng = random.Random(20261204)
    course = Path(shutil.copy(templates[0], tmp_path / "course.db"))
    with Gradebook(f"sqlite:///{course}") as gb:  # what the course already knows of some learners
        for student in STUDENTS[:4]:
            gb.add_student(student, email=f"old-{student}@example.org", first_name="Old")
        gb.update_or_create_submission("a1", STUDENTS[0], extension=datetime.timedelta(days=3))
        for student in STUDENTS[1:3]:
            for a in ("a1", "a3"):
                gb.add_submission(a, student)
                for nb in CELLS[a]:
                    snb = gb.find_submission_notebook(nb, a, student)
                    for g in snb.grades:
                        g.manual_score, g.needs_manual_grade = 1.5, False
                    for c in snb.comments:
                        c.manual_comment = "a grader's comment"
            gb.db.commit()
    base = tmp_path / "scratch"
    items = []
    for k, student in enumerate(STUDENTS):
        work = ["a1", "a2"] if k % 2 else ["a1"]
        if k == 3:
            work = ["a1", "a3"]  # a3: the scratch gradebook lacks it (left alone)
        items.append((scratch(base, templates[1], student, work, rng), work))
    items.append((scratch(base, templates[1], STUDENTS[1], ["a1"], rng), ["a1"]))  # graded again
    return course, [(root, [(a, root.name.rsplit("-", 1)[0]) for a in work]) for root, work in items]


def one_at_a_time(into: Path, items) -> None:
    for root, pairs in items:
        merge_gradebook(into, root / "gradebook.db", pairs)


def test_batched_merge_is_the_one_at_a_time_merge(cohort, tmp_path):
    course, items = cohort
    serial, batched = (shutil.copy(course, tmp_path / name) for name in ("serial.db", "batched.db"))
    one_at_a_time(Path(serial), items)
    assert merge_many(Path(batched), [(root / "gradebook.db", pairs) for root, pairs in items]) == {}
    expected, got = dump(Path(serial)), dump(Path(batched))
    assert got == expected
    # the merge did something, and left alone what it should
    # 5 before (learner0 a1; learner1 and learner2 a1 and a3), then a1 of learner3-7, a2 of 1, 5, 7
    assert len(expected["submissions"]) == 5 + 5 + 3
    assert all(len(rows) == 1 for part in expected.values() for rows in part.values())
    before = dump(course)
    for key, rows in before["grades"].items():
        if key[0] == "a3":
            assert expected["grades"][key] == rows  # a3's grades kept: no learner's gradebook had them
    assert expected["submissions"]["a1", STUDENTS[0]] != before["submissions"]["a1", STUDENTS[0]]


@pytest.mark.parametrize("batch", [1, 3, 100])
def test_merger_in_batches(cohort, tmp_path, batch):
    """The Merger, fed one learner at a time, flushing every `batch`: the same gradebook, and the
    folders where grade.py's copy put them."""
    course, items = cohort
    expected = tmp_path / "expected"
    (expected / "gb").mkdir(parents=True)
    shutil.copy(course, expected / "gb" / "gradebook.db")
    for root, pairs in items:  # the old way: copytree over rmtree, then merge_gradebook
        for a, s in pairs:
            for kind in ("autograded", "feedback"):
                src, dst = root / kind / s / a, expected / kind / s / a
                if dst.exists():
                    shutil.rmtree(dst)
                if src.exists():
                    shutil.copytree(src, dst)
    one_at_a_time(expected / "gb" / "gradebook.db", items)

    target = tmp_path / "course"
    target.mkdir()
    shutil.copy(course, target / "gradebook.db")
    stale = target / "feedback" / STUDENTS[5] / "a1"
    stale.mkdir(parents=True)
    (stale / "old.html").write_text("stale")
    with Merger(target, batch=batch, max_wait=3600) as merger:
        for root, pairs in items:
            work = root / ".grading-copy"  # the scratch folder goes away with add
            shutil.copytree(root, work)
            assert merger.add(work, pairs, key=pairs[0][1]) == {}
            assert not work.exists()
            assert len(merger.pending) < batch
    assert merger.merged == len(items)
    assert dump(target / "gradebook.db") == dump(expected / "gb" / "gradebook.db")
    assert tree(target, ("autograded", "feedback")) == tree(expected, ("autograded", "feedback"))
    assert not (stale / "old.html").exists()


def tree(root: Path, kinds) -> dict:
    out = {}
    for kind in kinds:
        for path in sorted((root / kind).rglob("*")):
            rel = str(path.relative_to(root))
            out[rel] = (path.is_dir(), path.is_symlink(), None if path.is_dir() else path.read_bytes())
    return out


def test_folders(tmp_path):
    root, scratch_root = tmp_path / "course", tmp_path / "course" / ".grading" / "learner0"
    for kind in ("autograded", "feedback"):
        (scratch_root / kind / "learner0" / "a1").mkdir(parents=True)
        (scratch_root / kind / "learner0" / "a1" / "f.txt").write_text(kind)
    os.chmod(scratch_root / "autograded" / "learner0" / "a1" / "f.txt", 0o444)
    (scratch_root / "secret.db").write_text("the learner's own scratch gradebook")
    # a relative link: from its new place it would point elsewhere, so that folder is copied
    os.symlink("../../../secret.db", scratch_root / "feedback" / "learner0" / "a1" / "link.html")
    (root / "autograded" / "learner0" / "a2").mkdir(parents=True)  # a2: no result now, removed as before
    merge_folders(root, scratch_root, [("a1", "learner0"), ("a2", "learner0"), ("a1", "learner0")])
    moved = root / "autograded" / "learner0" / "a1" / "f.txt"
    assert moved.read_text() == "autograded" and oct(moved.stat().st_mode & 0o777) == "0o444"
    assert not (scratch_root / "autograded" / "learner0" / "a1").exists()  # moved, not copied
    link = root / "feedback" / "learner0" / "a1" / "link.html"
    assert not link.is_symlink() and link.read_text() == "the learner's own scratch gradebook"
    assert not (root / "autograded" / "learner0" / "a2").exists()


def test_a_learner_naming_what_the_course_lacks(cohort, tmp_path):
    """Left out whole and reported; the rest of the batch is written as one at a time writes it."""
    from nbgrader.api import Gradebook

    course, items = cohort
    bad_root, bad_pairs = items[2]
    with Gradebook(f"sqlite:///{bad_root / 'gradebook.db'}") as gb:
        gb.add_grade_cell("extra", "nb1", "a1", max_score=1, cell_type="code")  # not in the course
        sub = gb.find_submission_notebook("nb1", "a1", bad_pairs[0][1])
        gb.db.add(__import__("nbgrader.api", fromlist=["Grade"]).Grade(
            cell_id=gb.find_grade_cell("extra", "nb1", "a1").id, notebook=sub, auto_score=1.0))
        gb.db.commit()
    serial, batched = (Path(shutil.copy(course, tmp_path / name)) for name in ("serial.db", "batched.db"))
    good = [item for i, item in enumerate(items) if i != 2]
    one_at_a_time(serial, good)
    failed = merge_many(batched, [(root / "gradebook.db", pairs) for root, pairs in items])
    assert list(failed) == [2] and isinstance(failed[2], MergeError) and "extra" in str(failed[2])
    assert dump(batched) == dump(serial)
    with pytest.raises(Exception, match="extra"):  # what one at a time did with it
        merge_gradebook(serial, bad_root / "gradebook.db", bad_pairs)
