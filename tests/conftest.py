"""One nbgrader run for every assignment, shared by the end-to-end tests (tests/test_grading.py):
a scratch copy of the course root, each assignment generated with stock nbgrader, its class of
fake learners (derived from tests/answers_NN.py by tests/support/e2e.py:derived_class) submitted,
autograded, feedback generated and grades exported."""
from __future__ import annotations

import os

# `make test` runs modules in parallel (pytest-xdist): the workers, and the nbgrader runs they
# start, share the CPUs' threads instead of each taking one thread per CPU, and idle OpenMP
# threads sleep instead of spinning (coursekit.threads: on a busy machine, or with several
# processes at once, spinning threads wait for each other). Set before anything imports torch.
from coursekit import threads as _threads  # noqa: E402

for _name, _value in _threads.env(_threads.share(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))).items():
    os.environ.setdefault(_name, _value)

import pytest  # noqa: E402

from coursekit.paths import assignments  # noqa: E402
from tests.support.e2e import derived_class, grade_classes  # noqa: E402

CLASSES = {a: derived_class(a) for a in assignments()}


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """{assignment: {course, root, run, feedback, export, results}}, graded once per test session."""
    return grade_classes(tmp_path_factory.mktemp("course-root"), CLASSES)
