"""Grading a whole cohort (`make grade`, `python -m coursekit.grade`: `grade_course`).

For every submitted/<student>/<assignment>/ under the course root (nbgrader's layout):

1. preflight, autograde and the result read and classified exactly as `make check` does it for
   one learner (coursekit.grading.driver); every submission within its own wall-clock limit, so a
   submission that hangs or crashes nbgrader costs only itself;
2. feedback, and `nbgrader export` (grades.csv);
3. a summary (who, what, score, flags) on stdout and in grading-report.md, with the integrity
   report below it: the code scan's flags and what the sandbox refused at run time.

A progress bar (tqdm) runs while it works. The stock nbgrader commands keep working as before.
Cells tagged `measurement`, `demo` or `explorer` are not run while grading (grader_config.py).

`--jobs 1`: each learner in turn, in the course root itself, by `coursekit.grading.driver.grade_learner`
(the function a cluster's task and `make check` run): one nbgrader process a learner for
autograde and feedback, each submission under its own limit. (Stock serial `nbgrader autograde`,
one process per submission, is what the stock commands of docs/instructors.md do and make bench-grade's
"before".)

Otherwise (the default, `--jobs` = CPU cores, or `--scheduler ADDRESS`): one task per learner on
a Dask distributed cluster, a local one of N single-threaded worker processes or the running
cluster at ADDRESS (docs/instructors.md: "Grading on a cluster"). The course (configuration, source/ and a
gradebook that knows the assignments) travels to the workers once, as one task's result; each
learner's task carries their submitted/ folder, unpacks both into a scratch course root of its
own on the worker (COURSE_GRADING_SCRATCH or the temp folder, then coursekit-grading/<run>/
.grading/<student>/), grades all that learner's assignments (coursekit.grading.bundle.grade_learner_task) in one nbgrader process
(coursekit.batch: autograde and feedback per assignment through nbgrader's API, each submission
still under its own limit) and sends back the rows and a tar of the learner's autograded/,
feedback/ and scratch gradebook; no shared filesystem is assumed and nothing stays on the worker.
The main process alone records each result as it arrives (coursekit.grading.merge.Merger): the folders
are unpacked into .grading/<student>/ and moved into place, and the submission's scores and
comments are written into the course gradebook in batches of learners (one session and one
commit a batch), keyed by name (assignment, notebook, cell, student), never by database row,
with the same result as nbgrader's own API one learner at a time (tests/test_merge.py). A task whose worker dies is sent to another worker by the
scheduler and starts again from a clean folder; its result is merged once. Scores are the same
as with `--jobs 1` (tests/test_cluster.py, and the hostile corpus graded both ways). On a local
cluster each learner's nbgrader process gets cores/N torch/BLAS threads and every grading kernel
one, all with OpenMP's passive wait (coursekit.threads), and the sandbox protects the course root's
grading data and the run's other learners as well as its own.
"""
from __future__ import annotations

import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

from coursekit.batch import generate, submission_timeout
from coursekit.grading.bundle import SCRATCH, course_bundle, grade_learner_task, learner_record, pack, unpack
from coursekit.grading.driver import grade_learner, run
from coursekit.grading.merge import Merger
from coursekit.grading.results import NotebookResult
from coursekit.threads import share

MEASUREMENTS_FLAG = "--JudgedExecute.run_measurements=True"  # nbgrader's setting, for --run-measurements


def _given(data):
    return data


def _client(jobs: int, scheduler: str | None):
    """A Dask client: of the cluster at `scheduler`, or of a local one (closed by the caller): a
    scheduler and `jobs` single-threaded workers, each its own `dask spec` process, as they would
    be started by hand on other machines (docs/instructors.md), so nothing depends on how the caller's own
    program was started (multiprocessing's spawn would re-import it)."""
    import logging

    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    if scheduler:
        return Client(scheduler), None
    cluster = SubprocessCluster(n_workers=jobs, threads_per_worker=1, dashboard_address=None,
                                worker_kwargs={"memory_limit": 0}, silence_logs=logging.ERROR)
    client = Client(cluster)
    client.wait_for_workers(jobs, timeout=300)
    return client, cluster


def _submissions(root: Path, assignments, students):
    """({(student, assignment): rows} of submissions of no known assignment, {student: [assignment]}
    to grade, the known assignments among them), from root/submitted."""
    submitted = root / "submitted"
    folders = sorted(p for p in submitted.glob("*/*") if p.is_dir()) if submitted.exists() else []
    if assignments:
        folders = [p for p in folders if p.name in assignments]
    if students:
        folders = [p for p in folders if p.parent.name in students]
    known = {p.name for p in (root / "source").iterdir() if p.is_dir()}
    rows: dict[tuple[str, str], list[NotebookResult]] = {}
    by_student: dict[str, list[str]] = {}
    for folder in folders:
        student, assignment = folder.parent.name, folder.name
        if assignment not in known:
            rows[student, assignment] = [NotebookResult(student, assignment, assignment, flags=["unknown assignment"])]
        else:
            by_student.setdefault(student, []).append(assignment)
    return rows, by_student, sorted({p.name for p in folders} & known)


def grade_course(root: Path, assignments: list[str] | None = None, students: list[str] | None = None,
                 per_submission_timeout: float | None = None, jobs: int = 1, scheduler: str | None = None,
                 timings: dict | None = None, run_measurements: bool = False, merge_batch: int = 200
                 ) -> list[NotebookResult]:
    """Grade the submissions under root/submitted (all, or only these assignments/students):
    `jobs` 1 (and no scheduler): each learner in turn in `root` itself (grade_learner);
    otherwise one task per learner on a Dask cluster (`scheduler`'s, or a local one with `jobs`
    workers), recorded here in batches of `merge_batch` learners (coursekit.grading.merge);
    each submission within `per_submission_timeout` seconds, by default the root's
    SubmissionRunner.timeout (grader_config.py). `timings`, if
    given, receives the seconds this process spent recording results ("merge"), the number of
    learners recorded ("merged") and the CPU seconds the grading processes used, with their
    kernels ("cpu": the learners' nbgrader processes; not the merge). `run_measurements`: run the
    cells grading leaves out as well (nbgrader's JudgedExecute.run_measurements)."""
    flags = [MEASUREMENTS_FLAG] if run_measurements else []
    if per_submission_timeout is None:
        per_submission_timeout = submission_timeout(root)
    timings = {} if timings is None else timings
    timings.update(merge=0.0, merged=0, cpu=0.0)
    rows, by_student, graded = _submissions(root, assignments, students)
    serial = jobs <= 1 and not scheduler
    bundle = None
    if graded:
        with ThreadPoolExecutor(max_workers=2) as pool:
            # the course gradebook must know the assignments (the merge needs them); the workers'
            # gradebook too, made in a scratch copy: both at once
            recorded = pool.submit(generate, root, graded)
            bundled = None if serial or not by_student else pool.submit(course_bundle, root, graded)
            proc = recorded.result()
            if proc.returncode != 0:
                raise RuntimeError(f"generate_assignment failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            bundle = bundled.result() if bundled else None
    bar = tqdm(total=len(rows) + sum(len(a) for a in by_student.values()), desc="grading", unit="submission")
    bar.update(len(rows))
    if serial:  # the cluster's per-learner function, in this process, in the course root itself
        for student, work in by_student.items():
            usage = {"cpu": 0.0}
            rows.update(grade_learner(root, student, work, per_submission_timeout, usage=usage, flags=flags))
            timings["cpu"] += usage["cpu"]
            bar.update(len(work))
    elif by_student:
        _grade_on_cluster(root, by_student, bundle, rows, timings, bar, per_submission_timeout, jobs, scheduler,
                          flags, merge_batch)
    bar.close()
    run(root, "export")
    return [r for key in sorted(rows) for r in rows[key]]


def _failed(rows: dict, student: str, work: list[str], exc: BaseException) -> None:
    """A learner whose grading or recording failed: every submission ungraded, with why."""
    for assignment in work:
        results = rows.get((student, assignment)) or [NotebookResult(student, assignment, assignment)]
        for r in results:
            r.graded = False
            r.flags.append(f"grading failed: {type(exc).__name__}: {exc}"[:200])
        rows[student, assignment] = results


def _grade_on_cluster(root: Path, by_student: dict, bundle: bytes, rows: dict, timings: dict, bar,
                      timeout: float, jobs: int, scheduler: str | None, flags: list[str], merge_batch: int) -> None:
    """One task per learner (grade_learner_task) on a Dask cluster; each result recorded here as it
    arrives, its rows in batches (coursekit.grading.merge.Merger)."""
    from distributed import as_completed as completed

    client, cluster = _client(jobs, scheduler)
    try:
        workers = max(1, len(client.scheduler_info()["workers"]))
        threads = share(workers) if cluster else 1
        run_id = uuid.uuid4().hex[:12]
        # the bundle as a task's result, not scattered data: the scheduler keeps the task, so a
        # worker that dies holding the only copy costs a recomputation, not the learners' tasks
        course = client.submit(_given, bundle, key=f"course-{run_id}", pure=False)
        futures = {}
        for student, work in by_student.items():
            submission = pack(root, [f"submitted/{student}/{a}" for a in work])
            future = client.submit(grade_learner_task, course, student, work, submission,
                                   learner_record(root / "gradebook.db", student, work),
                                   timeout, [str(root)], threads, run_id, flags,
                                   key=f"grade-{run_id}-{student}", pure=False)
            futures[future] = (student, work)
        merger = Merger(root, batch=merge_batch)
        for future in completed(futures):  # recorded by this process alone
            student, work = futures[future]
            try:
                out, result, cpu = future.result()
                timings["cpu"] += cpu
                rows.update(out)
                scratch = root / SCRATCH / student
                if scratch.exists():
                    shutil.rmtree(scratch)
                scratch.mkdir(parents=True)
                t0 = time.perf_counter()
                unpack(result, scratch)
                failed = merger.add(scratch, [r for results in out.values() for r in results], key=student)
                timings["merge"] += time.perf_counter() - t0
            except Exception as exc:  # noqa: BLE001 - one learner's failure must not stop the cohort
                failed = {student: exc}
            for who, exc in failed.items():
                _failed(rows, who, by_student[who], exc)
            bar.update(len(work))
        t0 = time.perf_counter()
        for who, exc in merger.flush().items():
            _failed(rows, who, by_student[who], exc)
        timings["merge"] += time.perf_counter() - t0
        timings["merged"] = merger.merged
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    if (root / SCRATCH).exists() and not any((root / SCRATCH).iterdir()):
        (root / SCRATCH).rmdir()
