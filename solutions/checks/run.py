"""What every hidden test cell calls:

    from solutions.checks.run import verdict
    hint = verdict("a05.check_ngram_propose", ngram_propose)
    assert hint is None, hint

`verdict` runs the named checker on the learner's function and returns None (passed) or the
checker's one-sentence hint. The cell itself raises, so the traceback that the autograded
notebook and the feedback show holds those three lines and the hint: no checker code, no
expected values, no paths. (A checker that raised would leave its own frames in the traceback,
and IPython always shows the frame an exception was raised in.)
"""
from __future__ import annotations

import importlib

from solutions.checks._common import CheckFailure


INTERRUPTED = ("interrupted: checking this answer ran past the cell's time limit (an endless loop, or "
               "far too slow an implementation).")


def verdict(check: str, fn) -> str | None:
    module, name = check.rsplit(".", 1)
    checker = getattr(importlib.import_module(f"solutions.checks.{module}"), name)
    try:
        checker(fn)
    except CheckFailure as failure:
        return str(failure)
    except KeyboardInterrupt:
        return INTERRUPTED
    except SystemExit:
        return "your code called exit() or sys.exit(), which stops the grader's kernel; return a value instead."
    except Exception as exc:  # noqa: BLE001 - a checker bug must not show the checker's code either
        return f"the grader could not check this answer ({type(exc).__name__}); please tell the instructor."
    return None
