"""A cohort through nbgrader's own exchange, end to end (issue 17): stock nbgrader commands, one
process each, with an exchange directory and three learners who each have their own HOME (so
their own ~/.jupyter configuration and nbgrader cache) and their own name.

    instructor  generate_assignment, release_assignment            -> exchange/<course>/outbound
    learners    fetch_assignment, answer (right / wrong / blank), submit   -> exchange/<course>/inbound
    instructor  collect, `python -m coursekit.grade` (make grade), generate_feedback, release_feedback
    learners    fetch_feedback: each finds their own page (their score, their hint) and nobody else's
    bo          fixes the mistake and submits again; the instructor collects with --update and grades
                bo again: the gradebook and grades.csv hold the new score, one row per learner.

Everything here runs as one unix user, so the learners' names cannot come from the unix account as
on a shared server: nbgrader uses the account's name, and JUPYTERHUB_USER only when that name is
`jovyan` (nbgrader.utils.get_username). Each learner's ~/.jupyter/nbgrader_config.py therefore sets
c.CourseDirectory.student_id from JUPYTERHUB_USER, the variable JupyterHub sets for a learner's
server (docs/instructors.md, "Release, collect and grade"). For the same reason collect warns that each submission "is owned
by root; cheating attempt?" (CollectApp.check_owner compares the name with the folder's owner).
About 2 minutes on the 2-core course machine, most of it nbgrader's start-up (~5 s a command).
"""
from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from nbgrader.utils import parse_utc

from coursekit import registry
from coursekit.grading.scratch import ScratchCourse
from coursekit import paths
from tests.support.e2e import STUB_HINT
from tests.support.notebooks import fill
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


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cohort")
    exchange = tmp / "exchange"  # created by release_assignment, with the permissions it wants
    instructor = base_env()
    homes = {name: tmp / "home" / name for name in LEARNERS}
    for home in homes.values():
        (home / ".jupyter").mkdir(parents=True)
        (home / ".jupyter" / "nbgrader_config.py").write_text(learner_config(exchange))
    envs = {name: learner_env(homes[name], name) for name in LEARNERS}
    pool = ThreadPoolExecutor(len(LEARNERS))  # the learners work side by side, as in a class
    log: dict = {}

    def each(fn):
        return dict(zip(LEARNERS, pool.map(fn, LEARNERS)))

    root = instructor_release(tmp, exchange, log)  # what a clone has committed under course/
    out = {"root": root, "exchange": exchange, "homes": homes, "log": log}
    # learners: fetch, answer, submit
    log["fetch"] = each(lambda s: nbgrader(homes[s], envs[s], "fetch_assignment", A, "--course", COURSE))
    out["fetched"] = {s: sorted(p.name for p in (homes[s] / A).iterdir()) for s in LEARNERS}
    nb = {s: homes[s] / A / f"{A}.ipynb" for s in LEARNERS}
    for s, how in LEARNERS.items():
        if how != "blank":
            fill(nb[s], answers(wrong=how == "wrong"), nb[s])
    out["submitted_digest"] = {s: digest(nb[s]) for s in LEARNERS}
    log["submit"] = each(lambda s: nbgrader(homes[s], envs[s], "submit", A, "--course", COURSE))
    out["inbound"] = sorted(p.name for p in (exchange / COURSE / "inbound").iterdir())
    # instructor: collect, grade (make grade), feedback
    out["grades"] = instructor_grade(root, log, between=lambda: out.update(collected_digest={
        s: digest(root / "submitted" / s / A / f"{A}.ipynb") for s in LEARNERS}))
    out["released"] = sorted(p.name for p in (exchange / COURSE / "feedback").glob("*.html"))
    # learners: fetch feedback
    log["fetch_feedback"] = each(lambda s: nbgrader(homes[s], envs[s], "fetch_feedback", A, "--course", COURSE))
    out["feedback"] = {s: fetched_feedback(homes[s]) for s in LEARNERS}
    out["instructor_pages"] = {s: root / "feedback" / s / A / f"{A}.html" for s in LEARNERS}
    out["page_digest"] = {s: digest(p) for s, p in out["instructor_pages"].items()}
    out["timestamp"] = {s: (root / "submitted" / s / A / "timestamp.txt").read_text() for s in LEARNERS}
    caches = {s: homes[s] / ".local" / "share" / "jupyter" / "nbgrader_cache" / COURSE for s in LEARNERS}
    out["cache"] = {s: sorted(p.name.split("+")[0] for p in caches[s].iterdir()) for s in LEARNERS}

    # bo fixes the mistake and submits again; the instructor collects the newer one and grades bo again
    fill(nb["bo"], answers(), nb["bo"])
    log["resubmit"] = nbgrader(homes["bo"], envs["bo"], "submit", A, "--course", COURSE)
    out["inbound_after"] = sorted(p.name for p in (exchange / COURSE / "inbound").iterdir())
    log["collect_again"] = nbgrader(root, instructor, "collect", A)  # without --update: keeps the first
    out["kept_digest"] = digest(root / "submitted" / "bo" / A / f"{A}.ipynb")
    log["collect_update"] = nbgrader(root, instructor, "collect", "--update", A)
    out["recollected_digest"] = digest(root / "submitted" / "bo" / A / f"{A}.ipynb")
    out["resubmitted_digest"] = digest(nb["bo"])
    out["timestamp_after"] = (root / "submitted" / "bo" / A / "timestamp.txt").read_text()
    log["regrade"] = sh(root, instructor, sys.executable, "-m", "coursekit.grade", "--root", str(root), A,
                        "--student", "bo").stdout
    out["grades_after"] = grades_csv(root)
    log["release_feedback_again"] = nbgrader(root, instructor, "release_feedback", A, "--student", "bo")
    log["fetch_feedback_again"] = nbgrader(homes["bo"], envs["bo"], "fetch_feedback", A, "--course", COURSE)
    out["feedback_after"] = fetched_feedback(homes["bo"])
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        out["gradebook"] = {s.student.id: (float(s.score), s.timestamp) for s in gb.assignment_submissions(A)}
        out["gradebook_students"] = sorted(s.id for s in gb.students)
    pool.shutdown()
    return out


def score_of(rows: list[dict], student: str) -> float:
    (row,) = [r for r in rows if r["student_id"] == student and r["assignment"] == A]
    return float(row["score"])


def test_learners_fetch_the_release_and_submit_under_their_own_names(cohort):
    for s in LEARNERS:
        assert f"Fetched as: {COURSE} {A}" in cohort["log"]["fetch"][s]
        assert f"{A}.ipynb" in cohort["fetched"][s], cohort["fetched"][s]
        assert f"Submitted as: {COURSE} {A}" in cohort["log"]["submit"][s]
    # inbound: <student>+<assignment>+<timestamp>+<random>, one per learner
    assert sorted(n.split("+")[0] for n in cohort["inbound"]) == sorted(LEARNERS), cohort["inbound"]
    assert all(n.split("+")[1] == A for n in cohort["inbound"])
    # collect put each learner's own notebook, unchanged, under submitted/<learner>/
    assert cohort["collected_digest"] == cohort["submitted_digest"]
    assert len(set(cohort["submitted_digest"].values())) == 3  # three different notebooks
    for s in LEARNERS:
        assert f"Collecting submission: {s} {A}" in cohort["log"]["collect"]


def assert_cohort_scores(rows: list[dict]) -> None:
    """grades.csv of the cohort: one row per learner; ada full marks, bo fewer, cy none."""
    full = registry.read(A).max_score
    assert sorted(r["student_id"] for r in rows) == sorted(LEARNERS)
    assert score_of(rows, "ada") == full
    assert 0 < score_of(rows, "bo") < full
    assert score_of(rows, "cy") == 0


def test_make_grade_scores_the_collected_cohort(cohort):
    rows, full = cohort["grades"], registry.read(A).max_score
    assert_cohort_scores(rows)
    assert all(float(r["max_score"]) == full for r in rows)
    assert "3 submissions graded" in cohort["log"]["grade"]


def test_each_learner_fetches_their_own_feedback_and_nobody_elses(cohort):
    rows = cohort["grades"]
    assert len(cohort["released"]) == 3  # one page per learner, named by a hash of their submission's secret
    for s in LEARNERS:
        pages = cohort["feedback"][s]
        # one page, filed under the timestamp of their own submission
        assert list(pages) == [cohort["timestamp"][s]], pages
        (page,) = pages.values()
        # byte for byte the page the instructor generated for them, and no other learner's
        assert digest(page) == cohort["page_digest"][s]
        assert digest(page) not in {d for o, d in cohort["page_digest"].items() if o != s}
        text = page.read_text()
        assert page_score(text) == (score_of(rows, s), registry.read(A).max_score)
        assert (HINT in text) == (s == "bo"), s  # bo's mistake is named on bo's page only
        assert (STUB_HINT in text) == (s == "cy"), s
        # the learner's nbgrader cache (in their HOME), where fetch_feedback looks, holds their own submission only
        assert cohort["cache"][s] == [s]


def test_a_resubmission_replaces_the_first_one(cohort):
    log, full = cohort["log"], registry.read(A).max_score
    assert sorted(n.split("+")[0] for n in cohort["inbound_after"]) == ["ada", "bo", "bo", "cy"]
    # collect without --update keeps what it has; with --update it takes bo's newer submission
    assert f"Submission already exists, use --update to update: bo {A}" in log["collect_again"]
    assert cohort["kept_digest"] == cohort["submitted_digest"]["bo"]
    assert f"Updating submission: bo {A}" in log["collect_update"]
    for s in ("ada", "cy"):
        assert f"No newer submission to collect: {s} {A}" in log["collect_update"]
    assert cohort["recollected_digest"] == cohort["resubmitted_digest"] != cohort["submitted_digest"]["bo"]
    assert cohort["timestamp_after"] > cohort["timestamp"]["bo"]
    # grades.csv and the gradebook: bo's new score, the others' unchanged, one row per learner
    rows = cohort["grades_after"]
    assert sorted(r["student_id"] for r in rows) == sorted(LEARNERS), rows
    assert score_of(rows, "bo") == full
    for s in ("ada", "cy"):
        assert score_of(rows, s) == score_of(cohort["grades"], s)
    assert cohort["gradebook_students"] == sorted(LEARNERS)
    assert sorted(cohort["gradebook"]) == sorted(LEARNERS)
    assert cohort["gradebook"]["bo"][0] == full
    assert cohort["gradebook"]["bo"][1] == parse_utc(cohort["timestamp_after"])
    # bo fetches feedback again: the new page, under the new timestamp, next to the first one
    pages = cohort["feedback_after"]
    assert sorted(pages) == sorted([cohort["timestamp"]["bo"], cohort["timestamp_after"]])
    new, old = pages[cohort["timestamp_after"]].read_text(), pages[cohort["timestamp"]["bo"]].read_text()
    assert page_score(new) == (full, full) and HINT not in new
    assert page_score(old)[0] < full and HINT in old
