"""No released file contains a solution or a hidden test."""
import re

import nbformat
import pytest

from coursekit.paths import COURSE, SOURCE

RELEASED = sorted(p for p in COURSE.rglob("*") if p.is_file())
FORBIDDEN = ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
             "solutions.", "solutions import", "check_"]


def _split_source_lines():
    """(lines inside solution/hidden-test regions, lines outside them) over all of source/."""
    inside_lines, outside_lines = set(), set()
    for path in SOURCE.rglob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            inside = False
            for line in cell.source.splitlines():
                if re.search(r"### BEGIN (SOLUTION|HIDDEN TESTS)", line):
                    inside = True
                elif re.search(r"### END (SOLUTION|HIDDEN TESTS)", line):
                    inside = False
                else:
                    (inside_lines if inside else outside_lines).add(line.strip())
    return inside_lines, outside_lines


def solution_lines():
    """Every non-trivial line written inside a solution or hidden-test region of source/, except
    lines that the notebooks also give away outside those regions (e.g. `with torch.no_grad():`)."""
    inside_lines, outside_lines = _split_source_lines()
    return {line for line in inside_lines - outside_lines if len(line) >= 12}


def test_there_is_something_to_check():
    assert RELEASED and len(solution_lines()) > 5


@pytest.mark.parametrize("path", RELEASED, ids=lambda p: str(p.relative_to(COURSE)))
def test_released_file_has_no_solution_or_hidden_test(path):
    text = path.read_text()
    for marker in FORBIDDEN:
        assert marker not in text, f"{marker!r} in {path}"
    if path.suffix == ".ipynb":
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        leaked = [line for line in solution_lines() if line in code]
        assert not leaked, leaked
