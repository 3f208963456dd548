"""The preflight of a submission, before nbgrader runs it: the notebook is there under its
expected name and parses as a notebook; its code is scanned for integrity flags (reaching for the
reference solutions, the checkers or the gradebook; network; processes; exiting the kernel;
input()). A flag asks a human to look; the sandbox (coursekit.judge.sandbox) is what stops the
behaviour at run time, and what it refused is read with the results (coursekit.grading.results)."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from coursekit.grading.results import notebooks

# (flag, pattern over the submission's code). A flag is a reason for a human to look, not a verdict.
INTEGRITY = [
    ("reaches for the reference solutions or checkers",
     re.compile(r"\bsolutions\b|checks\.a0|sys\.modules|__import__|importlib|\bverdict\b")),
    # rebinding a library's or the course helpers' attribute (torch.multinomial = ..., coursekit.judge.wire.serve = ...):
    # the learner's function runs among them in the kernel, so such a patch can change what it returns
    ("patches the course's helpers or libraries",
     re.compile(r"\b(specdec|coursekit|torch|np|numpy|scipy|math|random)(\.\w+)+\s*=(?!=)|setattr\(\s*(specdec|coursekit|torch|np|numpy)\b")),
    ("touches the gradebook", re.compile(r"gradebook")),
    ("opens a network connection", re.compile(r"\bsocket\b|urllib|http\.client|\bimport requests\b|\bfrom requests\b"
                                              r"|\brequests\.(get|post|put|patch|delete|head|request|Session)\b|httpx|ftplib|smtplib")),
    ("starts processes", re.compile(r"subprocess|os\.fork|os\.system|os\.spawn|os\.exec|os\.posix_spawn|multiprocessing|\bpty\b")),
    ("exits the kernel", re.compile(r"\bsys\.exit\b|\bos\._exit\b|(?<![\w.])(exit|quit)\(")),
    ("waits for keyboard input", re.compile(r"(?<![\w.])input\(")),
    ("reads or writes files by absolute or parent path", re.compile(r"""open\(\s*(f?["'](/|\.\.)|[^)]*\.\.)""")),
    ("calls native code directly", re.compile(r"\bctypes\b|\bcffi\b")),
]
def scan(nb: nbformat.NotebookNode, given: set[str] | frozenset = frozenset()) -> list[str]:
    """Integrity flags from the code of the code cells, leaving out a cell that is exactly one of
    the course's own (`given`: its text must not flag every learner, as 07's "requests per second")."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and c.source.strip() not in given)
    return [flag for flag, pattern in INTEGRITY if pattern.search(code)]


def given_code(source_nb: Path) -> frozenset:
    """The code cells a learner receives as they are (neither solution nor graded cells) of a source
    notebook: what `scan` leaves out when a submission holds them unchanged."""
    try:
        nb = nbformat.read(source_nb, as_version=4)
    except (OSError, ValueError):
        return frozenset()
    return frozenset(c.source.strip() for c in nb.cells if c.cell_type == "code" and not (
        c.metadata.get("nbgrader", {}).get("solution") or c.metadata.get("nbgrader", {}).get("grade")))


def preflight(folder: Path, notebook: str, given: frozenset = frozenset()) -> tuple[list[str], list[str]]:
    """(problems, integrity flags) of the notebook `notebook`.ipynb in a submission folder (`given`: scan's)."""
    expected = Path(folder) / f"{notebook}.ipynb"
    if not expected.exists():
        others = sorted(p.name for p in Path(folder).glob("*.ipynb"))
        return [f"no {expected.name} (found: {', '.join(others) or 'no notebook'})"], []
    if expected.stat().st_size == 0:
        return ["empty file"], []
    try:
        nb = nbformat.read(expected, as_version=4)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never fatal
        return [f"not a readable notebook ({type(exc).__name__})"], []
    return [], scan(nb, given)


def preflights(root: Path, assignment: str, student: str) -> dict[str, tuple[list[str], list[str]]]:
    """`preflight` of each of the assignment's notebooks in root/submitted/<student>/<assignment>/."""
    folder = Path(root) / "submitted" / student / assignment
    source = Path(root) / "source" / assignment
    return {nb: preflight(folder, nb, given_code(source / f"{nb}.ipynb")) for nb in notebooks(root, assignment)}
