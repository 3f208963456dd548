"""Two tiers of the suite (a pytest plugin, loaded from pyproject.toml's addopts).

`make test` runs everything (CI). `make test-fast` runs `-m "not slow"` (also on up to 4 CPUs): the checkers in-process
(but those that run the model), the registry, the helpers, the model, sync, leaks, the scan page,
the workspace copy and one small end-to-end grading of notebook 01 through stock nbgrader: the
inner loop.

A test is slow when it is marked `@pytest.mark.slow` or falls under a rule here:
- its module is in SLOW_MODULES: the whole module drives real kernels, JupyterLab or a cohort
  (and no test in it is cheap without its expensive module fixture);
- it uses a fixture in SLOW_FIXTURES: grading every assignment end to end;
- it is a test_checkers.py case (parameter `nb`) of a notebook whose checks are heavy in process
  (`heavy`, read from the checker module's contract: CONTRACT in solutions/checks/aNN.py).
Everything else is fast; test_checkers.py and test_judge.py read `heavy` too (no hand-kept list of
notebooks). So that a new slow test cannot quietly make the fast tier slow, a `-m "not slow"` run
names, at the end, every test that took more than FAST_LIMIT_S seconds (setup included) and warns
when the whole run took more than FAST_TOTAL_S, both in CPU time (this process and its children):
mark the heavy tests slow or make them cheaper. It reports and never fails, because no test may
pass or fail by how long it took.

How `make test` spreads the suite over its workers (`--dist loadgroup`, with the scheduler below):
the tests of a module in GROUPS, whose tests share an expensive fixture, form one unit of work and run
on one worker, which builds the fixture once; every other test is scheduled on its own.
The groups and the slow tests go first, the most expensive first (COST: CPU seconds measured on the
2-core course machine, 2026-12-06; a rough order, not a limit), so that no worker starts the
longest job last. Every run, fast or not, writes each test's CPU seconds (setup included, with the
processes it started) to build/test-cpu.json and names the modules that used the most.
"""
from __future__ import annotations

import functools
import resource
import time

import pytest

SLOW_MODULES = {
    "test_browser",  # JupyterLab and Chromium
    "test_corpus",  # a cohort of hostile submissions graded twice (under bubblewrap)
    "test_corpus_fallback",  # the same under the audit hook alone
    "test_grading",  # every assignment graded end to end (the `graded` fixture)
    "test_sandbox",  # real grading kernels, a CPU-time limit run out
    "test_practice",  # notebook 05's proposers and timings on the shipped pair
    "test_learner_env",  # kernels in a learner environment built for the test
    "test_trees",  # notebook 06's trees decoded on the shipped pair
    "test_exchange",  # a cohort of three through nbgrader's exchange, graded twice
    "test_cluster",  # a Dask scheduler and two workers on loopback, one of them killed mid-grading
    "test_hub",  # a JupyterHub, its proxy and three learners' servers
}
SLOW_FIXTURES = {"graded", "corpus", "lab", "page"}
# module: its group (the modules whose tests share an expensive module or session fixture: `graded`, a
# corpus, the exchange's cohort, a hub, a lab and its browser, a learner environment). Session
# fixtures shared by file lock (tests/support/shared.py) would be built once anyway, but a worker that
# waits for another's is idle. By module, because pytest-xdist's scheduler sees node ids, not fixtures.
GROUPS = {"test_grading": "graded", "test_grading_one": "graded", "test_corpus": None, "test_corpus_landlock": None,
          "test_corpus_fallback": None, "test_exchange": None, "test_hub": None,
          "test_browser": None, "test_learner_env": None}
COST = {"graded": 450, "test_busy": 200, "test_corpus": 230, "test_corpus_landlock": 140, "test_exchange": 120,
        "test_cluster": 90, "test_corpus_fallback": 80, "test_gpucheck": 70, "test_browser": 60, "test_hub": 60,
        "test_learner_env": 40}
FAST_LIMIT_S = 60.0  # CPU seconds of one fast test, setup included (the small end-to-end grading takes most)
FAST_TOTAL_S = 240.0  # CPU seconds of the whole fast tier: 2 minutes of a 2-core machine


@functools.cache
def heavy(nb: str):
    """How heavy notebook `nb`'s checks are, from its checker module's contract (solutions.checks._common.Heavy):
    the heaviest of its exercises' (one slow in process before one slow only through the channel), None when
    every exercise's checks are cheap. A notebook's checker cases stay together in one tier:
    - heavy in process (like 04, which runs the shipped model): its test_checkers.py cases are slow, its
      test_judge.py channel cases are left to the channel tests written for it, and test_checkers.py's
      end-to-end one-sentence test leaves it to `agreed`;
    - heavy through the channel only (like 03 and 06: thousands of sampling calls): its channel cases are
      slow, and the end-to-end one-sentence test leaves it out too.
    Per exercise, the contracts would move the cheap exercises of 03 and 06 into the fast tier; the tiers
    keep a notebook together instead."""
    from coursekit import registry

    found = [e.heavy for e in registry.contract(nb).exercises if e.heavy]
    return next((h for h in found if h.in_process), found[0] if found else None)


def heavy_in_process(nb: str) -> bool:
    return bool(heavy(nb)) and heavy(nb).in_process


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        module = _module(item)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if module in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) \
                or (module == "test_checkers" and "nb" in params and heavy_in_process(params["nb"])):
            item.add_marker(pytest.mark.slow)
    # the expensive first (stable: otherwise in the order collected)
    items[:] = sorted(items, key=lambda item: -_cost(item))


def _module(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1] if item.module else ""


def _group(module: str) -> str | None:
    return (GROUPS[module] or module) if module in GROUPS else None


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent under -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`, grouped by GROUPS: each group one unit of work, every other test one
    (pytest-xdist's own loadgroup reads xdist_group marks through a node id suffix that pytest 9's
    node ids no longer take)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
            return _group(module) or nodeid

    return GroupScheduling(config, log)


def _cost(item) -> float:
    module = _module(item)
    group = _group(module)
    known = COST.get(group) or COST.get(module)
    return known if known else 1.0 if item.get_closest_marker("slow") else 0.0


def _fast_run(config) -> bool:
    return "not slow" in (config.getoption("markexpr", "") or "")


def _cpu(children: bool = True) -> float:
    usage = [resource.getrusage(resource.RUSAGE_SELF)] + ([resource.getrusage(resource.RUSAGE_CHILDREN)] if children else [])
    return sum(u.ru_utime + u.ru_stime for u in usage)


_spent: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = _cpu()
    yield
    _spent[item.nodeid] = _cpu() - start


_workers_cpu: list[float] = []


def pytest_sessionfinish(session):
    """Under pytest-xdist, a worker hands its per-test CPU times and its total to the controller."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["tiers"] = {"spent": _spent, "cpu": _cpu()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    out = getattr(node, "workeroutput", {}).get("tiers")
    if out:
        _spent.update(out["spent"])
        _workers_cpu.append(out["cpu"])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workeroutput"):
        return
    # the workers' own totals include their children; the controller's children are the workers
    cpu = _cpu(children=False) + sum(_workers_cpu) if _workers_cpu else _cpu()
    _record(terminalreporter, config, cpu)
    if not _fast_run(config):
        return
    heavy = {k: v for k, v in _spent.items() if v > FAST_LIMIT_S}
    if cpu > FAST_TOTAL_S:
        terminalreporter.write_line(f"the fast tier used {cpu:.0f} s CPU > {FAST_TOTAL_S:.0f} s; the heaviest tests: "
                                    + ", ".join(f"{k} ({v:.0f} s)" for k, v in sorted(_spent.items(), key=lambda kv: -kv[1])[:5]),
                                    red=True)
    for nodeid, secs in sorted(heavy.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"too slow for the fast tier ({secs:.0f} s CPU > {FAST_LIMIT_S:.0f} s): {nodeid}; "
                                    "mark it @pytest.mark.slow or make it cheaper", red=True)
    terminalreporter.write_line(f"fast tier: {time.perf_counter() - _START:.0f} s wall, {cpu:.0f} s CPU "
                                "(this process, its workers and their children)")


def _record(terminalreporter, config, cpu: float) -> None:
    """build/test-cpu.json: every test's CPU seconds; and the modules that used the most, in one line."""
    import json
    from collections import Counter
    from pathlib import Path

    if not _spent:
        return
    out = Path(config.rootpath) / "build" / "test-cpu.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(dict(sorted(_spent.items(), key=lambda kv: -kv[1])), indent=0) + "\n")
    modules = Counter()
    for nodeid, secs in _spent.items():
        modules[nodeid.split("::")[0].rsplit("/", 1)[-1]] += secs
    terminalreporter.write_line(f"CPU: {cpu:.0f} s in all; by module: " + ", ".join(
        f"{m} {s:.0f}" for m, s in modules.most_common(12)) + f" (each test's: {out.relative_to(config.rootpath)})")


_START = time.perf_counter()
