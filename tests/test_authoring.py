"""coursekit.authoring, on the draft that CONTRIBUTING.md's "Adding a notebook" shows: the
notebook it makes is one the registry accepts, with every role, tag and point where the guide
says; and a draft that breaks a rule is refused with the cell named."""
from __future__ import annotations

import ast
import re
import textwrap

import nbformat
import pytest

from coursekit import registry
from coursekit.authoring import draft_to_notebook
from coursekit.paths import REPO

GUIDE = (REPO / "CONTRIBUTING.md").read_text()


def _guide_blocks():
    """The guide's python blocks, in order: the draft of notebook 99 first, then its checker."""
    return [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)```", GUIDE, flags=re.S)]


def _draft() -> str:
    after = GUIDE.split("<!-- draft 99 -->", 1)[1]
    return textwrap.dedent(re.search(r"```python\n(.*?)```", after, flags=re.S).group(1))


def test_the_guides_draft_makes_a_notebook_the_registry_accepts(tmp_path):
    nb = draft_to_notebook(_draft())
    path = tmp_path / "99_round_speedup.ipynb"
    nbformat.write(nb, path)
    a = registry.parse("99_round_speedup", [path])
    assert a.exercises == ("round_speedup",)
    assert [(c.grade_id, c.checker, c.points) for c in a.hidden] == [
        ("test_round_speedup__reference", "a99.check_round_speedup", 2.0)]
    assert [c.grade_id for c in a.visible] == ["test_round_speedup__literals"] and a.max_score == 2
    code = [c for c in nb.cells if c.cell_type == "code"]
    setup = code[0].metadata["nbgrader"]
    assert setup["grade_id"] == "setup" and setup["locked"] and not setup["grade"]
    assert code[-1].metadata.get("tags") == ["measurement"] and "nbgrader" not in code[-1].metadata
    assert all(c.metadata.get("nbgrader", {}).get("points") is None for c in code if c is not code[3])
    # make sync builds the scan page from this section: it stops when a notebook has none
    from coursekit.scanlist import scan_section

    assert scan_section(nb).startswith("* A round costs")


def test_the_guides_checker_is_python():
    checker = next(b for b in _guide_blocks() if "def check_round_speedup" in b)
    names = {n.name for n in ast.parse(checker).body if isinstance(n, ast.FunctionDef)}
    assert names == {"check_round_speedup"}


BAD = [
    ('# %% role="visible" grade_id="test_f__x" points=1\nassert f() == 1\n', "only hidden tests carry points"),
    ('# %% role="hidden" grade_id="test_f__x" points=1\nassert f() == 1\n', "verdict"),
    ('# %% role="hidden" grade_id="test_f__x"\n### BEGIN HIDDEN TESTS\nhint = verdict("a99.check_f", f)\n'
     '### END HIDDEN TESTS\n', "carries points"),
    ('# %% role="solution" grade_id="g"\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n',
     "the function it defines"),
    ('# %% role="solution" grade_id="f"\ndef f():\n    return 1\n', "BEGIN SOLUTION"),
    ('# %% role="visible" grade_id="f_literals"\nassert f() == 1\n', "test_<exercise>__<what>"),
    ('# %% nbgrader="tests" grade_id="test_f__x"\nassert f() == 1\n', 'role="..."'),
    ('# %% tags=["slow"]\nx = 1\n', "unknown tag"),
]


@pytest.mark.parametrize("draft, phrase", BAD, ids=[p for _, p in BAD])
def test_a_draft_that_breaks_a_rule_is_refused_with_the_cell_named(draft, phrase):
    with pytest.raises(ValueError) as err:
        draft_to_notebook(draft)
    assert phrase in str(err.value) and "cell 0" in str(err.value), str(err.value)


def test_the_guides_checker_grades_the_guides_catalogue():
    """The guide's checker, reference (the draft's solution cell) and catalogue, run together in
    process: the correct answer passes, the named mistake fails with its phrase, in one sentence."""
    import types

    from coursekit.judge.verdict import CheckFailure
    from coursekit.reference import strip_markers

    nb = draft_to_notebook(_draft())
    solution = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    ref = types.ModuleType("a99_round_speedup")
    exec("import numpy as np\n" + strip_markers(solution), ref.__dict__)
    checker_src = next(b for b in _guide_blocks() if "def check_round_speedup" in b)
    checker_src = checker_src.replace("from solutions.reference import a99_round_speedup as ref\n", "")
    checks = {"ref": ref}
    exec(checker_src, checks)
    catalogue = {}
    exec(next(b for b in _guide_blocks() if "CORRECT = " in b), catalogue)
    for fn in catalogue["CORRECT"]["round_speedup"]:
        checks["check_round_speedup"](fn)
    for fn, phrase in catalogue["WRONG"]["round_speedup"]:
        with pytest.raises(CheckFailure) as failure:
            checks["check_round_speedup"](fn)
        assert phrase in str(failure.value) and "\n" not in str(failure.value)
