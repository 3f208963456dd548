"""Recording graded learners in the course: their folders and their gradebook rows, many at a time.

`make grade` on a cluster (coursekit.grade) gets each learner's result back as a tar of the
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

- `read_source(gradebook, pairs)`: a learner's scratch gradebook read with four SELECTs
  (SQLAlchemy core on nbgrader's own tables, so every value comes back typed exactly as the ORM
  reads it) into plain data (`Submission`), kept in memory until the batch is written: a few
  hundred bytes per learner, so the scratch folder can go at once.
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
- `merge_many(into, items)`: read and write in one call; `merge_gradebook`: the one-at-a-time
  merge, kept verbatim (the reference that the batched one is tested against).

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

import contextlib
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Hashable, Iterable

CHUNK = 500  # names per IN list (SQLite allows 32766 parameters; this keeps each statement small)
KINDS = ("autograded", "feedback")


def merge_gradebook(into: Path, source: Path, pairs: list[tuple[str, str]]) -> None:
    """Copy the submissions `pairs` ((assignment, student)) from gradebook `source` into gradebook
    `into`, replacing what `into` had for them: timestamps, flags, every grade's scores and every
    comment. Rows are found by name through nbgrader's API, so the two databases' row ids never
    matter. A submission that `source` does not have (nbgrader never recorded it) is left alone."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    # nbgrader's add_submission builds rows before adding them to the session, which SQLAlchemy
    # warns about (stock autograde does the same, out of sight); the rows are stored correctly.
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{source}") as src, Gradebook(f"sqlite:///{into}") as dst:
        warnings.filterwarnings("ignore", category=SAWarning)
        for assignment, student in pairs:
            try:
                sub = src.find_submission(assignment, student)
            except MissingEntry:
                continue
            who = sub.student
            dst.update_or_create_student(student, first_name=who.first_name, last_name=who.last_name,
                                         email=who.email, lms_user_id=who.lms_user_id)
            dst.update_or_create_submission(assignment, student, timestamp=sub.timestamp, extension=sub.extension)
            for nb in sub.notebooks:
                target = dst.find_submission_notebook(nb.name, assignment, student)
                target.flagged, target.late_submission_penalty = nb.flagged, nb.late_submission_penalty
                for g in nb.grades:
                    t = dst.find_grade(g.name, nb.name, assignment, student)
                    t.auto_score, t.manual_score, t.extra_credit = g.auto_score, g.manual_score, g.extra_credit
                    t.needs_manual_grade = g.needs_manual_grade
                for c in nb.comments:
                    t = dst.find_comment(c.name, nb.name, assignment, student)
                    t.auto_comment, t.manual_comment = c.auto_comment, c.manual_comment
            dst.db.commit()


# ---------------------------------------------------------------------------------------------
# reading a scratch gradebook


@dataclass
class Submission:
    """One learner's submission of one assignment as a scratch gradebook holds it, by name."""
    assignment: str
    student: str
    person: dict[str, Any]  # first_name, last_name, email, lms_user_id
    timestamp: Any
    extension: Any
    notebooks: list[tuple[str, Any, Any]] = field(default_factory=list)  # (name, flagged, late_submission_penalty)
    grades: list[tuple[str, str, Any, Any, Any, Any]] = field(default_factory=list)
    # (notebook, cell name, auto_score, manual_score, extra_credit, needs_manual_grade)
    comments: list[tuple[str, str, Any, Any]] = field(default_factory=list)  # (notebook, cell name, auto, manual)


def _pairs(rows: Iterable) -> list[tuple[str, str]]:
    """(assignment, student) pairs, first occurrence order, from pairs or from rows that have
    .assignment and .student (coursekit.nbg.NotebookResult: one per notebook)."""
    out: dict[tuple[str, str], None] = {}
    for r in rows:
        pair = (r.assignment, r.student) if hasattr(r, "assignment") else tuple(r)
        out[pair] = None
    return list(out)


def _chunks(values: list, size: int = CHUNK):
    for i in range(0, len(values), size):
        yield values[i:i + size]


_source = threading.local()
_engine = None


@contextlib.contextmanager
def _reading(path: Path):
    """A read-only connection to the SQLite database at `path`, from one engine kept for all of
    them: SQLAlchemy caches compiled statements per engine, and a new engine per scratch gradebook
    compiled the same four SELECTs each time (3.5 ms of every learner; 1 ms with the cache)."""
    global _engine
    import sqlite3

    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    if _engine is None:
        _engine = create_engine("sqlite://", poolclass=NullPool,
                                creator=lambda: sqlite3.connect(_source.uri, uri=True, check_same_thread=False))
    _source.uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    with _engine.connect() as conn:
        yield conn


def read_source(source: Path, pairs: Iterable) -> list[Submission]:
    """The submissions `pairs` ((assignment, student), or rows with those attributes) that gradebook
    `source` holds, in the order of `pairs`; those it lacks are left out. Four SELECTs (nbgrader's
    own table definitions, so the values are typed as the ORM reads them), no ORM session."""
    from nbgrader.api import (Assignment, BaseCell, Comment, Grade, Notebook, Student, SubmittedAssignment,
                              SubmittedNotebook)
    from sqlalchemy import select

    pairs = _pairs(pairs)
    if not pairs or not Path(source).exists():
        return []
    SA, SN, A, N, St, G, C, B = (m.__table__ for m in (SubmittedAssignment, SubmittedNotebook, Assignment, Notebook,
                                                        Student, Grade, Comment, BaseCell))
    wanted = set(pairs)
    with _reading(source) as conn:
        subs: dict[str, Submission] = {}  # submitted_assignment.id -> Submission
        for chunk in _chunks(sorted({s for _, s in pairs})):
            q = (select(SA.c.id, A.c.name, St.c.id, St.c.first_name, St.c.last_name, St.c.email,
                        St.c.lms_user_id, SA.c.timestamp, SA.c.extension)
                 .join(A, A.c.id == SA.c.assignment_id).join(St, St.c.id == SA.c.student_id)
                 .where(St.c.id.in_(chunk)))
            for sid, assignment, student, first, last, email, lms, ts, ext in conn.execute(q):
                if (assignment, student) in wanted:
                    subs[sid] = Submission(assignment, student, dict(first_name=first, last_name=last, email=email,
                                                                     lms_user_id=lms), ts, ext)
        if not subs:
            return []
        nb_names: dict[str, tuple[str, str]] = {}  # submitted_notebook.id -> (submission id, name)
        for chunk in _chunks(list(subs)):
            q = (select(SN.c.id, SN.c.assignment_id, N.c.name, SN.c.flagged, SN.c.late_submission_penalty)
                 .join(N, N.c.id == SN.c.notebook_id).where(SN.c.assignment_id.in_(chunk)))
            for nid, sid, name, flagged, penalty in conn.execute(q):
                nb_names[nid] = (sid, name)
                subs[sid].notebooks.append((name, flagged, penalty))
        for chunk in _chunks(list(nb_names)):
            q = (select(G.c.notebook_id, B.c.name, G.c.auto_score, G.c.manual_score, G.c.extra_credit,
                        G.c.needs_manual_grade).join(B, B.c.id == G.c.cell_id).where(G.c.notebook_id.in_(chunk)))
            for nid, cell, auto, manual, extra, needs in conn.execute(q):
                sid, nb = nb_names[nid]
                subs[sid].grades.append((nb, cell, auto, manual, extra, needs))
            q = (select(C.c.notebook_id, B.c.name, C.c.auto_comment, C.c.manual_comment)
                 .join(B, B.c.id == C.c.cell_id).where(C.c.notebook_id.in_(chunk)))
            for nid, cell, auto, manual in conn.execute(q):
                sid, nb = nb_names[nid]
                subs[sid].comments.append((nb, cell, auto, manual))
    order = {pair: i for i, pair in enumerate(pairs)}
    return sorted(subs.values(), key=lambda s: order[s.assignment, s.student])


# ---------------------------------------------------------------------------------------------
# writing a batch into the course gradebook


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


def dump(gradebook: Path) -> dict:
    """Everything a merge writes, keyed by name (no row ids): {"students": {id: (first, last,
    email, lms_user_id)}, "submissions": {(assignment, student): (timestamp, extension)},
    "notebooks": {(assignment, student, notebook): (flagged, penalty)}, "grades" and
    "comments": {(assignment, student, notebook, cell, cell type): values}}. A duplicated row
    would show as a count above 1 (the values are lists)."""
    from nbgrader.api import (Assignment, BaseCell, Comment, Grade, Notebook, Student, SubmittedAssignment,
                              SubmittedNotebook)
    from sqlalchemy import create_engine, select
    from sqlalchemy.pool import NullPool

    SA, SN, A, N, St, G, C, B = (m.__table__ for m in (SubmittedAssignment, SubmittedNotebook, Assignment, Notebook,
                                                        Student, Grade, Comment, BaseCell))
    out: dict[str, dict] = {k: {} for k in ("students", "submissions", "notebooks", "grades", "comments")}
    engine = create_engine(f"sqlite:///{gradebook}", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            for sid, *rest in conn.execute(select(St.c.id, St.c.first_name, St.c.last_name, St.c.email,
                                                  St.c.lms_user_id)):
                out["students"].setdefault(sid, []).append(tuple(rest))
            for a, s, ts, ext in conn.execute(select(A.c.name, SA.c.student_id, SA.c.timestamp, SA.c.extension)
                                              .join(A, A.c.id == SA.c.assignment_id)):
                out["submissions"].setdefault((a, s), []).append((ts, ext))
            base = (select(A.c.name, SA.c.student_id, N.c.name).select_from(SN)
                    .join(SA, SA.c.id == SN.c.assignment_id).join(A, A.c.id == SA.c.assignment_id)
                    .join(N, N.c.id == SN.c.notebook_id))
            for a, s, nb, flagged, penalty in conn.execute(base.add_columns(SN.c.flagged, SN.c.late_submission_penalty)):
                out["notebooks"].setdefault((a, s, nb), []).append((flagged, penalty))
            for table, name, cols in ((G, "grades", ("auto_score", "manual_score", "extra_credit", "needs_manual_grade")),
                                      (C, "comments", ("auto_comment", "manual_comment"))):
                q = (base.add_columns(B.c.name, B.c.type, *(table.c[c] for c in cols))
                     .join(table, table.c.notebook_id == SN.c.id).join(B, B.c.id == table.c.cell_id))
                for a, s, nb, cell, kind, *values in conn.execute(q):
                    out[name].setdefault((a, s, nb, cell, kind), []).append(tuple(values))
    finally:
        engine.dispose()
    return out
