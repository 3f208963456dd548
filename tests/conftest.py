"""One nbgrader run shared by the end-to-end tests: a scratch copy of the course root, the
assignment generated with stock nbgrader, a class of fake learners submitted, autograded,
feedback generated and grades exported. Several learners per assignment, graded in one run."""
from __future__ import annotations

from pathlib import Path

import pytest

from coursekit.nbg import ScratchCourse
from tests import answers_01 as a01
from tests.notebooks import fill

A01 = "01_acceptance_chain"

# student -> {grade_id of a solution cell -> function}; None means "the source notebook itself".
CLASS_01 = {
    "reference": None,
    "blank": {},
    "alternate": {"accepted_pmf": a01.pmf_survival, "expected_tokens": a01.expected_closed_form,
                  "simulate_tokens": a01.simulate_geometric},
    "loops": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_loop,
              "simulate_tokens": a01.simulate_loop},
    "noisy": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_noisy,
              "simulate_tokens": a01.simulate_argmin},
    "wrong_exponent": {"accepted_pmf": a01.pmf_untruncated, "expected_tokens": a01.expected_exponent_K,
                       "simulate_tokens": a01.simulate_accepted_count},
    "wrong_k_alpha": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_K_alpha,
                      "simulate_tokens": a01.simulate_untruncated},
    "wrong_accepted_only": {"accepted_pmf": a01.pmf_loop, "expected_tokens": a01.expected_accepted_only,
                            "simulate_tokens": a01.simulate_loop},
}


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course-root")
    course = ScratchCourse(root)
    release = course.generate(A01)
    release_nb = release / f"{A01}.ipynb"
    for student, answers in CLASS_01.items():
        if answers is None:
            course.submit(student, A01, root / "source" / A01 / f"{A01}.ipynb")
        else:
            course.submit(student, A01, fill(release_nb, answers, root / "tmp" / student / f"{A01}.ipynb"))
    run = course.autograde(A01)
    feedback = course.nbgrader("generate_feedback", A01, "--force", check=False)
    export = course.nbgrader("export", check=False)
    results = {r.student: r for r in course.results(A01, list(CLASS_01))}
    return dict(course=course, root=Path(root), run=run, feedback=feedback, export=export, results=results)
