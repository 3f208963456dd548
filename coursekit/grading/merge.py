"""Recording graded learners in the course: their folders and their gradebook rows, many at a time.

`make grade` on a cluster (coursekit.grading.cohort) gets each learner's result back as a tar of the
learner's autograded/ and feedback/ folders and a scratch gradebook, and records it in the course
root. Done one learner at a time through nbgrader's Gradebook API (`merge_gradebook`: one query
per student, submission, notebook, grade and comment, and a commit per submission), plus
`shutil.copytree` of the folders, that cost 0.22-0.26 s per learner (2026-12-04): 37-43 minutes
of the main process for 10,000 learners. This module does the same work in batches.

What it writes is exactly what `merge_gradebook` writes (tests/test_merge.py compares whole
gradebooks, merged both ways): for every (assignment, student) that the scratch gradebook holds,
the student's first/last name, email and lms_user_id; the submission's timestamp (through
nbgrader's parse_utc, as update_or_create_submission does) and extension; every submitted
notebook's flagged and late_submission_penalty; every grade's auto_score, manual_score,
extra_credit and needs_manual_grade; every comment's auto_comment and manual_comment. Rows are
matched by name (assignment, notebook, cell name, student), never by row id: a grade goes to the
destination's grade of the grade cell of that name, else of the task cell (nbgrader's find_grade);
a comment to the solution cell's, else the task cell's (find_comment). A submission that the
course gradebook lacks is created as nbgrader's add_submission creates it: one submitted notebook
per notebook of the assignment, one grade per grade cell and task cell, one comment per solution
cell and task cell, every field at its default until the learner's values are set. A submission
that the scratch gradebook lacks (nbgrader never recorded it) is left alone, as before.

How:

- `read_source(gradebook, pairs)` (coursekit.grading.gradebook): a learner's scratch gradebook
  read into plain data (`Submission`), kept in memory until the batch is written.
- `write(into, batch)`: one session of the course gradebook for the whole batch: the batch's
  students, its existing submissions, their submitted notebooks, grades and comments loaded with
  one query each (IN lists of at most 500 names), the assignments' notebooks and cells with one
  more; the values set on those ORM objects (SQLAlchemy then UPDATEs only what changed, grouped
  in executemany), missing students and submissions added, and ONE commit. Every learner of the
  batch is checked before anything is written: a learner whose results name an assignment,
  notebook or cell that the course gradebook lacks (the one-at-a-time merge raised MissingEntry
  for them, part way through) is left out whole and reported, and the rest of the batch is
  written. (If a batch's write fails all the same, `Merger.flush` writes each learner on their
  own, so that one cannot sink the others.)
- `merge_folders(root, scratch, pairs)`: autograded/<student>/<assignment>/ and
  feedback/<student>/<assignment>/ moved into place with os.replace (scratch roots live in
  root/.grading/, the same filesystem), else copied. The destination is replaced as before
  (removed when the learner's result has no such folder). A folder holding a symbolic link is
  copied as before (copytree follows links), never moved: a relative link would point somewhere
  else from its new place (for instance at the course gradebook).
- `Merger`: what the main loop feeds each learner's result to as it arrives. `add` moves the
  folders, reads the scratch gradebook into memory and removes the scratch folder; every `batch`
  learners (or `max_wait` seconds after the oldest one waiting, or on `flush()`, or on leaving
  its `with` block) the waiting learners are written in one session. A crash loses at most the
  gradebook rows of one batch (their folders are already in place; grading them again redoes
  both), and memory stays bounded by the batch.
- `merge_many(into, items)`: read and write in one call; `merge_gradebook`
  (coursekit.grading.gradebook): the one-at-a-time merge, kept verbatim (the reference that the
  batched one is tested against).

Measured (benchmarks/merge.py, `make bench-merge`, 2026-12-05, the 2-core course machine, quiet; a
real learner of all six notebooks graded once and copied under 1,000 names; per learner, the
result tar's unpacking included):

    course gradebook before      one at a time        batched (200 per session)    10,000 learners
    empty (0 -> 1,000 learners)  195 ms (200 of them)  28.3 ms                      32 min -> 4.7 min
    9,000 other learners         1162 ms (100 of them) 30.6 ms                      194 min -> 5.1 min

Batched, a learner costs: unpacking the tar about 16 ms, the folders moved and the scratch
gradebook read and removed about 4 ms, the gradebook writes 8-10 ms. Both ways give the same
gradebook and folders (the bench checks it).
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Hashable, Iterable

from coursekit.grading.gradebook import Submission, _chunks, _pairs, read_source

KINDS = ("autograded", "feedback")


class MergeError(LookupError):
    """A learner's results name something the course gradebook lacks (nothing of theirs written)."""


# the cell types whose rows a name resolves to, best first (nbgrader's find_grade / find_comment)
GRADE_TYPES = ("GradeCell", "TaskCell")
COMMENT_TYPES = ("SolutionCell", "TaskCell")


def _resolve(by_type: dict[str, Any], types: tuple[str, ...]):
    for t in types:
        if t in by_type:
            return by_type[t]
    return None


def write(into: Path, batch: list[list[Submission]]) -> dict[int, Exception]:
    """Record `batch` (per learner, the submissions `read_source` read) in gradebook `into`, in one
    session and one commit. Returns {index in batch: error} of the learners left out whole
    because their results name an assignment, notebook or cell that `into` lacks."""
    import warnings

    from nbgrader import utils
    from nbgrader.api import (Assignment, BaseCell, Comment, Grade, Gradebook, Notebook, Student,
                              SubmittedAssignment, SubmittedNotebook, new_uuid)
    from sqlalchemy.exc import SAWarning

    failed: dict[int, Exception] = {}
    todo = [(i, subs) for i, subs in enumerate(batch) if subs]
    if not todo:
        return failed
    students = sorted({s.student for _, subs in todo for s in subs})
    names = sorted({s.assignment for _, subs in todo for s in subs})
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{into}") as gb:
        warnings.filterwarnings("ignore", category=SAWarning)
        db = gb.db
        with db.no_autoflush:
            # the assignments, their notebooks and cells (what a new submission mirrors)
            assignments = {a.name: a for a in db.query(Assignment).filter(Assignment.name.in_(names))}
            notebooks: dict[tuple[str, str], Any] = {}  # (assignment, notebook) -> Notebook
            for nb, a in db.query(Notebook, Assignment.name).join(Assignment, Assignment.id == Notebook.assignment_id) \
                    .filter(Assignment.name.in_(names)):
                notebooks[a, nb.name] = nb
            cells: dict[str, list[tuple[str, str, str]]] = {}  # notebook id -> [(cell id, name, type)] in rowid order
            nb_ids = [nb.id for nb in notebooks.values()]
            for chunk in _chunks(nb_ids):
                for cid, name, kind, nid in db.query(BaseCell.id, BaseCell.name, BaseCell.type, BaseCell.notebook_id) \
                        .filter(BaseCell.notebook_id.in_(chunk)):
                    cells.setdefault(nid, []).append((cid, name, kind))
            people = {}
            for chunk in _chunks(students):
                people.update((p.id, p) for p in db.query(Student).filter(Student.id.in_(chunk)))
            # the batch's submissions that the gradebook has, with their notebooks, grades and comments
            existing: dict[tuple[str, str], Any] = {}
            for chunk in _chunks(students):
                for sub, a in db.query(SubmittedAssignment, Assignment.name) \
                        .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id) \
                        .filter(Assignment.name.in_(names), SubmittedAssignment.student_id.in_(chunk)):
                    existing[a, sub.student_id] = sub
            sub_ids = {sub.id: key for key, sub in existing.items()}
            # (assignment, student, notebook) -> SubmittedNotebook; (..., notebook, cell) -> {type: Grade/Comment}
            snbs: dict[tuple[str, str, str], Any] = {}
            grades: dict[tuple[str, str, str, str], dict[str, Any]] = {}
            comments: dict[tuple[str, str, str, str], dict[str, Any]] = {}
            snb_keys: dict[str, tuple[str, str, str]] = {}
            for chunk in _chunks(list(sub_ids)):
                for snb, nb_name in db.query(SubmittedNotebook, Notebook.name) \
                        .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id) \
                        .filter(SubmittedNotebook.assignment_id.in_(chunk)):
                    key = (*sub_ids[snb.assignment_id], nb_name)
                    snbs[key] = snb
                    snb_keys[snb.id] = key
            for chunk in _chunks(list(snb_keys)):
                for g, name, kind in db.query(Grade, BaseCell.name, BaseCell.type) \
                        .join(BaseCell, BaseCell.id == Grade.cell_id).filter(Grade.notebook_id.in_(chunk)):
                    grades.setdefault((*snb_keys[g.notebook_id], name), {})[kind] = g
                for c, name, kind in db.query(Comment, BaseCell.name, BaseCell.type) \
                        .join(BaseCell, BaseCell.id == Comment.cell_id).filter(Comment.notebook_id.in_(chunk)):
                    comments.setdefault((*snb_keys[c.notebook_id], name), {})[kind] = c

            nbs_of: dict[tuple[str, str], set[str]] = {}
            for key in snbs:
                nbs_of.setdefault(key[:2], set()).add(key[2])
            cells_of: dict[tuple[str, str], dict[str, set[str]]] = {}  # (assignment, notebook) -> {name: types}
            for (a, nb_name), nb in notebooks.items():
                for _, name, kind in cells.get(nb.id, ()):
                    cells_of.setdefault((a, nb_name), {}).setdefault(name, set()).add(kind)

            def check(sub: Submission) -> None:
                """Raise MergeError where one-at-a-time nbgrader would raise MissingEntry."""
                key = (sub.assignment, sub.student)
                new = key not in existing
                if new and sub.assignment not in assignments:
                    raise MergeError(f"No such assignment: {sub.assignment}")
                for nb, *_ in sub.notebooks:
                    if nb not in (nbs_of.get(key, ()) if not new else {n for (a, n) in notebooks if a == sub.assignment}):
                        raise MergeError(f"No such submitted notebook: {sub.assignment}/{nb} for {sub.student}")
                for what, rows, types, found in (("grade", sub.grades, GRADE_TYPES, grades),
                                                 ("comment", sub.comments, COMMENT_TYPES, comments)):
                    for nb, cell, *_ in rows:
                        ok = (set(types) & cells_of.get((sub.assignment, nb), {}).get(cell, set())) if new \
                            else _resolve(found.get((*key, nb, cell), {}), types) is not None
                        if not ok:
                            raise MergeError(f"No such {what}: {sub.assignment}/{nb}/{cell} for {sub.student}")

            for i, subs in todo:  # every learner checked first: all or nothing per learner
                try:
                    for sub in subs:
                        check(sub)
                except MergeError as exc:
                    failed[i] = exc

            for i, subs in todo:
                if i in failed:
                    continue
                for sub in subs:
                    who = people.get(sub.student)
                    if who is None:
                        who = people[sub.student] = Student(id=sub.student, **sub.person)
                        db.add(who)
                    else:
                        for attr, value in sub.person.items():
                            setattr(who, attr, value)
                    key = (sub.assignment, sub.student)
                    target = existing.get(key)
                    if target is None:  # as nbgrader's add_submission makes it (ids set here: no relationship loads)
                        target = existing[key] = SubmittedAssignment(
                            id=new_uuid(), assignment_id=assignments[sub.assignment].id, student_id=sub.student,
                            timestamp=utils.parse_utc(sub.timestamp), extension=sub.extension)
                        new_rows = [target]
                        for (a, nb_name), nb in notebooks.items():
                            if a != sub.assignment:
                                continue
                            snb = snbs[(*key, nb_name)] = SubmittedNotebook(id=new_uuid(), notebook_id=nb.id,
                                                                            assignment_id=target.id)
                            new_rows.append(snb)
                            for cid, name, kind in cells.get(nb.id, ()):
                                if kind in ("GradeCell", "TaskCell"):
                                    g = Grade(id=new_uuid(), cell_id=cid, notebook_id=snb.id)
                                    grades.setdefault((*key, nb_name, name), {})[kind] = g
                                    new_rows.append(g)
                                if kind in ("SolutionCell", "TaskCell"):
                                    c = Comment(id=new_uuid(), cell_id=cid, notebook_id=snb.id)
                                    comments.setdefault((*key, nb_name, name), {})[kind] = c
                                    new_rows.append(c)
                        db.add_all(new_rows)
                    else:
                        target.timestamp, target.extension = utils.parse_utc(sub.timestamp), sub.extension
                    for nb, flagged, penalty in sub.notebooks:
                        snb = snbs[(*key, nb)]
                        snb.flagged, snb.late_submission_penalty = flagged, penalty
                    for nb, cell, auto, manual, extra, needs in sub.grades:
                        g = _resolve(grades[(*key, nb, cell)], GRADE_TYPES)
                        g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade = auto, manual, extra, needs
                    for nb, cell, auto, manual in sub.comments:
                        c = _resolve(comments[(*key, nb, cell)], COMMENT_TYPES)
                        c.auto_comment, c.manual_comment = auto, manual
        db.commit()
    return failed


def merge_many(into: Path, items: list[tuple[Path, Iterable]]) -> dict[int, Exception]:
    """Many (scratch gradebook, pairs) merged into gradebook `into` in one session and one commit;
    the same gradebook contents as `merge_gradebook(into, source, pairs)` for each item in turn.
    Returns {index in items: error} of the items left out (see `write`)."""
    return write(into, [read_source(source, pairs) for source, pairs in items])


# ---------------------------------------------------------------------------------------------
# the folders


def _has_link(folder: Path) -> bool:
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            if os.path.islink(os.path.join(base, name)):
                return True
    return False


def merge_folders(root: Path, scratch: Path, rows: Iterable) -> None:
    """autograded/ and feedback/<student>/<assignment>/ of every (assignment, student) in `rows`
    (pairs, or rows with those attributes) from the scratch course root `scratch` to the course
    root `root`, replacing what `root` had there (removed when `scratch` has no such folder): moved
    when they can be (same filesystem, no symbolic link inside), else copied as copytree copies."""
    for assignment, student in _pairs(rows):
        for kind in KINDS:
            src, dst = (Path(r) / kind / student / assignment for r in (scratch, root))
            if dst.is_symlink() or dst.is_file():
                dst.unlink()
            elif dst.exists():
                shutil.rmtree(dst)
            if not src.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not src.is_symlink() and not _has_link(src):
                try:
                    os.replace(src, dst)
                    continue
                except OSError:  # another filesystem
                    pass
            shutil.copytree(src, dst)


# ---------------------------------------------------------------------------------------------
# the main loop's side


class Merger:
    """Records learners' results in course root `root` as they arrive, in batches.

        with Merger(root, batch=200) as merger:
            for each learner's result, unpacked into `scratch`:
                failed = merger.add(scratch, rows, key=student)   # {key: error} of a written batch
                ...
            failed = merger.flush()                              # also done on leaving the block

    `add` moves the folders at once, reads the scratch gradebook into memory and removes
    `scratch`; the gradebook rows wait for the next flush: every `batch` learners, when the oldest
    waiting learner has waited `max_wait` seconds (checked at each `add`), on `flush()`. A flush
    returns {key: error} of the learners whose rows could not be recorded (see `write`); an error
    in `add` itself (a folder, the scratch gradebook) is raised there, for that learner alone."""

    def __init__(self, root: Path, batch: int = 200, max_wait: float = 60.0, gradebook: Path | None = None):
        self.root = Path(root)
        self.gradebook = Path(gradebook) if gradebook else self.root / "gradebook.db"
        self.batch, self.max_wait = max(1, batch), max_wait
        self.pending: list[tuple[Hashable, list[Submission]]] = []
        self.since = 0.0
        self.seconds = 0.0  # spent in add and flush
        self.merged = 0  # learners written

    def add(self, scratch: Path, rows: Iterable, key: Hashable = None) -> dict[Hashable, Exception]:
        t0 = time.perf_counter()
        pairs = _pairs(rows)
        scratch = Path(scratch)
        merge_folders(self.root, scratch, pairs)
        subs = read_source(scratch / "gradebook.db", pairs)
        shutil.rmtree(scratch, ignore_errors=True)
        if not self.pending:
            self.since = t0
        self.pending.append((key, subs))
        self.seconds += time.perf_counter() - t0
        if len(self.pending) >= self.batch or time.perf_counter() - self.since >= self.max_wait:
            return self.flush()
        return {}

    def flush(self) -> dict[Hashable, Exception]:
        """Write the waiting learners (one session, one commit); {key: error} of those left out."""
        if not self.pending:
            return {}
        t0 = time.perf_counter()
        pending, self.pending = self.pending, []
        try:
            failed = {pending[i][0]: exc for i, exc in write(self.gradebook, [subs for _, subs in pending]).items()}
        except Exception:  # noqa: BLE001 - the batch as a whole failed: each learner on their own
            failed = {}
            for key, subs in pending:
                try:
                    for exc in write(self.gradebook, [subs]).values():
                        failed[key] = exc
                except Exception as exc:  # noqa: BLE001
                    failed[key] = exc
        self.merged += len(pending) - len(failed)
        self.seconds += time.perf_counter() - t0
        return failed

    def __enter__(self) -> "Merger":
        return self

    def __exit__(self, *exc) -> None:
        self.flush()


# ---------------------------------------------------------------------------------------------
# comparing gradebooks
