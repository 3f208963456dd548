"""Build learner notebooks for the tests: the release with some solution cells replaced."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import nbformat



def _names(code) -> set:
    """Global names used by a code object and the comprehensions/lambdas nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _names(const)
    return names


def _helpers(fn, seen=None) -> list:
    """Module-level functions that `fn` calls (recursively), so a pasted answer is self-contained."""
    seen = seen if seen is not None else {fn.__name__}
    module = inspect.getmodule(fn)
    found = []
    for name in sorted(_names(fn.__code__)):
        helper = getattr(module, name, None)
        if inspect.isfunction(helper) and helper.__module__ == module.__name__ and name not in seen:
            seen.add(name)
            found += _helpers(helper, seen) + [helper]
    return found


def function_as(fn, name: str) -> str:
    """Source of `fn` renamed to `name`, after the helpers it calls and the imports a learner would write."""
    body = inspect.getsource(fn)
    body = re.sub(rf"\b{fn.__name__}\b", name, body)  # the def and any recursive call
    helpers = "".join(inspect.getsource(h) + "\n\n" for h in _helpers(fn))
    return "import math\nimport numpy as np\n\n" + helpers + body


def fill(release_nb: Path, answers: dict, dest: Path) -> Path:
    """Copy of `release_nb` where the solution cell `grade_id` holds answers[grade_id] (a function)."""
    nb = nbformat.read(release_nb, as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = function_as(answers[gid], gid)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest
