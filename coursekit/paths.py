"""Where things are. Assignments are the folders of source/, in name order."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "source"
COURSE = REPO / "course"
REFERENCE = REPO / "solutions" / "reference"
WORKSPACE = REPO / "workspace"
GRADER_CONFIG = REPO / "grader_config.py"
NBGRADER_CONFIG = REPO / "nbgrader_config.py"


def assignments() -> list[str]:
    return sorted(p.name for p in SOURCE.iterdir() if p.is_dir() and not p.name.startswith("."))


def source_notebooks(assignment: str) -> list[Path]:
    return sorted((SOURCE / assignment).glob("*.ipynb"))


def reference_module_name(assignment: str) -> str:
    """01_acceptance_chain -> a01_acceptance_chain (a module name cannot start with a digit)."""
    return "a" + assignment
