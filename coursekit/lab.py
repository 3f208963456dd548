"""`make lab`: the learner's JupyterLab.

    python -m coursekit.lab [WORKSPACE] [--port 8888]

Brings the workspace up to date with course/ (coursekit.workspace: your changes are never
overwritten), then starts JupyterLab on it with the learner's settings, coursekit/lab/ as
JupyterLab's app settings folder:

- page_config.json hides nbgrader's instructor tools (the Nbgrader menu with Formgrader, Create
  Assignment, Course List and Assignment List: this course does not use nbgrader's exchange);
  the notebook toolbar's Validate button stays, and runs the visible tests in the grading sandbox;
- overrides.json turns off the news feed and update checks: the course works offline, and a
  pop-up asking to fetch news is noise in a lesson.

It is run from the repository root, where Validate finds nbgrader_config.py. The browser tests
(tests/test_browser.py) start JupyterLab with this same command.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from coursekit.paths import COURSE, WORKSPACE

SETTINGS = Path(__file__).resolve().parent / "lab"


def command(workspace: Path, port: int = 8888, token: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--ServerApp.root_dir={Path(workspace).resolve()}", f"--LabApp.app_settings_dir={SETTINGS}"]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if os.getuid() == 0:  # Jupyter refuses to run as root unless told (containers, CI machines)
        cmd.append("--allow-root")
    return cmd


def main(argv=None) -> None:
    from coursekit.workspace import sync

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workspace", nargs="?", type=Path, default=WORKSPACE)
    ap.add_argument("--port", type=int, default=8888)
    args = ap.parse_args(argv)
    for message in sync(COURSE, args.workspace):
        print(message)
    print(f"workspace ready: {args.workspace}")
    cmd = command(args.workspace, args.port)
    # the notebooks' kernels: idle OpenMP threads sleep instead of spinning, so a busy laptop slows
    # a measurement less (coursekit.threads; torch keeps its default thread count in a lab)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
