"""Generate solutions/reference/aNN_*.py from the solution regions of the source notebooks.

The source notebook is the single place where a reference implementation is written; the
checkers import the generated module. `answer_sources` reads a notebook's answer cells (make
check: a notebook not started); `with_reference_answers` hands in a release notebook with the
reference answers pasted in (the tests and the benchmarks). `--check` exits 1 when a committed module has drifted.

    python -m coursekit.reference          # regenerate
    python -m coursekit.reference --check  # fail on drift (tests/test_sync.py does the same)
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import nbformat

from coursekit.paths import REFERENCE, assignments, reference_module_name, source_notebooks

HEADER = '''# ruff: noqa: F401  (the notebook's imports are kept whole)
"""Reference solutions for {assignment}.

GENERATED from source/{assignment}/ by `make sync` (python -m coursekit.reference).
Do not edit: edit the solution cells of the source notebook and regenerate.
"""
'''
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def is_solution_cell(cell) -> bool:
    return cell.cell_type == "code" and bool(cell.metadata.get("nbgrader", {}).get("solution"))


def is_setup_cell(cell) -> bool:
    return cell.cell_type == "code" and str(cell.metadata.get("nbgrader", {}).get("grade_id", "")).startswith("setup")


def imports_only(source: str) -> str:
    """The import statements of a setup cell: importing the reference must not load models or print."""
    tree = ast.parse(source)
    return "\n".join(ast.get_source_segment(source, node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def strip_markers(source: str) -> str:
    return "\n".join(ln for ln in source.splitlines() if ln.strip() not in MARKERS)


def reference_source(assignment: str) -> str:
    chunks = [HEADER.format(assignment=assignment)]
    for path in source_notebooks(assignment):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if is_setup_cell(cell):
                chunks.append(imports_only(cell.source).strip() + "\n")
            elif is_solution_cell(cell):
                chunks.append(strip_markers(cell.source).strip() + "\n")
    return "\n\n".join(chunks)


def expected_files() -> dict:
    files = {REFERENCE / "__init__.py": '"""Reference solutions, generated from source/ (see coursekit.reference)."""\n'}
    for assignment in assignments():
        files[REFERENCE / f"{reference_module_name(assignment)}.py"] = reference_source(assignment)
    return files


def write_or_check(expected: dict, check: bool) -> int:
    """Write each {path: text} that differs, or with `check` only list the drifted ones and return 1.
    Every generated file of the course (reference modules, the scan page) goes through here."""
    drifted = []
    for path, text in expected.items():
        if path.exists() and path.read_text() == text:
            continue
        if check:
            drifted.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if drifted:
        print("out of date (run `make sync`):", *drifted, sep="\n  ")
        return 1
    return 0


def parse(argv, doc: str):
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a committed file has drifted")
    return ap.parse_args(argv)


def answer_sources(path: Path) -> dict[str, str]:
    """{grade_id: source} of a notebook's answer cells (nbgrader solution cells), in notebook order."""
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(path, as_version=4).cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def with_reference_answers(release_nb: Path, source_nb: Path, dest: Path, only=None) -> Path:
    """The release notebook with the source's solution cells pasted in (markers removed), the way a
    learner who wrote the reference answers would hand it in; `only`: just these exercises (grade_ids)."""
    src = {gid: code for gid, code in answer_sources(source_nb).items() if only is None or gid in only}
    nb = nbformat.read(release_nb, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in src:
            cell.source = strip_markers(src[gid])
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest


def main(argv=None) -> int:
    return write_or_check(expected_files(), parse(argv, __doc__).check)


if __name__ == "__main__":
    sys.exit(main())
