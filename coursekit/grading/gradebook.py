"""A learner's scratch gradebook read into plain data, and the one-at-a-time merge it is tested against.

- `read_source(gradebook, pairs)`: a learner's scratch gradebook read with four SELECTs
  (SQLAlchemy core on nbgrader's own tables, so every value comes back typed exactly as the ORM
  reads it) into plain data (`Submission`), kept in memory until the batch is written
  (coursekit.grading.merge.write): a few hundred bytes per learner, so the scratch folder can go at
  once.
- `merge_gradebook(into, source, pairs)`: the one-at-a-time merge through nbgrader's Gradebook API,
  kept verbatim: the reference that the batched one is tested against (tests/test_merge.py).
- `dump(gradebook)`: a gradebook by name, for comparing two of them.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

CHUNK = 500  # names per IN list (SQLite allows 32766 parameters; this keeps each statement small)


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
    .assignment and .student (coursekit.grading.results.NotebookResult: one per notebook)."""
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
