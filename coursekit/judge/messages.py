"""Every sentence grading says to a learner about their code, in one place.

The checkers' own hints (which mistake an answer makes) live with the checkers in
solutions/checks/; the sentences here are the ones grading itself says: an exercise not done yet,
an answer that could not be checked, a kernel that stopped answering, a cell that ran too long,
a cell that grading leaves out, a notebook that could not be graded. The judge
(coursekit.judge), the checkers' shared helpers (solutions/checks/_common.py) and the reader of
nbgrader's results (coursekit.grading.results) all take them from here.
"""
from __future__ import annotations

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError()` with your code."
INTERRUPTED = ("interrupted: checking this answer ran past the cell's time limit (an endless loop, or "
               "far too slow an implementation).")
EXITED = "your code called exit() or sys.exit(), which stops the grader's kernel; return a value instead."
LOST_CONTACT = "the grader lost contact with your code while checking it."
HELPER_REPLACED = ("the grader lost contact with your code while checking it (did a cell replace the grader's "
                   "helper, coursekit.judge.wire?).")
TOO_MUCH_DATA = "your function returned more data than the grader accepts."
SKIPPED = ("not run while grading: this cell measures (timings, fits, comparisons on the shipped models), shows "
           "your results (a plot or a table) or is an interactive explorer, and no grade depends on it; run it "
           "in your own notebook to see its output.\n")


def could_not_check(exc: BaseException | None = None) -> str:
    """An answer the grader could not judge (a checker's own failure): never a pass, never a hang."""
    why = f" ({type(exc).__name__})" if exc is not None else ""
    return f"the grader could not check this answer{why}; please tell the instructor."


def unreadable_reply(exc: BaseException) -> str:
    return f"the grader could not read what your function returned ({type(exc).__name__})."


def could_not_call(fn_name: str, ename: str, evalue: str) -> str:
    """The kernel's cell failed before it could answer (fn undefined: a NameError, ...)."""
    return f"the grader could not call `{fn_name}`: {ename}: {evalue}".rstrip(": ") + "."


def cpu_limit(seconds: float) -> str:
    return (f"this cell used more than {seconds:g} s of CPU time (the time limit of a cell "
            "while grading) and was interrupted: an endless loop, or far too slow an implementation.")


# What the reader of an autograded notebook (coursekit.grading.results) says about a cell's exception that is
# not a failing test, and about a notebook that nbgrader gave up on.
ERRORS = {
    "CellTimeoutError": "a cell ran past the time limit and was interrupted",
    "KeyboardInterrupt": None,  # the interrupt that follows a timeout: already said
    "MemoryError": "MemoryError in a cell (the sandbox's memory limit)",
    "PermissionError": "PermissionError in a cell (refused by the grading sandbox)",
    "StdinNotImplementedError": "input() in a cell: there is no keyboard while grading",
    "SystemExit": "exit() or sys.exit() in a cell",
    "NameError": None,  # the usual consequence of an earlier failing cell
    "AssertionError": None,  # a failing test: its hint is shown with the test
    "CheckFailure": None,
    "NotImplementedError": None,  # an exercise not done yet: said with its tests
}
DEAD = "the kernel died (e.g. os._exit, a crash, or a limit): the notebook could not be graded"
FAILURES = [  # text in nbgrader's output when autograde gave up on a notebook -> what to say
    ("Kernel died", DEAD),
    ("DeadKernelError", DEAD),
    ("uplicate", "a graded cell appears twice (duplicated cell): nbgrader refuses the notebook"),
    ("CellTimeoutError", "the kernel stopped answering (it died, e.g. os._exit, or hung): the notebook could not be graded"),
]
