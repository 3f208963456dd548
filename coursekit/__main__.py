"""Every learner command without make (a machine without it, or one you would rather not use):

    python3 -m coursekit setup            make venv: .venv with the pinned dependencies
    python3 -m coursekit lab [--port N]   make lab: set up if needed, copy the course into workspace/, start JupyterLab
    python3 -m coursekit check [NB ...]   make check NB=...: grade your workspace, notebook by notebook
    python3 -m coursekit test             make test: set up if needed, run the whole test suite

Run from the course's folder with the Python you would give make (3.11). It needs nothing but the
standard library until the environment exists, then runs the same command as the make target, with
.venv's Python. On native Windows it says, in one sentence, to use WSL.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from coursekit import platforms

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
STAMP = VENV / ".installed"  # the Makefile's stamp: the same environment either way
PYTHON = VENV / ("Scripts/python.exe" if platforms.windows() else "bin/python")
COMMANDS = {  # the make target's command, after `.venv/bin/python`
    "lab": ["-m", "coursekit.lab", "workspace"],
    "check": ["-m", "coursekit.check", "workspace"],
    "test": ["-m", "pytest", "-n", "auto", "--maxprocesses", "4", "--dist", "loadgroup", "--no-loadscope-reorder",
             "--durations=25"],
}


def _stale() -> bool:
    newest = max((REPO / name).stat().st_mtime for name in ("requirements.txt", "pyproject.toml"))
    return not PYTHON.exists() or not STAMP.exists() or STAMP.stat().st_mtime < newest


def _pip(*args: str) -> None:
    import subprocess

    for attempt in (1, 2, 3):  # a registry's dropped connection fails one try, as in the Makefile
        if subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", *args], cwd=REPO).returncode == 0:
            return
        print(f"pip install failed (try {attempt} of 3)", file=sys.stderr)
    raise SystemExit(1)


def setup() -> None:
    """What `make venv` does: .venv with requirements.txt's pins and the course installed editable
    (and rfc3987-syntax removed: the Makefile says why)."""
    import subprocess

    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    _pip("--upgrade", "pip")
    _pip("-r", "requirements.txt")
    _pip("--no-deps", "-e", ".")
    subprocess.run([str(PYTHON), "-m", "pip", "uninstall", "--quiet", "--yes", "rfc3987-syntax"], cwd=REPO)
    STAMP.touch()


def main(argv=None) -> int:
    platforms.require_posix()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("setup", *COMMANDS):
        print(__doc__)
        return 0 if argv[:1] in ([], ["-h"], ["--help"]) else 2
    command, rest = argv[0], argv[1:]
    if command == "setup" or _stale():
        setup()
    if command == "setup":
        return 0
    import subprocess

    env = dict(os.environ, PATH=os.pathsep.join([str(PYTHON.parent), os.environ.get("PATH", "")]))  # as make's
    return subprocess.run([str(PYTHON), *COMMANDS[command], *rest], cwd=REPO, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
