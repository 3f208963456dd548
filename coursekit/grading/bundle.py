"""What travels between make grade's main process and the machine that grades a learner: the
course (`course_bundle`, once per run), what the course gradebook says about the learner
(`learner_record`), and the learner's task itself (`grade_learner_task`), which unpacks both into
a scratch course root of its own, grades, and sends back the rows and a tar of the learner's
autograded/, feedback/ and scratch gradebook. No shared filesystem is assumed and nothing stays
on the worker (coursekit.grading.cohort runs the tasks; coursekit.grading.merge records them)."""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from coursekit import settings
from coursekit.batch import generate
from coursekit.grading.driver import grade_learner
from coursekit.grading.results import NotebookResult
from coursekit.grading.scratch import scratch_root
from coursekit.judge.sandbox import SCRATCH_ROOTS as SCRATCH  # per-learner roots, inside the course root
from coursekit.threads import env as thread_env

CONFIG_NAMES = ("nbgrader_config.py", "grader_config.py")


def pack(base: Path, names: list[str]) -> bytes:
    """A gzipped tar of the paths `names` (relative to `base`) that exist."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in names:
            if (base / name).exists():
                tar.add(base / name, arcname=name)
    return buf.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")


def course_bundle(root: Path, assignments: list[str]) -> bytes:
    """What every worker needs of the course, sent once per run: the configuration, the source
    notebooks of the graded assignments and a gradebook that knows their grade cells and no
    learner (so its size does not grow with the cohort). nbgrader makes it: one generate_assignment
    run in a scratch copy of the course."""
    with tempfile.TemporaryDirectory(prefix="coursekit-bundle-") as tmp:
        course = scratch_root(Path(tmp) / "course", root / "source", [root / c for c in CONFIG_NAMES], assignments)
        proc = generate(course, assignments)
        if proc.returncode != 0:
            raise RuntimeError(f"generate_assignment failed in {course}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return pack(course, [*CONFIG_NAMES, "source", "gradebook.db"])


def learner_record(gradebook: Path, student: str, work: list[str]) -> dict:
    """What the course gradebook says about `student` that grading needs: their name and email
    (kept in the merge) and any extension granted on the assignments in `work` (late penalties)."""
    from nbgrader.api import Gradebook, MissingEntry

    record: dict = {"student": {}, "extensions": {}}
    if not gradebook.exists():
        return record
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        try:
            who = gb.find_student(student)
            record["student"] = dict(first_name=who.first_name, last_name=who.last_name, email=who.email,
                                     lms_user_id=who.lms_user_id)
        except MissingEntry:
            return record
        for assignment in work:
            try:
                extension = gb.find_submission(assignment, student).extension
            except MissingEntry:
                continue
            if extension is not None:
                record["extensions"][assignment] = extension
    return record


def apply_record(gradebook: Path, student: str, record: dict) -> None:
    from nbgrader.api import Gradebook

    if not record.get("student") and not record.get("extensions"):
        return
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        gb.update_or_create_student(student, **record.get("student", {}))
        for assignment, extension in record.get("extensions", {}).items():
            gb.update_or_create_submission(assignment, student, extension=extension)


def grade_learner_task(course: bytes, student: str, work: list[str], submission: bytes, record: dict,
                       timeout: float, protect: list[str], threads: int, run_id: str, flags: list[str] | None = None
                       ) -> tuple[dict[tuple[str, str], list[NotebookResult]], bytes, float]:
    """One learner, on whichever machine runs the task: the course (`course_bundle`) and their
    submissions (a tar of submitted/<student>/) arrive as bytes and are unpacked into a scratch
    course root of this run, `<scratch>/coursekit-grading/<run>/.grading/<student>/` (the same
    layout as a learner's scratch root inside a course root, so the sandbox protects the run's
    other learners the same way); the results go back as data: the rows and a tar of the learner's
    autograded/ and feedback/ folders and the scratch gradebook, which the main process merges,
    and the CPU seconds the learner's grading processes used. Nothing stays behind. A task that is run again (its worker died) starts from a clean folder."""
    base = Path(settings.GRADING_SCRATCH.get() or tempfile.gettempdir()).resolve() / "coursekit-grading" / run_id
    scratch = base / SCRATCH / student
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    try:
        unpack(course, scratch)
        unpack(submission, scratch)
        apply_record(scratch / "gradebook.db", student, record)
        env = thread_env(threads)  # the learner's nbgrader process; its kernels take one thread (coursekit.threads)
        # the sandbox also guards this run's other learners and the main course root's grading data
        env[settings.SANDBOX_PROTECT.name] = os.pathsep.join([str(base), *protect])
        usage = {"cpu": 0.0}
        rows = grade_learner(scratch, student, work, timeout, env, usage, flags=flags)
        return rows, pack(scratch, [f"autograded/{student}", f"feedback/{student}", "gradebook.db"]), usage["cpu"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for empty in (base / SCRATCH, base, base.parent):
            try:
                empty.rmdir()
            except OSError:
                break
