"""Gather every notebook's "Scan before the interview" list into one page.

Each source notebook has a markdown section headed `## <number> · Scan before the interview`;
the section runs to the next `#`/`##` heading or code cell (it may span markdown cells). This
module copies those sections, under each notebook's title (the `# ...` heading of its first
cell), to two places that are never edited by hand:

- course/scan_before_the_interview.md, which `make lab` copies into the learner's workspace
  (the learner's JupyterLab opens Markdown rendered, see coursekit/lab/overrides.json; the titles link to the notebooks);
- docs/learners.md, between `<!-- scan:begin -->` and `<!-- scan:end -->`, for learners reading the
  repository (the README links there).

Both are rendered from the same sections by one function (only the heading level and the link
prefix differ; the block in docs/learners.md adds one line saying where learners find the page).
Cells marked as nbgrader solution cells are skipped, so nothing graded can leak onto the page.

    python -m coursekit.scanlist          # regenerate (part of `make sync`)
    python -m coursekit.scanlist --check  # exit 1 on drift (tests/test_scanlist.py does the same)
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from coursekit.paths import COURSE, REPO, assignments, source_notebooks
from coursekit.reference import parse, write_or_check

PAGE = COURSE / "scan_before_the_interview.md"
LEARNERS = REPO / "docs" / "learners.md"  # the learners' guide, which holds the block
BEGIN, END = "<!-- scan:begin -->", "<!-- scan:end -->"
SCAN_HEADING = re.compile(r"^##\s+[\w.]+\s*·\s*Scan before the interview\s*$", re.IGNORECASE)
SECTION_END = re.compile(r"^#{1,2}\s")  # a `#` or `##` heading closes the section
GENERATED = ("<!-- GENERATED from the source notebooks' \"Scan before the interview\" sections by "
             "`make sync` (python -m coursekit.scanlist). Do not edit: edit the notebooks. -->")
INTRO = "Each notebook ends with a short list to scan before an interview; here they all are, in course order."


@dataclass
class ScanList:
    notebook: str  # relative to course/ and source/: "01_acceptance_chain/01_acceptance_chain.ipynb"
    title: str     # the first cell's `# ...` heading, without the `#`
    text: str      # the section's markdown without its heading; "" when the notebook has none


def notebook_title(nb) -> str:
    first = nb.cells[0].source if nb.cells else ""
    match = re.search(r"^#\s+(.+?)\s*$", first, re.MULTILINE)
    return match.group(1) if match else ""


def scan_section(nb) -> str:
    """The markdown under the notebook's "Scan before the interview" heading, stripped; "" if none."""
    lines, inside = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown" or cell.metadata.get("nbgrader", {}).get("solution"):
            if inside:
                break
            continue
        for line in cell.source.splitlines():
            if inside and SECTION_END.match(line):
                return "\n".join(lines).strip()
            if not inside and SCAN_HEADING.match(line):
                inside = True
            elif inside:
                lines.append(line)
        if inside:
            lines.append("")  # cells are paragraphs
    return "\n".join(lines).strip()


def scan_lists() -> list[ScanList]:
    out = []
    for assignment in assignments():
        for path in source_notebooks(assignment):
            nb = nbformat.read(path, as_version=4)
            out.append(ScanList(f"{assignment}/{path.name}", notebook_title(nb), scan_section(nb)))
    return out


def render(lists: list[ScanList], level: int, link_prefix: str) -> str:
    """The lists, each under its notebook's title as a heading of `level`, linked to the notebook."""
    parts = [INTRO]
    for s in lists:
        parts.append(f"{'#' * level} [{s.title}]({link_prefix}{s.notebook})\n\n{s.text}")
    return "\n\n".join(parts) + "\n"


def page_text(lists: list[ScanList]) -> str:
    return f"{GENERATED}\n# Scan before the interview\n\n" + render(lists, 2, "")


def guide_text(guide: str, lists: list[ScanList]) -> str:
    """`guide` (docs/learners.md) with the block between the markers replaced; ValueError if the
    markers are missing. Its links climb out of docs/ to the released notebooks."""
    start, end = guide.find(BEGIN), guide.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{LEARNERS.name} needs {BEGIN} and {END} (in that order) around the generated block")
    block = (f"{BEGIN}\n{GENERATED}\n\n" + render(lists, 3, f"../{COURSE.name}/") + f"\nLearners also find this page in "
             f"their workspace as `{PAGE.name}`; double-click it in JupyterLab to read it rendered.\n\n")
    return guide[:start] + block + guide[end:]


def problems(lists: list[ScanList]) -> list[str]:
    return [f"source/{s.notebook}: no {'title' if not s.title else 'scan list'} "
            f"({'a `# ...` heading in the first cell' if not s.title else 'a `## N · Scan before the interview` section with a list'})"
            for s in lists if not s.title or not s.text]


def main(argv=None, page: Path = PAGE, guide: Path = LEARNERS) -> int:
    check = parse(argv, __doc__).check
    lists = scan_lists()
    if bad := problems(lists):
        print("cannot gather the scan lists:", *bad, sep="\n  ")
        return 1
    return write_or_check({page: page_text(lists), guide: guide_text(guide.read_text(), lists)}, check)


if __name__ == "__main__":
    sys.exit(main())
