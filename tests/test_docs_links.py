"""The repository's documents hold together: every relative link and image in README.md,
CONTRIBUTING.md and docs/ points at a file that exists, and a `#anchor` into a Markdown file at
one of its headings (GitHub's slugs). External links (http, https, mailto, ...) are not fetched.

Links are read with markdown-it-py (CommonMark, as GitHub renders), so a link inside a code span
or a fenced block is not a link; `src` and `href` of inline HTML are read too. The README is the
door, not the manual: it stays at most 150 lines and opens with the two commands."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt

from coursekit.paths import REPO

DOCUMENTS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]
MD = MarkdownIt("commonmark")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...
HTML_TARGET = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")
README_MAX_LINES = 150


def _inline_text(token) -> str:
    """What a heading shows: its text and code spans, without emphasis or link markup."""
    return "".join(c.content for c in (token.children or []) if c.type in ("text", "code_inline", "html_inline"))


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, `_`, `-`
    and spaces kept, in any script), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's slug in a Markdown file; a repeated heading gets -1, -2, ... as on GitHub."""
    tokens, seen, out = MD.parse(path.read_text()), {}, set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            base = slug(_inline_text(tokens[i + 1]))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def targets(path: Path) -> list[str]:
    """Every link and image target of a Markdown file, in order."""
    found = []

    def walk(tokens):
        for tok in tokens:
            if tok.type == "link_open":
                found.append(tok.attrs.get("href", ""))
            elif tok.type == "image":
                found.append(tok.attrs.get("src", ""))
            elif tok.type in ("html_inline", "html_block"):
                found.extend(HTML_TARGET.findall(tok.content))
            if tok.children:
                walk(tok.children)

    walk(MD.parse(path.read_text()))
    return found


def broken(path: Path) -> list[str]:
    out = []
    for target in targets(path):
        if not target or SCHEME.match(target):
            continue
        where, _, anchor = target.partition("#")
        where = unquote(where.split("?", 1)[0])
        file = (path.parent / where).resolve() if where else path
        if not file.exists():
            out.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and unquote(anchor) not in anchors(file):
            out.append(f"{target}: no heading of {file.name} has that anchor")
    return out


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path):
    assert not broken(path), f"{path.relative_to(REPO)}: " + "; ".join(broken(path))


def test_the_readme_is_a_door():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES, "README.md is the door: move detail into docs/"
    first_block = readme.split("```", 2)[1]
    assert re.search(r"^make lab\b", first_block, re.M) and re.search(r"^make test\b", first_block, re.M)


def test_the_link_checker_finds_what_is_broken(tmp_path):
    (tmp_path / "other.md").write_text("# A heading · with `code`\n\n## Twice\n\n## Twice\n")
    (tmp_path / "pic.png").write_bytes(b"")
    doc = tmp_path / "doc.md"
    doc.write_text("# Top\n\n[ok](other.md#a-heading--with-code) [ok](other.md#twice-1) ![ok](pic.png)\n"
                   "[ok](#top) [web](https://example.org/missing) `[not a link](gone.md)`\n"
                   "[gone](gone.md) [bad anchor](other.md#nowhere) <img src=\"nothing.png\">\n")
    assert [b.split(":")[0] for b in broken(doc)] == ["gone.md", "other.md#nowhere", "nothing.png"]
