"""Turn a jupytext percent-format draft into an nbgrader source notebook (a one-time step).

The notebook under source/ is the master from then on; edit it in JupyterLab or round-trip it
with jupytext. In the draft, a code cell's header gives its role in the course, in short form:

    # %% role="setup"                                      the imports (solutions/reference copies them)
    # %% role="solution" grade_id="accepted_pmf"           the learner writes this function
    # %% role="visible" grade_id="test_accepted_pmf__literals"   visible tests: run in the learner's
    #                                                      kernel, worth no points
    # %% role="hidden" grade_id="test_accepted_pmf__reference" points=3   a hidden test: exactly a
    #                                                      verdict("aNN.check_x", fn) call, the only cells with points
    # %% role="readonly" grade_id="given_helper"           given code the learner must not change
    # %% tags=["measurement"]                              a cell grading may leave out
    #                                                      (measurement, demo or explorer; any role may add tags)

The rules are the registry's (coursekit.registry): a solution cell defines the function its
grade_id names; a visible test's grade_id is `test_<exercise>__<what>`; a hidden test is graded,
carries points and calls verdict; no other cell carries points. `draft_to_notebook` refuses a
draft that breaks one, naming the cell, so a new notebook's first `make sync` does not fail later
in the registry's tests.

    python -m coursekit.authoring draft.py source/99_x/99_x.ipynb
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

import jupytext
import nbformat

from coursekit.registry import verdict_call

ROLES = {
    "setup": dict(grade=False, solution=False, locked=True),
    "solution": dict(grade=False, solution=True, locked=False),
    "visible": dict(grade=False, solution=False, locked=True),
    "hidden": dict(grade=True, solution=False, locked=True),
    "readonly": dict(grade=False, solution=False, locked=True),
}
SKIP_TAGS = ("measurement", "demo", "explorer")  # grader_config.py's JudgedExecute.skip_tags


def nbgrader_metadata(role: str, grade_id: str, points: float | None = None) -> dict:
    meta = dict(ROLES[role], grade_id=grade_id, schema_version=3, task=False)
    if role == "hidden":
        meta["points"] = points
    return meta


def _check(index: int, role: str, grade_id: str | None, points, source: str, tags: list[str]) -> None:
    where = f"cell {index} ({role or 'plain'}{', ' + grade_id if grade_id else ''})"
    if role and role not in ROLES:
        raise ValueError(f"{where}: role must be one of {', '.join(ROLES)}")
    if role and role != "setup" and not grade_id:
        raise ValueError(f"{where}: a {role} cell needs a grade_id")
    if points is not None and role != "hidden":
        raise ValueError(f"{where}: only hidden tests carry points (the verdict is made outside the kernel)")
    for tag in tags:
        if tag not in SKIP_TAGS:
            raise ValueError(f"{where}: unknown tag {tag!r} (one of {', '.join(SKIP_TAGS)})")
    if role == "solution":
        defined = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
        if grade_id not in defined:
            raise ValueError(f"{where}: a solution cell's grade_id is the function it defines ({defined})")
        if "### BEGIN SOLUTION" not in source or "### END SOLUTION" not in source:
            raise ValueError(f"{where}: mark the reference with ### BEGIN SOLUTION / ### END SOLUTION")
    if role in ("visible", "hidden") and not (grade_id.startswith("test_") and "__" in grade_id):
        raise ValueError(f"{where}: a test's grade_id is test_<exercise>__<what>")
    if role == "hidden":
        if not points or points <= 0:
            raise ValueError(f"{where}: a hidden test carries points (points=N in its header)")
        if "### BEGIN HIDDEN TESTS" not in source or verdict_call(source) is None:
            raise ValueError(f"{where}: a hidden test is a verdict(\"aNN.check_x\", fn) call between "
                             "### BEGIN HIDDEN TESTS / ### END HIDDEN TESTS")
    if role == "visible" and verdict_call(source) is not None:
        raise ValueError(f"{where}: a visible test runs in the learner's kernel: no verdict call")


def draft_to_notebook(draft: str) -> nbformat.NotebookNode:
    nb = jupytext.reads(draft, fmt="py:percent")
    for index, cell in enumerate(nb.cells):
        role = cell.metadata.pop("role", None)
        grade_id = cell.metadata.pop("grade_id", None)
        points = cell.metadata.pop("points", None)
        if "nbgrader" in cell.metadata and isinstance(cell.metadata["nbgrader"], str):
            raise ValueError(f"cell {index}: write role=\"...\" (setup, solution, visible, hidden, readonly), "
                             "not nbgrader=\"...\"")
        tags = list(cell.metadata.get("tags", []))
        if cell.cell_type != "code":
            continue
        _check(index, role, grade_id, points, cell.source, tags)
        if role:
            cell.metadata["nbgrader"] = nbgrader_metadata(role, grade_id or "setup", points)
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
