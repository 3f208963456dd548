"""What the whole test session builds once and its tests copy: under pytest-xdist each worker is a
process of its own with its own session fixtures, so an expensive result (a generated course, a
graded class) is made by the first worker that asks for it, under a file lock, and read back from
disk by the others (the pattern of pytest-xdist's documentation, "Making session-scoped fixtures
execute only once").

    released(tmp_path_factory)  a course root where every assignment was generated, in one process
    copy_course(src, dest)      a course root of one's own to change (grade, submit, reconfigure)
    once(tmp_path_factory, key, produce)   produce(folder) once per session; its pickled result
"""
from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

from filelock import FileLock

from coursekit.batch import generate
from coursekit.grading.scratch import ScratchCourse
from coursekit.paths import assignments


def session_folder(tmp_path_factory) -> Path:
    """A folder of this test session that every worker sees: the workers' common parent under
    pytest-xdist, the session's own temp folder without it (whose parent holds earlier sessions)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def once(tmp_path_factory, key: str, produce):
    """produce(folder) run once in this session, whichever worker asks first; every caller gets
    its result (pickled, so it must not hold open files or processes). A produce that raises is
    not remembered: the next caller tries again and meets the same error."""
    shared = session_folder(tmp_path_factory)
    folder, result = shared / key, shared / f"{key}.pickle"
    with FileLock(str(shared / f"{key}.lock")):
        if not result.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            value = produce(folder)
            result.write_bytes(pickle.dumps(value))
        return pickle.loads(result.read_bytes())


def released(tmp_path_factory) -> Path:
    """A scratch course root where `coursekit.batch generate` (one nbgrader process, as `make
    release`) generated every assignment: course/<assignment>/ and a gradebook that knows them."""
    def produce(folder: Path) -> Path:
        root = ScratchCourse(folder / "root").root
        proc = generate(root, assignments())
        if proc.returncode != 0:
            raise RuntimeError(f"generate_assignment failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return root
    return once(tmp_path_factory, "released", produce)


def copy_course(src: Path, dest: Path, env: dict | None = None) -> ScratchCourse:
    """A course root at `dest` that starts as `src` (a released one): its configuration, source,
    release and gradebook, nothing submitted or graded."""
    shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback", "tmp",
                                                              "grades.csv", ".grading"))
    return ScratchCourse(dest, env)
