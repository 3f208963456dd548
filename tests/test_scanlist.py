"""The "Scan before the interview" page (course/) and the block in docs/learners.md are generated from the source
notebooks (coursekit.scanlist) and must match what is committed."""
import nbformat
import pytest

from coursekit import scanlist
from coursekit.paths import assignments, source_notebooks


def test_committed_page_and_learners_guide_match_the_notebooks():
    assert scanlist.main(["--check"]) == 0, "scan page or docs/learners.md's block drifted from source/: run `make sync`"


@pytest.mark.parametrize("assignment", assignments())
def test_every_notebook_has_a_titled_non_empty_list_on_the_page(assignment):
    page, guide = scanlist.PAGE.read_text(), scanlist.LEARNERS.read_text()
    block = guide[guide.index(scanlist.BEGIN):guide.index(scanlist.END)]
    for path in source_notebooks(assignment):
        nb = nbformat.read(path, as_version=4)
        title, text = scanlist.notebook_title(nb), scanlist.scan_section(nb)
        assert title and text.lstrip().startswith(("*", "-")), f"{path}: no title or no bullet list to scan"
        assert "Scan before the interview" not in text, "the section's own heading is not part of the list"
        for where, level, prefix in ((page, "##", ""), (block, "###", "../course/")):
            heading = f"{level} [{title}]({prefix}{assignment}/{path.name})\n\n"
            assert heading + text in where


def test_regeneration_is_idempotent(tmp_path):
    page, guide = tmp_path / "page.md", tmp_path / "learners.md"
    guide.write_text(scanlist.LEARNERS.read_text())
    assert scanlist.main([], page, guide) == 0
    first = page.read_text(), guide.read_text()
    assert scanlist.main([], page, guide) == 0
    assert scanlist.main(["--check"], page, guide) == 0
    assert (page.read_text(), guide.read_text()) == first


def test_guide_outside_the_markers_is_left_alone():
    lists = [scanlist.ScanList("01_x/01_x.ipynb", "01 · X", "* one")]
    guide = f"# Top\n\nbefore\n\n{scanlist.BEGIN}\nold\n{scanlist.END}\n\nafter\n"
    new = scanlist.guide_text(guide, lists)
    assert new.startswith("# Top\n\nbefore\n\n" + scanlist.BEGIN) and new.endswith(scanlist.END + "\n\nafter\n")
    assert "old" not in new and "### [01 · X](../course/01_x/01_x.ipynb)\n\n* one" in new
    with pytest.raises(ValueError):
        scanlist.guide_text("no markers", lists)


def test_section_ends_at_the_next_heading_and_may_span_cells():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 07 · Title\n\ntext"),
        nbformat.v4.new_markdown_cell("## 9 · Red flags\n\n* not this\n\n## 10 · Scan before the interview\n\n* a\n* b"),
        nbformat.v4.new_markdown_cell("* c"),
        nbformat.v4.new_markdown_cell("## Sources\n\n* not this either"),
    ])
    assert scanlist.notebook_title(nb) == "07 · Title"
    assert scanlist.scan_section(nb) == "* a\n* b\n\n* c"
    assert scanlist.problems([scanlist.ScanList("07_x/07_x.ipynb", "07 · Title", "")])
