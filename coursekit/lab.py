"""`make lab`: the learner's JupyterLab.

    python -m coursekit.lab [WORKSPACE] [--port 8888]

Brings the workspace up to date with course/ (coursekit.workspace: your changes are never
overwritten), then starts JupyterLab on it with the learner's settings, coursekit/lab/ as
JupyterLab's app settings folder:

- page_config.json hides nbgrader's instructor tools (the Nbgrader menu with Formgrader, Create
  Assignment, Course List and Assignment List: this course does not use nbgrader's exchange);
  the notebook toolbar's Validate button stays, and runs the visible tests in the grading sandbox;
- overrides.json turns off the news feed and update checks: the course works offline, and a
  pop-up asking to fetch news is noise in a lesson; and code cells wrap their long lines, so a
  visible test's message (`assert ..., "accepted_pmf(0.5, 2) should be ...: the last entry is ..."`)
  is read whole instead of running past the cell's right edge (your own settings still win).

The terminal shows only what a learner needs: where the workspace is, the URL to open (with its
token, read from the server's own jpserver-<pid>.json in Jupyter's runtime folder once the server
answers) and how to stop. Everything the server says (its INFO lines, skipped language servers,
kernel and websocket messages) goes to LOG in the workspace, a hidden file: JupyterLab's file
browser does not list it, `make check` grades only the assignments' notebooks and workspace/ is
git-ignored. Ctrl-C stops the server cleanly (kernels shut down, runtime files removed): the
server runs in its own session, so the terminal's interrupt reaches this process alone, which
passes it on as SIGTERM, as it does a SIGTERM or SIGHUP of its own.

It is run from the repository root, where Validate finds nbgrader_config.py. The browser tests
(tests/test_browser.py) start JupyterLab with this same command; tests/test_lab_quiet.py runs
this whole module as `make lab` does.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from coursekit.paths import COURSE, WORKSPACE

SETTINGS = Path(__file__).resolve().parent / "lab"
LOG = ".jupyter-server.log"  # in the workspace
SLOW_START_S = 120  # after this long without an answer, say where to look (and keep waiting)
STOP_GRACE_S = 30  # a clean stop that takes longer than this is cut short


def command(workspace: Path, port: int = 8888, token: str | None = None) -> list[str]:
    # ws_ping_timeout: jupyter_server's websockets default to a pong timeout of three pings (90 s) and
    # tornado 6.5 allows one at most, so every kernel's first connection wrote a warning into the log
    # ("The websocket_ping_timeout (90000) cannot be longer than the websocket_ping_interval (30000)")
    # and used one ping anyway: asking for one ping says the same without the warning
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--ServerApp.root_dir={Path(workspace).resolve()}", f"--LabApp.app_settings_dir={SETTINGS}",
           '--ServerApp.tornado_settings={"ws_ping_timeout": 30000}']
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if os.getuid() == 0:  # Jupyter refuses to run as root unless told (containers, CI machines)
        cmd.append("--allow-root")
    return cmd


def _shown(path: Path) -> str:
    """`path` relative to the current folder when it is inside it (workspace/...), else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _answers(info: dict) -> bool:
    """Whether the server described by its jpserver-<pid>.json answers an authenticated request."""
    request = urllib.request.Request(info["url"].rstrip("/") + "/api/status")
    if info.get("token"):
        request.add_header("Authorization", f"token {info['token']}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def wait_until_ready(server: subprocess.Popen, log: Path) -> dict | None:
    """The server's own description (url, port, token, ...) once it answers; None if it exits first."""
    from jupyter_core.paths import jupyter_runtime_dir

    info_file = Path(jupyter_runtime_dir()) / f"jpserver-{server.pid}.json"
    start, warned = time.monotonic(), False
    while server.poll() is None:
        try:
            info = json.loads(info_file.read_text())
        except (OSError, ValueError):  # not written yet, or being written
            info = None
        if info and _answers(info):
            return info
        if not warned and time.monotonic() - start > SLOW_START_S:
            print(f"JupyterLab is taking long to start; what it is doing: {_shown(log)}", flush=True)
            warned = True
        time.sleep(0.25)
    return None


def _say(line: str) -> None:
    """Print, unless the terminal has gone (SIGHUP): stopping the server must not depend on it."""
    try:
        print(line, flush=True)
    except OSError:
        pass


def stop(server: subprocess.Popen) -> None:
    """Stop the server the way Jupyter stops cleanly (SIGTERM); kill it if that hangs or on a second Ctrl-C."""
    if server.poll() is None:
        server.terminate()
    try:
        server.wait(STOP_GRACE_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        server.kill()
        server.wait()


def main(argv=None) -> None:
    from coursekit import platforms
    from coursekit.workspace import MANIFEST, sync

    platforms.require_posix()

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workspace", nargs="?", type=Path, default=WORKSPACE)
    ap.add_argument("--port", type=int, default=8888)
    args = ap.parse_args(argv)
    first_run = not (args.workspace / MANIFEST).exists()
    messages = sync(COURSE, args.workspace)
    added = [m for m in messages if m.startswith("added ")]
    copied = f" ({len(added)} files copied from course/)" if first_run and added else ""
    for message in messages:  # the files you changed that were kept, updates, a later run's new files
        if not (first_run and message in added):  # the first copy is one line, not one per file
            print(message)
    print(f"workspace: {args.workspace.resolve()}{copied}", flush=True)

    log = args.workspace / LOG
    # the notebooks' kernels: idle OpenMP threads sleep instead of spinning, so a busy laptop slows
    # a measurement less (coursekit.threads; torch keeps its default thread count in a lab)
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # SIGTERM and SIGHUP (terminal closed) stop the server like Ctrl-C does; and Ctrl-C itself even where
    # this process was started with SIGINT ignored (a non-interactive shell's background job: `make lab &`
    # in a script), where Python installs no handler and Ctrl-C did nothing
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    with open(log, "w") as out:
        server = subprocess.Popen(command(args.workspace, args.port), stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        info = wait_until_ready(server, log)
        if info is None:
            tail = log.read_text(errors="replace").splitlines()[-20:]
            print(f"JupyterLab stopped before it was ready (exit code {server.returncode}); the end of its log, "
                  f"{_shown(log)}:", *("  " + line for line in tail), sep="\n", file=sys.stderr)
            sys.exit(server.returncode if server.returncode > 0 else 1)
        token = f"?token={info['token']}" if info.get("token") else ""
        print(f"JupyterLab is running; open {info['url'].rstrip('/')}/lab{token}", flush=True)
        print(f"Ctrl-C stops it (save your notebooks first). Server log: {_shown(log)}", flush=True)
        server.wait()  # until Ctrl-C, or File > Shut Down in JupyterLab (exit code 0)
        if server.returncode != 0:
            print(f"JupyterLab exited (code {server.returncode}); see {_shown(log)}", file=sys.stderr)
            sys.exit(server.returncode if server.returncode > 0 else 1)
        print("JupyterLab stopped.", flush=True)
    except KeyboardInterrupt:
        _say("\nstopping JupyterLab...")
        stop(server)
        _say("JupyterLab stopped.")
    finally:
        stop(server)  # whatever happened above (a closed terminal, an error), no server is left behind


if __name__ == "__main__":
    main()
