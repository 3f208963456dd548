"""A learner environment built as `make learner-env` builds it, without downloading anything
(tests/test_learner_env.py, tests/test_hub.py).

A new virtual environment gets this environment's third-party packages, linked one by one (this
course's own installation left out: no solutions, checkers or grading tools), the learner package
built from a copy of `learner/` with pip, offline, and the Jupyter configuration pip would have
installed with those packages (etc/jupyter: which server extensions are on, nbgrader's among them),
copied, since only site-packages are linked.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from coursekit.paths import REPO

OURS = re.compile(r"specdec|solutions|coursekit|__editable__", re.IGNORECASE)  # the full course's installation


def build(base: Path) -> dict:
    """Build the environment under `base`/env; its paths: dest, python, site, kernels."""
    dest = base / "env"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(dest)
    python = dest / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not OURS.search(entry.name):
            (site / entry.name).symlink_to(entry)
    etc = Path(sys.prefix) / "etc" / "jupyter"
    if etc.is_dir():
        shutil.copytree(etc, dest / "etc" / "jupyter")
    package = base / "learner"
    shutil.copytree(REPO / "learner", package, symlinks=False)  # specdec/ there is a link to the one copy
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    str(package)], check=True, capture_output=True, text=True)
    subprocess.run([python, "-m", "ipykernel", "install", "--prefix", str(dest), "--name", "learner"],
                   check=True, capture_output=True, text=True)
    return dict(dest=dest, python=python, site=site, kernels=dest / "share" / "jupyter" / "kernels")
