"""`make lab` is quiet: the learner's terminal shows the workspace, the URL to open, how to stop and
where the server's log is, and nothing of Jupyter's own chatter, which goes to that log.

The lab is started as the Makefile's `lab` target starts it (`python -m coursekit.lab WORKSPACE
--port=PORT` from the repository root), on a free port, with a workspace and Jupyter's config and
runtime folders in a temp folder, and stopped as Ctrl-C stops it (SIGINT to that process). A
second, cheap test runs coursekit.lab.main on a stand-in server: a later run still names the
notebooks it kept because the learner changed them.
"""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from coursekit import lab as labmodule
from coursekit.lab import LOG
from coursekit.paths import COURSE, REPO

START_TIMEOUT_S = 180  # generous: a cold start on a busy 2-core machine
STOP_TIMEOUT_S = 60
MAX_LINES = 5  # the workspace, the URL, how to stop and the log; one spare


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)  # end of output


def _take(lines: queue.Queue, until, timeout: float) -> tuple[list[str], bool]:
    """Lines up to and including the first for which until(line) holds; (lines, found)."""
    got, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            return got, False
        got.append(line)
        if until(line):
            return got, True
    return got, False


def _kill_servers(runtime: Path) -> None:
    """Whatever server is still described in the test's runtime folder (only after a failure)."""
    for info_file in runtime.glob("jpserver-*.json"):
        try:
            os.kill(json.loads(info_file.read_text())["pid"], signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass


@pytest.mark.slow  # starts JupyterLab
def test_make_lab_prints_the_url_and_little_else(tmp_path):
    ws, runtime = tmp_path / "workspace", tmp_path / "runtime"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(runtime),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), PYTHONUNBUFFERED="1")
    port = _free_port()
    lab = subprocess.Popen([sys.executable, "-m", "coursekit.lab", str(ws), f"--port={port}"], cwd=REPO, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(lab.stdout, lines), daemon=True).start()
    try:
        before, found = _take(lines, lambda line: "Ctrl-C" in line, START_TIMEOUT_S)
        log = ws / LOG
        assert found, "no URL and stop line:\n" + "\n".join(before) + (
            "\n--- server log ---\n" + log.read_text()[-3000:] if log.exists() else "")

        # what the learner sees: the workspace, the URL with its token, Ctrl-C and the log
        shown = "\n".join(before)
        assert len(before) <= MAX_LINES, shown
        copied = sum(1 for p in COURSE.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts)
        assert any(str(ws.resolve()) in line and f"{copied} files copied" in line for line in before), shown
        assert f"({copied} files copied from course/)" in (REPO / "docs" / "learners.md").read_text()  # its sample
        urls = re.findall(rf"http://127\.0\.0\.1:{port}/lab\?token=\w+", shown)
        assert len(urls) == 1, shown
        assert str(log.resolve()) in shown or LOG in shown, shown
        assert "[I " not in shown and "ServerApp" not in shown and "language server" not in shown, shown

        # the course was copied into the workspace as before
        for notebook in COURSE.glob("*/*.ipynb"):
            assert (ws / notebook.relative_to(COURSE)).is_file(), notebook

        # the URL answers: JupyterLab's page, with the token
        with urllib.request.urlopen(urls[0], timeout=30) as response:
            assert response.status == 200
            assert "JupyterLab" in response.read().decode(errors="replace")

        # the server's log holds what used to flood the terminal
        text = log.read_text()
        assert "[I " in text and "ServerApp" in text, text[-3000:]
        assert "Jupyter Server" in text and "is running at" in text, text[-3000:]

        # Ctrl-C stops it cleanly: the server's own SIGTERM path, its runtime file removed
        infos = list(runtime.glob("jpserver-*.json"))
        assert len(infos) == 1, infos
        server_pid = json.loads(infos[0].read_text())["pid"]
        lab.send_signal(signal.SIGINT)
        try:
            code = lab.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # once, in a fresh clone's full run: say what it was doing
            pytest.fail(f"make lab did not stop within {STOP_TIMEOUT_S} s of Ctrl-C: {_state(lab.pid)}; server "
                        f"{_state(server_pid)}; its output: {_take(lines, lambda line: False, 1)[0]}; the server's "
                        f"log ends:\n{log.read_text()[-2000:]}")
        assert code == 0
        after, _ = _take(lines, lambda line: False, 10)  # the rest, up to the end of output
        assert after[-1:] == ["JupyterLab stopped."], after
        assert "[I " not in "\n".join(after) and "[C " not in "\n".join(after), after
        assert len(before) + len([line for line in after if line.strip()]) <= MAX_LINES + 2, before + after
        assert not list(runtime.glob("jpserver-*.json"))
        assert "received signal 15, stopping" in log.read_text()
        with pytest.raises(ProcessLookupError):  # reaped by coursekit.lab
            os.kill(server_pid, 0)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
        _kill_servers(runtime)


def _state(pid: int) -> str:
    """A process's state and signal masks (Linux), for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"pid {pid}: {exc.__class__.__name__}"
    return f"pid {pid} " + ", ".join(line.replace("\t", " ") for line in status
                                     if line.split(":")[0] in ("State", "SigBlk", "SigIgn", "SigCgt"))


class _FakeServer:
    """Stands in for the JupyterLab process: ready at once, then shut down from its File menu."""
    pid, returncode = 0, None

    def __init__(self, cmd, **kwargs):
        self.cmd, self.kwargs = cmd, kwargs

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        self.returncode = 0
        return 0


def test_a_later_run_names_what_it_kept(tmp_path, monkeypatch, capsys):
    course, ws = tmp_path / "course", tmp_path / "workspace"
    (course / "01_a").mkdir(parents=True)
    (course / "01_a" / "01_a.ipynb").write_text("v1")
    (course / "notes.md").write_text("notes")
    monkeypatch.setattr(labmodule, "COURSE", course)
    monkeypatch.setattr(labmodule.subprocess, "Popen", _FakeServer)
    monkeypatch.setattr(labmodule, "wait_until_ready",
                        lambda server, log: {"url": "http://127.0.0.1:8888/", "token": "abc"})
    monkeypatch.setattr(labmodule.signal, "signal", lambda *args: None)  # leave pytest's handlers alone

    labmodule.main([str(ws)])
    first = capsys.readouterr().out.splitlines()
    assert first == [f"workspace: {ws.resolve()} (2 files copied from course/)",
                     "JupyterLab is running; open http://127.0.0.1:8888/lab?token=abc",
                     f"Ctrl-C stops it (save your notebooks first). Server log: {(ws / LOG).resolve()}",
                     "JupyterLab stopped."], first

    (ws / "01_a" / "01_a.ipynb").write_text("my answers")  # the learner's work
    (course / "01_a" / "01_a.ipynb").write_text("v2")  # and a newer course version
    (course / "02_b.md").write_text("new")
    labmodule.main([str(ws)])
    second = capsys.readouterr().out.splitlines()
    assert second[0].startswith("KEPT your 01_a/01_a.ipynb"), second  # in path order, as sync says them
    assert second[1] == "added    02_b.md", second
    assert second[2] == f"workspace: {ws.resolve()}", second
    assert len(second) == 6, second
    assert (ws / "01_a" / "01_a.ipynb").read_text() == "my answers"
