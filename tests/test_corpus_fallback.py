"""The hostile corpus of test_corpus.py, graded under the audit-hook fallback (the grading sandbox
on a machine without bubblewrap): the same submissions and the same tests, in a module of its own
so that pytest-xdist grades it beside the bubblewrap run."""
import pytest

from coursekit import sandbox
from tests.test_corpus import *  # noqa: F401,F403 - the same tests, collected here too
from tests.test_corpus import graded_corpus


@pytest.fixture(scope="module", params=[sandbox.AUDIT], ids=["fallback"])
def corpus(request, tmp_path_factory):
    yield from graded_corpus(request.param, tmp_path_factory)
