"""A course root's nbgrader configuration, read the way nbgrader reads it (nbgrader_config.py in the
root, which loads grader_config.py), for the settings that processes other than nbgrader's own
need: a submission's wall-clock limit (coursekit.batch.SubmissionRunner) and the sandbox's layer
that the report names (coursekit.judge.sandbox.configured)."""
from __future__ import annotations

import functools
from pathlib import Path

from traitlets.config import Config

FILES = ("nbgrader_config.py", "grader_config.py")


def course_config(root: Path) -> Config:
    """The configuration nbgrader would run with in course root `root` (empty where it has none);
    read again only when one of its files changed."""
    root = Path(root).resolve()
    stamps = tuple((root / name).stat().st_mtime_ns if (root / name).exists() else None for name in FILES)
    return Config(_load(str(root), stamps))  # a copy: the cached one stays as read


@functools.lru_cache(maxsize=64)
def _load(root: str, stamps: tuple) -> Config:
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    try:
        return PyFileConfigLoader(FILES[0], path=root).load_config()
    except ConfigFileNotFound:
        return Config()
