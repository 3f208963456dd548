"""What every hidden test cell calls, and the one place a checker is found by its name:

    from coursekit.judge.verdict import verdict
    hint = verdict("a05.check_ngram_propose", ngram_propose)
    assert hint is None, hint

`verdict` runs the named checker (a function of solutions/checks/aNN.py, `checker`) on the
learner's function and returns None (passed) or one sentence: the checker's hint, or what
stopped the check (coursekit.judge.messages). It is the only catch-all of the round trip:
whatever a check raises becomes a sentence, never a pass and never the checker's traceback. The
cell itself raises, so the traceback that the autograded notebook and the feedback show holds those
three lines and the hint: no checker code, no expected values, no paths.

While grading, the cell is not run in the learner's kernel at all: coursekit.judge.execute calls
`verdict` in the grader's process with a stand-in for the learner's function (channel.RemoteFunction).
"""
from __future__ import annotations

import importlib
from typing import Callable

from coursekit.judge import messages
from coursekit.judge.channel import KernelStopped

CHECKS = "solutions.checks"  # the package of the checker modules a01 ... aNN


class CheckFailure(AssertionError):
    """A failed check; its message is the hint shown to the learner. `generic`: the check's last resort
    (what is wrong, not which mistake it is). Checkers raise it through solutions.checks._common.fail."""

    def __init__(self, message: str = "", generic: bool = False):
        super().__init__(message)
        self.generic = generic


def checker(name: str) -> Callable:
    """The checker "a01.check_expected_tokens" names: solutions/checks/a01.py's check_expected_tokens."""
    module, function = name.rsplit(".", 1)
    return getattr(importlib.import_module(f"{CHECKS}.{module}"), function)


def verdict(check: str, fn) -> str | None:
    try:
        checker(check)(fn)
    except CheckFailure as failure:
        return str(failure)
    except KernelStopped as stop:  # the kernel stopped answering: why, in the learner's terms
        return stop.hint
    except KeyboardInterrupt:
        return messages.INTERRUPTED
    except SystemExit:
        return messages.EXITED
    except BaseException as exc:  # noqa: BLE001 - a checker bug must not pass, nor show the checker's code
        return messages.could_not_check(exc)
    return None
