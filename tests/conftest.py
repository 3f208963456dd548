"""One nbgrader run for every assignment, shared by the end-to-end tests (tests/test_grading.py):
a scratch copy of the course root, each assignment generated with stock nbgrader, its class of
fake learners (derived from tests/answers_NN.py by tests/e2e.py:derived_class) submitted,
autograded, feedback generated and grades exported."""
from __future__ import annotations

import os

# `make test` runs modules in parallel (pytest-xdist): the workers, and the kernels and nbgrader
# runs they start, share the CPUs' threads instead of each taking one thread per CPU, which
# oversubscribes the machine (torch's and OpenMP's threads then wait for each other). Set before
# anything imports torch.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, _threads)

import pytest  # noqa: E402

from coursekit.paths import assignments  # noqa: E402
from tests.e2e import derived_class, grade_classes  # noqa: E402

CLASSES = {a: derived_class(a) for a in assignments()}


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """{assignment: {course, root, run, feedback, export, results}}, graded once per test session."""
    return grade_classes(tmp_path_factory.mktemp("course-root"), CLASSES)
