"""Turn a jupytext percent-format draft into an nbgrader source notebook (a one-time step).

The notebook under source/ is the master from then on; edit it in JupyterLab or round-trip it
with jupytext. In the draft, a cell header carries the nbgrader role in short form:

    # %% nbgrader="solution" grade_id="accepted_pmf"        learner writes code here
    # %% nbgrader="tests" grade_id="test_accepted_pmf__literals" points=1
    # %% nbgrader="readonly" grade_id="setup"             given code the learner must not change

    python -m coursekit.authoring draft.py source/01_x/01_x.ipynb
"""
from __future__ import annotations

import argparse
from pathlib import Path

import jupytext
import nbformat

ROLES = {
    "solution": dict(grade=False, solution=True, locked=False),
    "tests": dict(grade=True, solution=False, locked=True),
    "readonly": dict(grade=False, solution=False, locked=True),
}


def nbgrader_metadata(role: str, grade_id: str, points: float | None = None) -> dict:
    meta = dict(ROLES[role], grade_id=grade_id, schema_version=3, task=False)
    if role == "tests":
        meta["points"] = points if points is not None else 1
    return meta


def draft_to_notebook(draft: str) -> nbformat.NotebookNode:
    nb = jupytext.reads(draft, fmt="py:percent")
    for cell in nb.cells:
        role = cell.metadata.pop("nbgrader", None)
        grade_id = cell.metadata.pop("grade_id", None)
        points = cell.metadata.pop("points", None)
        if role:
            cell.metadata["nbgrader"] = nbgrader_metadata(role, grade_id, points)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("draft", type=Path, help="jupytext percent-format draft (.py)")
    ap.add_argument("target", type=Path, help="source notebook to write")
    args = ap.parse_args(argv)
    nb = draft_to_notebook(args.draft.read_text())
    args.target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, args.target)
    print(f"wrote {args.target}")


if __name__ == "__main__":
    main()
