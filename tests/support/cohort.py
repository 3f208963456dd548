"""A cohort of notebook 01 through nbgrader's exchange, as its instructor and learners run it
(stock nbgrader commands, one process each; each learner with their own HOME and name): what
tests/test_exchange.py, tests/test_hub.py and tests/test_cluster.py share. The reasons for each step
are in tests/test_exchange.py's docstring."""
from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path


from coursekit import registry
from coursekit.grading.scratch import ScratchCourse
from coursekit import paths
from coursekit import settings
from tests.support.catalogue import answers as catalogue_of

A = "01_acceptance_chain"
COURSE = "speculative-decoding"
MISTAKE = "expected_exponent_K"  # answers_01.WRONG: expected_tokens with the exponent K instead of K+1
HINT = "exponent K instead of K+1"  # the phrase its hint must contain
RELEASE = paths.COURSE  # the committed release, course/


def answers(wrong: bool = False) -> dict:
    """ada's notebook: the first correct answer of every exercise; bo's: the same with one known mistake."""
    mod = catalogue_of(registry.read(A))
    out = {ex: fns[0] for ex, fns in mod.CORRECT.items()}
    if wrong:
        out["expected_tokens"] = getattr(mod, MISTAKE)
        assert any(fn is out["expected_tokens"] and HINT in phrase for fn, phrase in mod.WRONG["expected_tokens"])
    return out


LEARNERS = {"ada": "right", "bo": "wrong", "cy": "blank"}


def sh(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(args)} in {cwd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def nbgrader(cwd: Path, env: dict, *args: str) -> str:
    """`nbgrader ARGS` in `cwd`; its log (nbgrader logs to stderr) and output."""
    proc = sh(cwd, env, sys.executable, "-m", "nbgrader", *args)
    return proc.stdout + proc.stderr


def base_env() -> dict:
    return settings.child_env(base={k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_"))})


def learner_env(home: Path, name: str) -> dict:
    return dict(base_env(), HOME=str(home), JUPYTERHUB_USER=name)


def learner_config(exchange: Path) -> str:
    """A learner's ~/.jupyter/nbgrader_config.py (on a shared server: /etc/jupyter/nbgrader_config.py)."""
    return ("import os\n"
            "c = get_config()  # noqa: F821\n"
            f"c.Exchange.root = {str(exchange)!r}\n"
            "c.CourseDirectory.student_id = os.environ['JUPYTERHUB_USER']  # see this module's docstring\n")


def page_score(html_text: str) -> tuple[float, float]:
    """(score, max) of a feedback page's heading, `<h4>01_acceptance_chain (Score: 9.0 / 12.0)</h4>`."""
    m = re.search(rf"<h4>{A} \(Score: ([0-9.]+) / ([0-9.]+)\)</h4>", html_text)
    assert m, "no score heading in the feedback page"
    return float(m[1]), float(m[2])


def grades_csv(root: Path) -> list[dict]:
    with open(root / "grades.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def fetched_feedback(home: Path) -> dict[str, Path]:
    """{submission timestamp: feedback page} that fetch_feedback put into the learner's assignment folder."""
    return {p.parent.name: p for p in sorted((home / A / "feedback").glob(f"*/{A}.html"))}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def instructor_release(tmp: Path, exchange: Path, log: dict) -> Path:
    """The instructor's first half: a course root whose nbgrader uses `exchange`, and the committed
    release of A (course/) released into it. make grade runs generate_assignment later, which
    records the assignment in the gradebook; test_sync.py checks that course/ is what it generates."""
    root = ScratchCourse(tmp / "course").root
    with open(root / "nbgrader_config.py", "a") as fh:  # the instructor's side of the same setting
        fh.write(f"c.Exchange.root = {str(exchange)!r}\n")
    shutil.copytree(RELEASE / A, root / "course" / A)
    log["release"] = nbgrader(root, base_env(), "release_assignment", A)
    return root


def instructor_grade(root: Path, log: dict, between=None) -> list[dict]:
    """The second half: collect (then `between()`, if given), grade (make grade), generate and
    release the feedback; returns grades.csv."""
    instructor = base_env()
    log["collect"] = nbgrader(root, instructor, "collect", A)
    if between:
        between()
    log["grade"] = sh(root, instructor, sys.executable, "-m", "coursekit.grade", "--root", str(root), A).stdout
    rows = grades_csv(root)
    log["feedback"] = nbgrader(root, instructor, "generate_feedback", A, "--force")
    log["release_feedback"] = nbgrader(root, instructor, "release_feedback", A)
    return rows


def score_of(rows: list[dict], student: str) -> float:
    (row,) = [r for r in rows if r["student_id"] == student and r["assignment"] == A]
    return float(row["score"])


def assert_cohort_scores(rows: list[dict]) -> None:
    """grades.csv of the cohort: one row per learner; ada full marks, bo fewer, cy none."""
    full = registry.read(A).max_score
    assert sorted(r["student_id"] for r in rows) == sorted(LEARNERS)
    assert score_of(rows, "ada") == full
    assert 0 < score_of(rows, "bo") < full
    assert score_of(rows, "cy") == 0
