"""`make bench-merge`: what recording a graded learner in the course costs `make grade`'s main
process, one learner at a time (as make grade once did it) and in batches (coursekit.grading.merge).

1. One real learner: the reference answers of every assignment (or --assignments) graded once, as
   a cluster worker grades a learner (coursekit.grading.bundle.course_bundle and grade_learner_task, in
   this process: about 90 s for six): its rows and its result tar (autograded/, feedback/,
   scratch gradebook).
2. That result copied under --learners new names (synthetic learners, seeded): the scratch
   gradebook's student renamed and its values varied (scores, needs_manual_grade, comments,
   names and emails, timestamps, some extensions, flags and late penalties), the folders renamed,
   each packed into its own result tar as a worker packs it. Not timed.
3. Side by side, each into its own copy of the course root (its gradebook optionally holding
   --prefill other learners already, to see the cost at a cohort's size), per learner exactly
   what the main loop does with a result that arrives:
   - one at a time (the first --serial learners): the tar unpacked into root/.grading/<student>/,
     the folders copied (rmtree + copytree) and `merge_gradebook` (nbgrader's API, one query per
     row, a commit per submission), the scratch folder removed: make grade's `_merge` as it was;
   - batched (all --learners): the tar unpacked the same way, then `Merger.add` (folders moved
     into place, the scratch gradebook read into memory, the scratch folder removed), a flush
     (one gradebook session, one commit) every --batch learners and at the end.
   Seconds per learner both ways, where they go, and the extrapolation to 10,000 learners.
4. A check that both ways give the same: the gradebooks dumped by name (coursekit.grading.gradebook.dump:
   students, submissions, notebooks, every grade and comment) for the learners merged both ways,
   and their autograded/ and feedback/ folders byte for byte.

    python benchmarks/merge.py [--learners 1000] [--serial 200] [--batch 200] [--prefill 0] [--assignments A ...]

About 5 minutes on the 2-core course machine with the defaults.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import io
import os
import platform
import random
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from coursekit import settings
from coursekit.grading.gradebook import Submission, dump, merge_gradebook, read_source
from coursekit.grading.merge import Merger, write

from coursekit.paths import assignments as course_assignments

A = course_assignments()  # --assignments: what one synthetic learner handed in (default: the whole course)
SCRATCH = ".grading"  # make grade's scratch roots inside the course root (coursekit.judge.sandbox.SCRATCH_ROOTS)


def unpack(data: bytes, dest: Path) -> None:
    """coursekit.grading.bundle.unpack."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")


def old_merge(root: Path, scratch: Path, rows) -> None:
    """make grade's _merge as it was (2026-12-04): copy the folders, merge_gradebook, one learner."""
    for row in rows:
        for kind in ("autograded", "feedback"):
            src, dst = (r / kind / row.student / row.assignment for r in (scratch, root))
            if dst.exists():
                shutil.rmtree(dst)
            if src.exists():
                shutil.copytree(src, dst)
    merge_gradebook(root / "gradebook.db", scratch / "gradebook.db", [(r.assignment, r.student) for r in rows])
    shutil.rmtree(scratch)


def graded_learner(work: Path, A: list[str]) -> tuple[Path, list, bytes]:
    """A course root that knows the assignments A, and one learner's rows and result tar (every
    assignment of A answered with the reference), graded as a worker does."""
    from coursekit.grading.bundle import course_bundle, grade_learner_task, learner_record, pack
    from coursekit.grading.scratch import ScratchCourse
    from coursekit.reference import with_reference_answers

    root = work / "course"
    course = ScratchCourse(root)
    for a in A:
        release = course.generate(a) / f"{a}.ipynb"
        nb = with_reference_answers(release, root / "source" / a / f"{a}.ipynb", work / "tmp" / f"{a}.ipynb")
        course.submit("learner", a, nb, f"{a}.ipynb")
    os.environ.setdefault(settings.GRADING_SCRATCH.name, str(work / "workers"))
    out, result, _ = grade_learner_task(course_bundle(root, A), "learner", A,
                                        pack(root, [f"submitted/learner/{a}" for a in A]),
                                        learner_record(root / "gradebook.db", "learner", A),
                                        900, [str(root)], 1, "bench-merge")
    shutil.rmtree(root / "submitted")
    return root, [r for rows in out.values() for r in rows], result


def vary(db: Path, name: str, rng: random.Random) -> None:
    """The template learner of scratch gradebook `db` renamed `name`, with seeded values."""
    from nbgrader.api import Comment, Grade, Student, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import create_engine, update
    from sqlalchemy.pool import NullPool

    engine = create_engine(f"sqlite:///{db}", poolclass=NullPool)
    St, SA, SN, G, C = (m.__table__ for m in (Student, SubmittedAssignment, SubmittedNotebook, Grade, Comment))
    with engine.begin() as conn:
        conn.execute(update(St).values(id=name, first_name=f"First{name[1:]}", last_name=rng.choice([None, "Doe"]),
                                       email=rng.choice([None, f"{name}@example.org"]),
                                       lms_user_id=rng.choice([None, str(rng.randrange(10 ** 6))])))
        conn.execute(update(SA).values(
            student_id=name,
            timestamp=rng.choice([None, datetime.datetime(2026, 12, 1, 9) + datetime.timedelta(seconds=rng.randrange(86400))]),
            extension=rng.choice([None] * 5 + [datetime.timedelta(days=2)])))
        conn.execute(update(SN).values(flagged=rng.random() < 0.1, late_submission_penalty=rng.choice([None] * 5 + [1.0])))
        for gid, auto in conn.execute(G.select().with_only_columns(G.c.id, G.c.auto_score)).all():
            conn.execute(update(G).where(G.c.id == gid).values(
                auto_score=rng.choice([auto, 0.0, auto]), needs_manual_grade=rng.random() < 0.1,
                manual_score=rng.choice([None] * 9 + [1.0])))
        for cid, in conn.execute(C.select().with_only_columns(C.c.id)).all():
            conn.execute(update(C).where(C.c.id == cid).values(auto_comment=rng.choice([None, f"auto {rng.random():.4f}"])))
    engine.dispose()


def synthetic(template: Path, names: list[str], work: Path, seed: int = 20261204) -> list[bytes]:
    """One result tar per name: the template result (unpacked in `template`) renamed and varied."""
    rng = random.Random(seed)
    out = []
    for name in names:
        db = work / "gradebook.db"
        shutil.copy(template / "gradebook.db", db)
        vary(db, name, rng)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for kind in ("autograded", "feedback"):
                tar.add(template / kind / "learner", arcname=f"{kind}/{name}")
            tar.add(db, arcname="gradebook.db")
        out.append(buf.getvalue())
    return out


def prefill(gradebook: Path, templates: list[Submission], count: int, batch: int = 500) -> float:
    """`count` other learners (p00000...) put in `gradebook` beforehand, as a cohort's gradebook holds them."""
    t0 = time.perf_counter()
    for start in range(0, count, batch):
        write(gradebook, [[dataclasses.replace(t, student=f"p{k:05d}") for t in templates]
                          for k in range(start, min(count, start + batch))])
    return time.perf_counter() - t0


def tree(root: Path, students: set[str]) -> dict:
    out = {}
    for kind in ("autograded", "feedback"):
        for path in sorted((root / kind).rglob("*")):
            rel = path.relative_to(root)
            if rel.parts[1] in students:
                out[str(rel)] = (path.is_dir(), None if path.is_dir() else (path.read_bytes(), path.stat().st_mode))
    return out


def only(d: dict, students: set[str]) -> dict:
    return {part: {k: v for k, v in rows.items() if (k if part == "students" else k[1]) in students}
            for part, rows in d.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--learners", type=int, default=1000, help="learners merged in batches (default 1000)")
    ap.add_argument("--serial", type=int, default=200, help="of them, merged one at a time too (default 200)")
    ap.add_argument("--batch", type=int, default=200, help="learners per gradebook session (default 200)")
    ap.add_argument("--prefill", type=int, default=0, help="other learners in the course gradebook beforehand")
    ap.add_argument("--assignments", nargs="+", default=course_assignments(), metavar="ASSIGNMENT",
                    help="what each synthetic learner handed in (default: every assignment of the course)")
    args = ap.parse_args(argv)
    A = args.assignments
    serial_n = min(args.serial, args.learners)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{datetime.datetime.now():%Y-%m-%d %H:%M}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        course, rows, result = graded_learner(work, A)
        template = work / "template"
        unpack(result, template)
        score = sum(r.score for r in rows)
        print(f"1. one learner of {', '.join(a.split('_')[0] for a in A)} graded as a worker grades it: {time.perf_counter() - t0:.1f} s "
              f"(score {score:g}/{sum(r.max_score for r in rows):g}, result tar {len(result) / 1024:.0f} KiB)", flush=True)

        names = [f"s{k:05d}" for k in range(args.learners)]
        t0 = time.perf_counter()
        tars = synthetic(template, names, work)
        print(f"2. {len(names)} synthetic learners made: {time.perf_counter() - t0:.1f} s", flush=True)

        roots = {}
        for way in ("serial", "batched"):
            roots[way] = work / way
            roots[way].mkdir()
            shutil.copy(course / "gradebook.db", roots[way] / "gradebook.db")
        if args.prefill:
            first = read_source(template / "gradebook.db", [(a, "learner") for a in A])
            secs = prefill(roots["serial"] / "gradebook.db", first, args.prefill)
            shutil.copy(roots["serial"] / "gradebook.db", roots["batched"] / "gradebook.db")
            print(f"   the course gradebook holds {args.prefill} other learners beforehand ({secs:.1f} s to put them in)")

        def arrive(root: Path, name: str, data: bytes) -> tuple[Path, list]:
            scratch = root / SCRATCH / name
            scratch.mkdir(parents=True)
            unpack(data, scratch)
            return scratch, [dataclasses.replace(r, student=name) for r in rows]

        # one at a time, as make grade once merged each result
        unpack_s = {"serial": 0.0, "batched": 0.0}
        per = []
        t0 = time.perf_counter()
        for name, data in zip(names[:serial_n], tars):
            a = time.perf_counter()
            scratch, learner_rows = arrive(roots["serial"], name, data)
            b = time.perf_counter()
            old_merge(roots["serial"], scratch, learner_rows)
            per.append(time.perf_counter() - a)
            unpack_s["serial"] += b - a
        serial_s = time.perf_counter() - t0

        # in batches
        flushes = []
        t0 = time.perf_counter()
        with Merger(roots["batched"], batch=args.batch, max_wait=float("inf")) as merger:
            for name, data in zip(names, tars):
                a = time.perf_counter()
                scratch, learner_rows = arrive(roots["batched"], name, data)
                unpack_s["batched"] += time.perf_counter() - a
                before = merger.seconds
                waiting = len(merger.pending)
                failed = merger.add(scratch, learner_rows, key=name)
                assert not failed, failed
                if waiting + 1 >= args.batch:
                    flushes.append(merger.seconds - before)
            a, before = time.perf_counter(), merger.seconds
            merger.flush()
            if merger.seconds > before:
                flushes.append(merger.seconds - before)
        batched_s = time.perf_counter() - t0
        assert merger.merged == len(names)

        n = len(names)
        s_one, b_one = serial_s / serial_n, batched_s / n
        flush_s = sum(flushes)
        print(f"3. recording learners ({args.batch} per gradebook session; gradebook "
              f"{(roots['batched'] / 'gradebook.db').stat().st_size / 2 ** 20:.1f} MiB at the end):")
        print(f"   one at a time ({serial_n} learners): {serial_s:.1f} s, {s_one * 1000:.1f} ms per learner "
              f"(unpacking {unpack_s['serial'] / serial_n * 1000:.1f} ms; first 20 "
              f"{statistics.mean(per[:20]) * 1000:.0f} ms, last 20 {statistics.mean(per[-20:]) * 1000:.0f} ms)"
              f" -> 10,000 learners: {s_one * 10000 / 60:.1f} min")
        print(f"   batched ({n} learners): {batched_s:.1f} s, {b_one * 1000:.1f} ms per learner "
              f"(unpacking {unpack_s['batched'] / n * 1000:.1f} ms, folders and scratch gradebook "
              f"{(merger.seconds - flush_s) / n * 1000:.1f} ms, gradebook writes {flush_s / n * 1000:.1f} ms: "
              f"{len(flushes)} flushes, first {flushes[0]:.2f} s, last {flushes[-1]:.2f} s)"
              f" -> 10,000 learners: {b_one * 10000 / 60:.1f} min")
        print(f"   speed-up {s_one / b_one:.1f}x; target under 10 min for 10,000 (< 60 ms per learner): "
              f"{'met' if b_one < 0.06 else 'NOT met'}")

        both = set(names[:serial_n])
        d_serial, d_batched = (only(dump(roots[w] / "gradebook.db"), both) for w in ("serial", "batched"))
        same_gb = d_serial == d_batched
        rows_n = sum(len(v) for v in d_serial.values())
        same_tree = tree(roots["serial"], both) == tree(roots["batched"], both)
        left = [p for w in roots for p in (roots[w] / SCRATCH).iterdir()] if any((roots[w] / SCRATCH).exists() for w in roots) else []
        print(f"4. the {serial_n} learners merged both ways: gradebook contents "
              f"{'identical' if same_gb else 'DIFFERENT'} ({rows_n} rows: students, submissions, notebooks, "
              f"grades, comments), folders {'identical' if same_tree else 'DIFFERENT'}; scratch folders left: {len(left)}")
        return 0 if same_gb and same_tree and not left else 1


if __name__ == "__main__":
    sys.exit(main())
