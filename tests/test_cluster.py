"""`make grade --scheduler ADDRESS` on a real Dask cluster (issue 17): a scheduler and two worker
processes on the loopback interface, started as docs/instructors.md starts them by hand (`dask scheduler`,
`dask worker`), each its own process group.

1. A small cohort of 01 (right, wrong, blank) graded on the cluster gets the same scores, flags,
   hints and grades.csv as stock serial nbgrader (`--jobs 1`) on a copy of the same submissions.
2. A worker is killed (SIGKILL, its whole process group) while it grades a learner: the scheduler
   hands that learner to the other worker, every learner gets exactly one row, the scores are what
   they would have been, and the gradebook holds exactly one submission per learner, every grade
   scored (nothing duplicated, nothing half-merged).

The workers unpack their tasks into a folder of their own (COURSE_GRADING_SCRATCH), not into the
course root: nothing assumes a shared filesystem. About 2 minutes on the 2-core course machine.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from coursekit.grading.cluster import LoopbackCluster
from coursekit import settings
from coursekit.grading.cohort import grade_course as grade
from coursekit.grading.scratch import ScratchCourse
from tests.support.cohort import HINT, answers
from tests.support.cohort import grades_csv as exchange_grades_csv
from tests.support.notebooks import fill
from tests.support.shared import copy_course

A = "01_acceptance_chain"
FULL = 12.0  # 01's points


def cohort(released: Path, root: Path, learners: dict[str, str]) -> ScratchCourse:
    """A course root (a copy of the session's `released`) with submitted/<learner>/01 answered
    'right', 'wrong' (one named mistake) or 'blank'."""
    course = copy_course(released, root)
    release = root / "course" / A / f"{A}.ipynb"
    for student, how in learners.items():
        nb = release if how == "blank" else fill(release, answers(wrong=how == "wrong"), root / "tmp" / f"{student}.ipynb")
        course.submit(student, A, nb, f"{A}.ipynb")
    shutil.rmtree(root / "tmp", ignore_errors=True)
    return course


@pytest.fixture
def cluster(tmp_path):
    scratch = tmp_path / "workers"  # where the workers unpack their tasks
    scratch.mkdir()
    with LoopbackCluster(tmp_path, workers=2, env={settings.GRADING_SCRATCH.name: str(scratch)}) as c:
        c.scratch = scratch
        yield c


def outcome(rows) -> dict:
    """What a grader sees of each notebook: score, flags and every cell's points and hint."""
    return {(r.student, r.assignment, r.notebook): (r.score, r.max_score, r.graded, sorted(r.flags),
                                                     [(c.grade_id, c.score, c.hint) for c in r.cells])
            for r in rows}


def grades_csv(root: Path) -> list[dict]:
    """grades.csv's rows of A (the course root's gradebook knows every assignment: a copy of `released`)."""
    return sorted((r for r in exchange_grades_csv(root) if r["assignment"] == A), key=lambda r: r["student_id"])


def gradebook(root: Path) -> dict[str, dict]:
    """Per learner: their submissions of A and, for each, every grade's (name, auto score)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        out = {}
        for student in gb.students:
            subs = [s for s in student.submissions if s.assignment.name == A]
            out[student.id] = {"submissions": len(subs),
                               "grades": [(g.name, g.auto_score) for s in subs for nb in s.notebooks for g in nb.grades]}
        return out


def check_cohort(rows, learners: dict[str, str]) -> None:
    assert sorted(r.student for r in rows) == sorted(learners), "every learner exactly one row"
    for r in rows:
        assert r.graded, (r.student, r.flags)
        how = learners[r.student]
        if how == "right":
            assert r.score == FULL, (r.student, r.score, r.flags)
        elif how == "wrong":
            assert 0 < r.score < FULL and any(HINT in c.hint for c in r.cells), (r.student, r.score)
        else:
            assert r.score == 0, (r.student, r.score)


def test_a_cohort_graded_on_the_cluster_gets_the_serial_grades(cluster, tmp_path, released):
    learners = {"ada": "right", "bo": "wrong", "cy": "blank"}
    serial_root, cluster_root = tmp_path / "serial", tmp_path / "cluster"
    cohort(released, serial_root, learners)
    shutil.copytree(serial_root, cluster_root)  # the same submissions, timestamps and gradebook
    serial = grade(serial_root, [A], jobs=1)
    on_cluster = grade(cluster_root, [A], scheduler=cluster.address)
    check_cohort(serial, learners)
    assert outcome(on_cluster) == outcome(serial)
    assert grades_csv(cluster_root) == grades_csv(serial_root)
    for student in learners:  # the feedback came back from the workers
        assert (cluster_root / "feedback" / student / A / f"{A}.html").exists(), student
    assert not any(cluster.scratch.rglob("*")), "a worker left files behind"
    # the workers ran the tasks; both of them were offered work
    assert {cluster.workers[w].poll() for w in cluster.workers} == {None}


def _children(pid: int) -> list[tuple[int, list[bytes]]]:
    """(pid, command line) of each child of process `pid`."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))) == pid:
            out.append((int(proc.name), cmdline))
    return out


def batch_child(worker: subprocess.Popen) -> int | None:
    """pid of the `coursekit.batch` process (the nbgrader driver of a learner) that `worker` started:
    its child, or the child of its fork server (`coursekit.batch serve`, coursekit.grading.forkserver)."""
    for pid, cmdline in _children(worker.pid):
        if b"coursekit.batch" not in cmdline:
            continue
        if b"serve" not in cmdline:
            return pid
        forked = [child for child, line in _children(pid) if b"coursekit.batch" in line]
        if forked:
            return forked[0]
    return None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="finds the worker's nbgrader process in /proc (Linux)")
def test_a_worker_killed_while_grading_costs_no_learner_a_row_or_a_grade(cluster, tmp_path, released):
    learners = {"ada": "right", "bo": "wrong", "cy": "blank", "dee": "right"}
    root = tmp_path / "course"
    cohort(released, root, learners)
    result = {}

    def run():
        try:
            result["rows"] = grade(root, [A], scheduler=cluster.address)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    # wait until some worker's nbgrader driver is running (a task mid-grading), then kill that worker
    victim = None
    deadline = time.monotonic() + 300
    while victim is None:
        assert thread.is_alive(), f"grading ended before any worker was seen grading: {result}"
        assert time.monotonic() < deadline, "no worker started grading within 300 s"
        victim = next((name for name, proc in cluster.workers.items() if batch_child(proc)), None)
        time.sleep(0.1)
    held = [k for addr, keys in cluster.client.processing().items() if cluster.name_of(addr) == victim for k in keys]
    cluster.kill(victim)
    thread.join(900)
    assert not thread.is_alive(), "grading did not finish after the worker died"
    assert "error" not in result, result.get("error")
    rows = result["rows"]
    check_cohort(rows, learners)  # the victim's learner too: graded again by the other worker
    assert all(not r.flags for r in rows), [(r.student, r.flags) for r in rows]
    assert held, "the killed worker held no task"
    # the scheduler sent the victim's task out a second time
    story = cluster.client.run_on_scheduler(lambda dask_scheduler, keys=held: {
        k: [t[2] for t in dask_scheduler.story(k)] for k in keys})
    assert any(finishes.count("processing") >= 2 for finishes in story.values()), story
    book = gradebook(root)
    assert sorted(book) == sorted(learners)
    for student, entry in book.items():
        assert entry["submissions"] == 1, (student, entry)
        assert entry["grades"] and all(score is not None for _, score in entry["grades"]), (student, entry)
        assert len({name for name, _ in entry["grades"]}) == len(entry["grades"]), (student, entry)
    csv_rows = grades_csv(root)
    assert sorted(r["student_id"] for r in csv_rows) == sorted(learners)
    assert {r["student_id"]: float(r["score"]) for r in csv_rows} == {r.student: r.score for r in rows}
