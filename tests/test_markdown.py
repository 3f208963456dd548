"""Every markdown cell renders as its author meant: no list, heading or maths that a wrapped line
made by accident.

The notebooks' markdown is wrapped by hand at about 100 columns, so a wrapped line can begin with
what Markdown reads as block syntax: "and continuous just below" followed by a line that starts
"1. The closed form" is, in CommonMark, a paragraph and then an ordered list, and the sentence is
cut in two. Each markdown cell of every notebook in source/ and course/ is parsed with
markdown-it-py (CommonMark, the grammar JupyterLab's and GitHub's renderers build on) and these
are faults:

1. Accidental lists. The intended lists of these notebooks start after a blank line, a heading,
   or a line that ends a sentence or announces the list ("... as ints:"); their ordered lists
   start at 1 and each item starts with a capital, a number or markup ("1. **Draft**", "2. The").
   A list is flagged when
   a. it interrupts a paragraph whose last line does not end with ".", "!", "?" or ":" (closing
      brackets, quotes and emphasis after it allowed): the list starts mid-sentence;
   b. it is ordered and starts at a number other than 1;
   c. an item of an ordered list starts with a lowercase word ("2. the ..."): a number that ended
      the previous line's sentence fragment, not an item.
2. Accidental headings.
   a. Any setext heading (a line of "=" or "-" under paragraph text): these notebooks write every
      heading with "#", so an underline is a wrapped line of dashes or equals signs.
   b. A "#" heading that interrupts a paragraph (the line above it is paragraph text), or whose
      text starts with a lowercase word ("# of drafts ..."): a wrapped line that starts with "#".
3. Unbalanced maths delimiters. After removing fenced code blocks and code spans, a cell's
   unescaped "$$" must come in pairs, and so must its single "$" (those not part of "$$").

Maths is parsed as the text it is, not set aside first: JupyterLab protects $...$ from Markdown,
but not every renderer does, and a line of display maths that starts with "+ " is a list item
there. Rewrapping such a line costs nothing.
"""
import re

import nbformat
import pytest
from markdown_it import MarkdownIt

from coursekit.paths import COURSE, REPO, SOURCE

NOTEBOOKS = sorted(SOURCE.glob("*/*.ipynb")) + sorted(COURSE.glob("*/*.ipynb"))
MD = MarkdownIt("commonmark")
CLOSERS = ")]}\"'*_\u2019\u201d"  # what may follow a sentence's last punctuation mark: `(see 2.)`, `**Note:**`
ENDS_SENTENCE = (".", "!", "?", ":")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)[^\n]*?[^`\n]\1(?!`)")  # one line, as JupyterLab's maths masking assumes
DOLLARS = re.compile(r"\\.|\$\$|\$")  # an escaped character, then the delimiters


def ends_sentence(line: str) -> bool:
    return line.rstrip().rstrip(CLOSERS).endswith(ENDS_SENTENCE)


def starts_lowercase(text: str) -> bool:
    return bool(re.match(r"[a-z]", text))


def block_faults(source: str) -> list[tuple[int, str]]:
    """(line index in the cell, what is wrong) for each accidental list or heading."""
    tokens = MD.parse(source)
    lines = source.split("\n")
    paragraph_ends = {t.map[1] for t in tokens if t.type == "paragraph_open"}  # first line after each
    faults = []
    for i, tok in enumerate(tokens):
        line = tok.map[0] if tok.map else None
        interrupts = line in paragraph_ends  # no blank line between the paragraph above and this block
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            kind = "ordered" if tok.type == "ordered_list_open" else "bullet"
            if interrupts and not ends_sentence(lines[line - 1]):
                faults.append((line, f"{kind} list starts mid-sentence (the line above does not end one)"))
            if kind == "ordered" and int(tok.attrs.get("start", 1)) != 1:
                faults.append((line, f"ordered list starts at {tok.attrs['start']}, not 1"))
        elif tok.type == "list_item_open" and tok.markup in (".", ")"):
            inline = next(t for t in tokens[i:] if t.type in ("inline", "list_item_close"))
            if inline.type == "inline" and starts_lowercase(inline.content):
                faults.append((line, "ordered list item starts with a lowercase word"))
        elif tok.type == "heading_open":
            text = tokens[i + 1].content
            if tok.markup in ("=", "-"):
                faults.append((tok.map[1] - 1, f"a line of '{tok.markup}' makes the text above it a heading"))
            elif interrupts:
                faults.append((line, "'#' heading inside a paragraph"))
            elif starts_lowercase(text):
                faults.append((line, "'#' heading starts with a lowercase word"))
    return faults


def maths_faults(source: str) -> list[tuple[int, str]]:
    """(line index, what is wrong) when the cell's "$$" or single "$" do not pair up; the line is
    that of the delimiter left open when they are paired in order."""
    def blank(m):  # spaces for code, keeping its line breaks (and so the line numbers)
        return re.sub(r"[^\n]", " ", m.group(0))

    text = CODE_SPAN.sub(blank, FENCE.sub(blank, source))
    delimiters = [(m.group(0), text.count("\n", 0, m.start())) for m in DOLLARS.finditer(text)
                  if not m.group(0).startswith("\\")]
    faults = []
    for kind in ("$$", "$"):
        found = [line for d, line in delimiters if d == kind]
        if len(found) % 2:
            opened = None
            for d, line in delimiters:  # pair in order; inside $$...$$ a single $ is maths text
                if opened is None:
                    opened = (d, line)
                elif d == opened[0]:
                    opened = None
            line = opened[1] if opened and opened[0] == kind else found[-1]
            faults.append((line, f"{len(found)} unescaped '{kind}' in the cell: one is not closed"))
    return faults


def faults_in(path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        for line, what in sorted(block_faults(cell.source) + maths_faults(cell.source)):
            found.append(f"{path.relative_to(REPO)}, cell {cell.get('id')}, line {line + 1}: {what}:\n"
                         f"    {lines[line - 1] if line else '(first line)'}\n  > {lines[line]}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_markdown_renders_as_written(path):
    faults = faults_in(path)
    assert not faults, f"{len(faults)} markdown fault(s); rewrap these lines:\n" + "\n".join(faults)


@pytest.mark.parametrize("text, expected", [
    ("and continuous just below\n  1. The closed form divides", "mid-sentence"),
    ("the draft proposes\n- a few tokens", "mid-sentence"),
    ("Three steps follow.\n\n3. Accept the prefix", "starts at 3"),
    ("The round ends at K =\n\n1. the bonus token", "lowercase word"),
    ("Totals over the whole call\n# of rounds is one per target call", "heading inside a paragraph"),
    ("A table of\n\n# of rounds per call", "heading starts with a lowercase"),
    ("the gap between the two\n---", "line of '-'"),
    ("the sum\n===", "line of '='"),
    ("where $\\alpha$ is the rate and $c", "'$'"),
    ("$$x = 1$ and more", "'$$'"),
])
def test_each_fault_is_found(text, expected):
    faults = block_faults(text) + maths_faults(text)
    assert any(expected in what for _, what in faults), faults


@pytest.mark.parametrize("text", [
    "## 4 · Exercise\n\nReturn the tokens:\n\n* `alpha` may be a float or an array of the\n  same shape.\n"
    "* Exact at 0 and continuous just below 1.\n  The closed form divides 0 by 0.",
    "**The stats contract.** Totals, as ints:\n* `rounds`: one target call each;\n* `drafted`: proposals.",
    "Two mistakes.\n\n1. **Draft** $K$ tokens.\n2. The target verifies\n   them all.\n3. $d_i$ is kept.",
    "### Exercise: `round_cost(K, c)`\n* ints, the draft's proposals",
    "Costs \\$5 and `$HOME` is a path; $a$ and $$b$$ are maths.\n\n```bash\necho $PATH\n```",
    "Above\n\n---\n\nBelow, after a rule.",
])
def test_intended_markdown_passes(text):
    assert block_faults(text) + maths_faults(text) == []
