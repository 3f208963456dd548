"""A cohort on a real JupyterHub (issue 17): the course's hub/jupyterhub_config.py, its proxy
(configurable-http-proxy from npm, `make hub` installs it), three learners who log in through the
hub's REST API and work in their own servers, which run in a learner environment without the answers.

    instructor  release_assignment (nbgrader, in the course root)          -> exchange/<course>/outbound
    learners    log in (POST /hub/api/users/<name>/tokens with their name and the shared password),
                start their server (POST /hub/api/users/<name>/server), and through it, as JupyterLab's
                Assignments tab does: fetch (nbgrader's assignment_list extension), answer (the
                contents API: right / wrong / blank), submit                -> exchange/<course>/inbound
    instructor  collect, `python -m coursekit.grade` (make grade), generate_feedback, release_feedback
    learners    fetch_feedback through their server, and read their own page through it

Also checked: a wrong password is refused; one learner's token opens neither another learner's
server nor the hub's list of users; each learner's server is the learner environment's interpreter
with its bin/ first on the PATH, lists that environment's kernel and has no formgrader.
test_exchange.py runs the same flow with nbgrader's command line alone (and a resubmission); the
instructor's steps are its instructor_release and instructor_grade. About 2 minutes on the 2-core
course machine (110-131 s on 2026-12-03).

Needs configurable-http-proxy (hub/node_modules/.bin/, or COURSE_HUB_PROXY): without it these tests
skip and say how to install it; COURSE_REQUIRE_HUB=1 (CI) makes a missing proxy a failure.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import requests

from coursekit import paths, registry, settings
from tests.support import learner_env
from tests.support.e2e import STUB_HINT
from tests.support.notebooks import fill
from tests.support.cohort import (A, COURSE, HINT, LEARNERS, answers, assert_cohort_scores, base_env, instructor_grade,
                                  instructor_release, page_score, score_of)

CONFIG = paths.REPO / "hub" / "jupyterhub_config.py"
PROXY = settings.HUB_PROXY.get() or str(paths.REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy")
PASSWORD = "speculate-then-verify"
TIMEOUT = 180  # seconds for the hub or a learner's server to come up on a busy 2-core machine


def free_ports(n: int = 3) -> int:
    """A first port of `n` consecutive free ones on 127.0.0.1 (the config uses PORT, PORT+1, PORT+2)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            socks = []
            for p in range(base, base + n):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError("no three consecutive free ports")


def wait_for(what: str, probe, log: Path, timeout: float = TIMEOUT):
    """Poll `probe` until it returns something true; fail with the hub's log when it does not in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = probe()
        except requests.ConnectionError:
            got = None
        if got:
            return got
        time.sleep(0.5)
    pytest.fail(f"{what} not up after {timeout} s; the hub's log:\n{log.read_text()[-4000:]}")


class Learner:
    """One learner's browser, as far as the course needs it: the hub's API and their own server's."""

    def __init__(self, url: str, name: str):
        self.url, self.name = url, name
        self.http = requests.Session()

    def login(self, password: str) -> requests.Response:
        """Ask the hub for an API token with name and password, as a script or the hub's token page does."""
        r = self.http.post(f"{self.url}/hub/api/users/{self.name}/tokens",
                           json={"auth": {"username": self.name, "password": password}, "note": "course test"},
                           timeout=60)
        if r.status_code == 201:
            self.http.headers["Authorization"] = f"token {r.json()['token']}"
        return r

    def start_server(self, log: Path) -> dict:
        r = self.http.post(f"{self.url}/hub/api/users/{self.name}/server", timeout=60)
        assert r.status_code in (201, 202), (r.status_code, r.text)

        def ready():
            model = self.http.get(f"{self.url}/hub/api/users/{self.name}", timeout=60).json()
            server = model.get("servers", {}).get("")
            return model if server and server.get("ready") else None

        return wait_for(f"{self.name}'s server", ready, log)

    def server(self, method: str, path: str, **kw) -> requests.Response:
        return self.http.request(method, f"{self.url}/user/{self.name}/{path}", timeout=120, **kw)

    def assignments(self, action: str) -> list[dict]:
        """The Assignments tab's buttons: fetch, submit, fetch_feedback (nbgrader's assignment_list extension)."""
        r = self.server("POST", f"assignments/{action}", params={"course_id": COURSE, "assignment_id": A})
        assert r.status_code == 200, (action, r.status_code, r.text[-2000:])
        reply = r.json()  # {"success": ..., "value": the assignment list after the action, or nbgrader's traceback}
        assert reply["success"], (action, reply["value"])
        return reply["value"]

    def notebook(self) -> dict:
        r = self.server("GET", f"api/contents/{A}/{A}.ipynb", params={"content": 1})
        assert r.status_code == 200, r.text
        return r.json()["content"]

    def save(self, nb: dict) -> None:
        r = self.server("PUT", f"api/contents/{A}/{A}.ipynb", json={"type": "notebook", "format": "json", "content": nb})
        assert r.status_code in (200, 201), r.text

    def feedback_pages(self) -> dict[str, str]:
        """{submission timestamp: page} under <assignment>/feedback/ in the learner's server."""
        r = self.server("GET", f"api/contents/{A}/feedback", params={"content": 1})
        assert r.status_code == 200, r.text
        out = {}
        for entry in r.json()["content"]:
            page = self.server("GET", f"files/{A}/feedback/{entry['name']}/{A}.html")
            assert page.status_code == 200, page.text
            out[entry["name"]] = page.content.decode("utf-8")
        return out


def server_processes() -> dict[str, dict]:
    """{learner: its server's command line and PATH}, read from /proc (JUPYTERHUB_USER in the environment)."""
    out = {}
    for proc in Path("/proc").iterdir():
        try:
            environ = dict(v.split("=", 1) for v in (proc / "environ").read_bytes().decode(errors="replace").split("\0")
                           if "=" in v)
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, ValueError):
            continue
        if environ.get("JUPYTERHUB_USER") in LEARNERS and "jupyterhub.singleuser" in cmdline:
            out[environ["JUPYTERHUB_USER"]] = {"cmdline": cmdline, "path": environ.get("PATH", "")}
    return out


def stop(proc: subprocess.Popen, state: Path) -> None:
    """SIGTERM the hub (it stops the learners' servers and its proxy), then make sure nothing lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    pid_file = state / "proxy.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not os.access(PROXY, os.X_OK):
        msg = f"configurable-http-proxy not found at {PROXY}: run `make hub-proxy` (needs npm) to run the JupyterHub tests"
        if settings.REQUIRE_HUB.get():
            pytest.fail(msg)
        pytest.skip(msg)
    tmp = tmp_path_factory.mktemp("hub")
    state, exchange = tmp / "state", tmp / "exchange"
    env = learner_env.build(tmp / "learner-env")
    log: dict = {}
    root = instructor_release(tmp, exchange, log)  # the instructor's side of the hub's c.Exchange.root
    out = {"root": root, "state": state, "log": log}

    port = free_ports()
    url = f"http://127.0.0.1:{port}"
    hub_env = settings.child_env({settings.HUB_PASSWORD: PASSWORD, settings.HUB_USERS: ",".join(LEARNERS),
                                  settings.HUB_STATE: state, settings.HUB_EXCHANGE: exchange, settings.HUB_PORT: port,
                                  settings.HUB_PYTHON: env["python"], settings.HUB_PROXY: PROXY}, base=base_env())
    hub_log = tmp / "jupyterhub.log"
    state.mkdir()
    with open(hub_log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)], cwd=state, env=hub_env,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for("the hub", lambda: requests.get(f"{url}/hub/api/", timeout=10).status_code == 200, hub_log)
        people = {s: Learner(url, s) for s in LEARNERS}
        out["wrong_password"] = Learner(url, "ada").login("not-the-password").status_code
        out["stranger"] = Learner(url, "eve").login(PASSWORD).status_code
        out["login"] = {s: p.login(PASSWORD).status_code for s, p in people.items()}
        pool = ThreadPoolExecutor(len(LEARNERS))  # the learners work side by side, as in a class

        def each(fn):
            return dict(zip(LEARNERS, pool.map(lambda s: fn(people[s]), LEARNERS)))

        out["model"] = each(lambda p: p.start_server(hub_log))
        out["fetch"] = each(lambda p: p.assignments("fetch"))
        notebooks = each(lambda p: p.notebook())
        for s, how in LEARNERS.items():
            if how != "blank":
                release = tmp / "answers" / s / "release.ipynb"
                release.parent.mkdir(parents=True)
                nbformat.write(nbformat.from_dict(notebooks[s]), release)
                fill(release, answers(wrong=how == "wrong"), release)
                people[s].save(json.loads(release.read_text()))
        out["submit"] = each(lambda p: p.assignments("submit"))
        out["inbound"] = sorted(p.name for p in (exchange / COURSE / "inbound").iterdir())
        out["grades"] = instructor_grade(root, log)  # collect, make grade, generate and release feedback
        out["instructor_pages"] = {s: (root / "feedback" / s / A / f"{A}.html").read_text() for s in LEARNERS}
        out["timestamp"] = {s: (root / "submitted" / s / A / "timestamp.txt").read_text() for s in LEARNERS}
        each(lambda p: p.assignments("fetch_feedback"))
        out["pages"] = each(lambda p: p.feedback_pages())
        # what one learner's token opens elsewhere
        ada = people["ada"]
        out["ada_on_bo"] = ada.http.get(f"{url}/user/bo/api/contents", timeout=60, allow_redirects=False).status_code
        out["ada_on_users"] = ada.http.get(f"{url}/hub/api/users", timeout=60).status_code
        out["formgrader"] = ada.server("GET", "formgrader", allow_redirects=False).status_code
        out["kernels"] = sorted(ada.server("GET", "api/kernelspecs").json()["kernelspecs"])
        out["servers"] = server_processes()
        out["learner_python"] = str(env["python"])
        pool.shutdown()
    finally:
        stop(proc, state)
    out["hub_exit"] = proc.returncode
    out["hub_log"] = hub_log.read_text()
    return out


def test_learners_log_in_through_the_hub_and_only_with_the_password(hub):
    assert hub["login"] == {s: 201 for s in LEARNERS}
    assert hub["wrong_password"] == 403
    assert hub["stranger"] == 403  # not in the allowed users
    for s, model in hub["model"].items():
        assert model["name"] == s and model["servers"][""]["ready"]


def test_a_learners_token_opens_their_own_server_only(hub):
    assert hub["ada_on_bo"] in (302, 403), hub["ada_on_bo"]  # the hub's OAuth refuses her at bo's server
    assert hub["ada_on_users"] == 403  # and she cannot list the other learners


def test_learners_servers_run_in_the_learner_environment_without_the_formgrader(hub):
    assert "learner" in hub["kernels"], hub["kernels"]  # the kernel learner_env.build installed in that prefix
    assert hub["formgrader"] == 404
    # each learner's server is the learner environment's interpreter, with its bin/ first on the PATH
    assert sorted(hub["servers"]) == sorted(LEARNERS), hub["servers"]
    bin_dir = str(Path(hub["learner_python"]).parent)
    for s, server in hub["servers"].items():
        assert server["cmdline"][0] == hub["learner_python"], server["cmdline"]
        assert server["path"].split(os.pathsep)[0] == bin_dir, server["path"]


def test_learners_fetch_and_submit_through_their_servers(hub):
    for s in LEARNERS:
        (fetched,) = [a for a in hub["fetch"][s] if a["assignment_id"] == A and a["status"] == "fetched"]
        assert fetched["course_id"] == COURSE
        assert any(a["status"] == "submitted" for a in hub["submit"][s]), hub["submit"][s]
    assert sorted(n.split("+")[0] for n in hub["inbound"]) == sorted(LEARNERS), hub["inbound"]
    for s in LEARNERS:
        assert f"Collecting submission: {s} {A}" in hub["log"]["collect"]


def test_the_collected_cohort_is_graded_and_each_learner_reads_their_own_feedback(hub):
    rows, full = hub["grades"], registry.read(A).max_score
    assert_cohort_scores(rows)
    for s in LEARNERS:
        pages = hub["pages"][s]
        assert list(pages) == [hub["timestamp"][s]], list(pages)  # one page, under their own submission's time
        (text,) = pages.values()
        assert page_score(text) == (score_of(rows, s), full)
        assert (HINT in text) == (s == "bo"), s
        assert (STUB_HINT in text) == (s == "cy"), s
        assert text == hub["instructor_pages"][s]  # the page the instructor generated for them, and no other's
        assert all(text != page for o, page in hub["instructor_pages"].items() if o != s)


def test_the_hub_stops_cleanly(hub):
    assert hub["hub_exit"] is not None
    assert "Traceback" not in hub["hub_log"], hub["hub_log"][-4000:]
