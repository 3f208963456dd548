"""Hidden tests judged in the grader's process (coursekit.judge), the learner's function called in
the kernel over a channel (coursekit.judge.wire): the values that cross arrive unchanged, nothing
received is executed, a call through the channel gives the checker exactly what a local call
gives (so the same verdict and hint), and a kernel that answers wrongly or stops answering fails
its own check without hanging the grader. The whole path through stock nbgrader, with hostile
submissions, is in test_corpus.py; every assignment's class graded through it is in test_grading.py.

Here the "kernel" is a thread of this process serving over real named pipes.
"""
import json
import os
import threading

import numpy as np
import pytest
import torch

from coursekit import registry
from tests.support.catalogue import answers
from tests.support.tiers import heavy, heavy_in_process
from coursekit.judge import codec, frames
from coursekit.judge import wire as remote
from coursekit.judge.channel import Channel, RemoteFunction
from coursekit.judge.execute import judge
from coursekit.judge.messages import INTERRUPTED
from coursekit.judge.verdict import verdict
from specdec.model import load
from specdec.toy import toy_pair

COURSE = registry.by_number()


def _round_trip(value, models=False):
    return codec.decode(json.loads(json.dumps(codec.encode(value))), models=models)


def test_codec_keeps_every_value_and_its_type():
    values = [None, True, 3, 2.5, float("nan"), "s", (1, 2.0), [1, [2]], {"rounds": 3, 1: (True,)},
              np.arange(6.0).reshape(2, 3), np.array(0.5), np.float64(0.25), np.float32(0.5), np.int64(7),
              np.bool_(True), np.array([1, 2], dtype=np.int32), np.zeros((0, 4)),
              torch.tensor([1, 2, 3]), torch.tensor([[0.5, 1.5]], dtype=torch.float64), torch.tensor(True),
              torch.tensor([1.0], dtype=torch.float16), torch.device("cpu")]
    for value in values:
        back = _round_trip(value)
        assert type(back) is type(value), (value, back)
        if isinstance(value, (np.ndarray, np.generic)):
            assert back.dtype == value.dtype and back.shape == np.shape(value) and np.array_equal(back, value, equal_nan=True)
        elif isinstance(value, torch.Tensor):
            assert back.dtype == value.dtype and torch.equal(back, value)
        elif isinstance(value, float) and value != value:
            assert back != back
        else:
            assert back == value
    assert _round_trip(torch.tensor([1.0]).requires_grad_()).requires_grad


def test_generators_cross_with_their_state():
    rng = np.random.default_rng(5)
    rng.random(3)
    assert _round_trip(rng).random(4).tolist() == rng.random(4).tolist()
    gen = torch.Generator().manual_seed(5)
    torch.rand(3, generator=gen)
    assert torch.equal(torch.rand(4, generator=_round_trip(gen)), torch.rand(4, generator=gen))


def test_models_cross_by_how_they_were_made_and_only_towards_the_kernel():
    target, draft = toy_pair("cpu", close=True)
    ids = torch.tensor([[0, 1, 2, 3]])
    assert torch.equal(_round_trip(draft, models=True)(ids), draft(ids))
    shipped = load("draft", "cpu")
    assert torch.equal(_round_trip(shipped, models=True)(ids), shipped(ids))
    with pytest.raises(TypeError):  # the grader never builds anything the kernel describes
        _round_trip(draft)
    with pytest.raises(TypeError):
        codec.decode({"t": "model", "v": {"factory": "os.system", "kwargs": {}, "item": None}}, models=True)
    with pytest.raises(TypeError):  # a factory's arguments are plain values only
        codec.decode({"t": "model", "v": {"factory": "load", "kwargs": {"name": {"t": "nd"}}, "item": None}},
                      models=True)


def test_decoding_never_unpickles():
    import base64
    import pickle
    payload = base64.b64encode(pickle.dumps([{"a": 1}])).decode()
    for dtype in ("O", "|O", "V8", "i8,O", "U4"):  # only plain numbers cross: no objects, records, strings
        with pytest.raises(TypeError):
            codec.decode({"t": "nd", "v": [dtype, [1], payload]})
    with pytest.raises(TypeError):
        codec.encode(np.array([{"a": 1}], dtype=object))
    with pytest.raises(TypeError):
        codec.decode({"t": "pt", "v": codec._npy(np.zeros(1)), "dtype": "torch.load", "device": "cpu", "grad": False})


class Kernel:
    """A thread serving a function over a real channel, as the kernel's served cell does."""

    def __init__(self, fn):
        self.channel = Channel()
        self.thread = threading.Thread(target=self._serve, args=(fn,), daemon=True)
        self.thread.start()

    def _serve(self, fn):
        try:
            remote.serve(fn, str(self.channel.requests), str(self.channel.replies))
        except KeyboardInterrupt:  # the time limit's interrupt ends the served cell
            pass
        finally:
            self.channel.ended.set()

    def close(self):
        self.thread.join(30)
        assert not self.thread.is_alive(), "the served loop did not end"
        self.channel.close()


def remote_verdict(check, fn):
    kernel = Kernel(fn)
    try:
        return judge(check, fn.__name__, kernel.channel)
    finally:
        kernel.close()


def _cases(nb):
    """Per exercise of notebook `nb`, every checker on the reference, the first catalogued correct
    answer and the first catalogued wrong one."""
    out = []
    a = COURSE[nb]
    catalogue = answers(a)
    for exercise in a.exercises:
        fns = [getattr(a.reference(), exercise), *catalogue.CORRECT.get(exercise, [])[:1]]
        fns += [next(fn for key, items in catalogue.WRONG.items() if a.exercise_of(key) == exercise
                     for fn, _ in items)]
        out += [(nb, cell.checker, fn) for cell in a.hidden_cells(exercise) for fn in fns]
    return out


# Every notebook of the course, derived from source/: a new one is covered with no edit here. Its
# cases are in the slow tier when its checker module's contract says its checks are heavy
# (tests/support/tiers.heavy: many sampling calls); a notebook whose checks are heavy in process (04's
# run the shipped model, about 80 s of CPU an answer) is left to the tests below, which cover what only
# 04 sends (torch generators, rebuilt toy models, their records) instead.
@pytest.mark.parametrize("nb, check, fn", [
    pytest.param(*case, marks=[pytest.mark.slow] if heavy(nb) else [])
    for nb in COURSE if not heavy_in_process(nb) for case in _cases(nb)
], ids=lambda v: getattr(v, "__name__", v if isinstance(v, str) else None))
def test_a_call_through_the_channel_gets_the_local_verdict(nb, check, fn):
    """Same return values, same in-place changes, same exceptions, same generator streams: the
    checker reaches the same verdict and hint as when it calls the function itself."""
    assert remote_verdict(check, fn) == verdict(check, fn)


# 04's checks are heavy in process (its contract: a transformer pair and thousands of calls), so its channel tests are in the
# slow tier with its checker cases (tests/support/tiers.py)
@pytest.mark.slow
@pytest.mark.parametrize("check, exercise, wrong", [
    ("a04.check_autoregressive_reproducible", "autoregressive_generate", "ar_global_rng"),
    ("a04.check_speculative_reproducible", "speculative_generate", "spec_global_rng"),
])
def test_torch_generators_and_toy_models_cross_for_04(check, exercise, wrong):
    """The toy models are rebuilt in the kernel, the seeded torch.Generator goes there with its
    state: a correct answer reproduces its run, one that draws from torch's global generator
    does not (in the kernel, whose global generator the checker does not reset: it still fails)."""
    import tests.answers_04 as answers

    assert remote_verdict(check, getattr(COURSE["04"].reference(), exercise)) is None
    hint = remote_verdict(check, getattr(answers, wrong))
    assert hint is not None and "`generator` argument" in hint, hint


@pytest.mark.slow
@pytest.mark.parametrize("wrong, phrase", [
    ("cached_draft_no_rollback", "draft's cache still holds rejected drafts"),
    ("cached_refeed", "the cache is not used"),
])
def test_what_the_toy_models_were_fed_crosses_for_04(wrong, phrase):
    """The recording toy models (specdec.toy.text_pair) are rebuilt in the kernel and start every
    call with an empty record, which comes back with the call's reply: the feeding check reaches
    the verdict of a local call, for a correct loop and for mistakes only the record shows."""
    import tests.answers_04 as answers

    check = "a04.check_cached_feeding"
    assert remote_verdict(check, COURSE["04"].reference().speculative_generate_cached) is None
    hint = remote_verdict(check, getattr(answers, wrong))
    assert hint is not None and phrase in hint, hint
    assert hint == verdict(check, getattr(answers, wrong))


def test_a_batch_of_calls_is_a_loop_of_calls():
    """RemoteFunction.many (what call_many uses in the judge) returns what a loop of local calls
    does: a generator shared by the calls advances through them and ends where the loop leaves it,
    each call's in-place change reaches its own arguments, and the batch stops at the first
    exception, which keeps its type."""
    def step(x, rng, scale=1.0):
        x *= 2
        if scale < 0:
            raise ZeroDivisionError("negative scale")
        return float(rng.random()) * scale, np.int64(len(x))

    def calls(rng, scales):
        return [((np.full(2, float(i)), rng), {"scale": s}) for i, s in enumerate(scales)]

    kernel = Kernel(step)
    try:
        fn = RemoteFunction(kernel.channel, "step")
        for scales, failed_at in (([1.0, 0.5, 3.0], None), ([1.0, 2.0, -1.0, 4.0], 2)):
            local_rng, remote_rng = np.random.default_rng(7), np.random.default_rng(7)
            local_calls, remote_calls = calls(local_rng, scales), calls(remote_rng, scales)
            expected = [step(*args, **kwargs) for args, kwargs in local_calls[:failed_at]]
            values, failed = fn.many(remote_calls)
            assert values == expected and all(isinstance(n, np.int64) for _, n in values)
            changed = [args[0].tolist() for args, _ in local_calls[:failed_at]]
            assert [args[0].tolist() for args, _ in remote_calls[:len(values)]] == changed
            assert [args[0].tolist() for args, _ in remote_calls[len(values):]] == \
                   [[float(i)] * 2 for i in range(len(values), len(scales))]  # not called, or raised
            if failed_at is None:
                assert failed is None and remote_rng.random() == local_rng.random()
            else:
                index, exc = failed
                assert index == failed_at and isinstance(exc, ZeroDivisionError) and str(exc) == "negative scale"
        kernel.channel.send({"op": "done"})
    finally:
        kernel.close()


def test_equal_arrays_and_tensors_travel_once_and_each_call_gets_its_own_copy():
    """A batch sends an array or tensor once however many calls pass an equal one (a checker's
    thousands of draws on one p and q), yet each call still gets its own copy: a call that
    changes its copy in place changes only its own argument, and the others stay as sent, dtype,
    device and requires_grad included."""
    def bump(x, t, g, k):
        if k % 2:
            x += k
            t.mul_(k)
        return float(x.sum()), float(t.float().sum()), str(t.dtype), bool(g.requires_grad), str(g.dtype)

    def calls():
        x, t, g = np.arange(3.0), torch.tensor([1.0, 2.0], dtype=torch.bfloat16), torch.ones(2, requires_grad=True)
        return [((x.copy(), t.clone(), g, k), {}) for k in range(6)]

    message, _ = remote.encode_calls(calls())
    assert len(message["values"]) == 3 and all(a["t"] == "val" for a in message["calls"][5][0][:3])
    local, sent = calls(), calls()
    expected = [bump(*args) for args, _ in local]
    kernel = Kernel(bump)
    try:
        values, failed = RemoteFunction(kernel.channel, "bump").many(sent)
        kernel.channel.send({"op": "done"})
    finally:
        kernel.close()
    assert failed is None and values == expected
    for (mine, _), (theirs, _) in zip(sent, local):
        assert mine[0].tolist() == theirs[0].tolist() and mine[1].tolist() == theirs[1].tolist()
        assert mine[1].dtype == torch.bfloat16


def test_what_a_toy_model_was_fed_travels_only_when_the_check_asks():
    """The recording models' records come back only with `events` (the feeding check asks; a
    statistical check's thousands of calls do not pay for encoding them)."""
    target, draft = toy_pair(cache=True)
    fn = COURSE["04"].reference().speculative_generate_cached
    args = (target, draft, torch.tensor([0, 1]), 6, 2)
    kernel = Kernel(fn)
    try:
        remote_fn = RemoteFunction(kernel.channel, fn.__name__)
        target.reset_events()
        remote_fn.many([(args, {"temperature": 0})])
        assert target.events == []  # nothing came back: the local record is as it was
        remote_fn.many([(args, {"temperature": 0})], events=True)
        kernel.channel.send({"op": "done"})
    finally:
        kernel.close()
    fed = [{k: v for k, v in e.items() if k != "t"} for e in target.events]
    target.reset_events()
    fn(*args, temperature=0)
    assert fed and fed == [{k: v for k, v in e.items() if k != "t"} for e in target.events]


def test_a_kernel_that_stops_answering_fails_the_check_at_once():
    channel = Channel()  # nothing serves it: the cell ended (a NameError, a replaced helper)
    channel.stopped_hint = "the grader could not call `speedup`: NameError: name 'speedup' is not defined."
    threading.Timer(0.3, channel.ended.set).start()
    try:
        assert judge("a02.check_speedup", "speedup", channel) == channel.stopped_hint
    finally:
        channel.close()


def test_an_interrupted_kernel_gets_the_time_limit_hint():
    def endless(alpha, K):
        raise KeyboardInterrupt  # what the cell's time limit delivers in the kernel

    kernel = Kernel(endless)
    kernel.channel.stopped_hint = INTERRUPTED
    try:
        assert judge("a01.check_expected_tokens", "endless", kernel.channel) == INTERRUPTED
    finally:
        kernel.thread.join(30)
        kernel.channel.close()


def test_a_malformed_reply_fails_the_check():
    channel = Channel()

    def liar():
        fd = os.open(channel.requests, os.O_RDONLY)
        out = os.open(channel.replies, os.O_WRONLY)
        frames.read_frame(fd)
        frames.write_frame(out, {"ok": {"t": "model", "v": {"factory": "load", "kwargs": {"name": "target", "device": "cpu"}, "item": None}},
                                "args": [], "kwargs": {}})
        frames.read_frame(fd)  # the grader's "done"
        os.close(fd), os.close(out)

    thread = threading.Thread(target=liar, daemon=True)
    thread.start()
    try:
        hint = judge("a01.check_expected_tokens", "expected_tokens", channel)
        assert hint.startswith("the grader could not read what your function returned"), hint
    finally:
        thread.join(30)
        channel.close()


def test_the_learners_exceptions_keep_their_type():
    def broken(alpha, K):
        raise ZeroDivisionError("float division by zero")

    hint = remote_verdict("a01.check_expected_tokens_edges", broken)
    assert hint == verdict("a01.check_expected_tokens_edges", broken) and "ZeroDivisionError" in hint


def test_autograde_runs_nbgraders_pipeline_with_judged_execute():
    """grader_config.py keeps nbgrader's own autograde steps, in order, with JudgedExecute in the
    place of Execute (so an nbgrader upgrade that changes the list fails here, not silently)."""
    from nbgrader.converters.autograde import Autograde
    from traitlets.config import Config

    from coursekit.judge.execute import JudgedExecute
    from coursekit.paths import GRADER_CONFIG

    c = Config()
    exec(compile(GRADER_CONFIG.read_text(), str(GRADER_CONFIG), "exec"), {"get_config": lambda: c})
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    assert c.Autograde.autograde_preprocessors == [JudgedExecute if p.__name__ == "Execute" else p for p in default]


def test_measurement_cells_are_skipped_while_grading_and_graded_cells_never():
    """JudgedExecute does not run code cells tagged `measurement`, `demo` or `explorer` (their
    output is the note), runs them with run_measurements (nbgrader's configuration, the only
    switch), and runs a graded or solution cell whatever its tags (a learner who tags a hidden test
    cannot make it skip)."""
    import nbformat

    from coursekit.judge.execute import JudgedExecute
    from coursekit.judge.messages import SKIPPED

    ex = JudgedExecute()
    tagged = nbformat.v4.new_code_cell("slow()", metadata={"tags": ["measurement"]})
    demo = nbformat.v4.new_code_cell("fig = plot(f)\nplt.show()", metadata={"tags": ["demo"]})
    explorer = nbformat.v4.new_code_cell("explore()", metadata={"tags": ["explorer"]})
    plain = nbformat.v4.new_code_cell("x = 1")
    graded = nbformat.v4.new_code_cell("verdict()", metadata={"tags": ["measurement"], "nbgrader": {"grade": True}})
    answer = nbformat.v4.new_code_cell("def f(): ...", metadata={"tags": ["measurement"], "nbgrader": {"solution": True}})
    text = nbformat.v4.new_markdown_cell("words", metadata={"tags": ["measurement"]})
    nb = nbformat.v4.new_notebook(cells=[tagged, demo, explorer, plain, graded, answer, text])
    assert ex.skipped(nb) == {0, 1, 2}
    ex._skip = {3}
    cell, _ = ex.preprocess_cell(plain, {}, 3)
    assert [o.get("text") for o in cell.outputs] == [SKIPPED] and cell.execution_count is None
    assert JudgedExecute(run_measurements=True).skipped(nb) == set()


def _skips(*sources, tagged=(0,)):
    import nbformat

    from coursekit.judge.cells import skipped_cells

    cells = [nbformat.v4.new_code_cell(src, metadata={"tags": ["demo"]} if i in tagged else {})
             for i, src in enumerate(sources)]
    return skipped_cells(cells, ["demo", "measurement"])


@pytest.mark.parametrize("later, skipped", [
    ("print(total)", False),                        # reads the plot's variable: the plot runs
    ("def f(x):\n    return x * total", False),      # a function's global, read where it is defined
    ("y = [t * total for t in range(3)]", False),   # a comprehension's global
    ("if c:\n    total = 1\nprint(total)", False),  # bound on one branch only
    ("for total in range(3):\n    pass\nprint(total)", False),  # a loop may not run
    ("globals()['total']", False),                  # reaches every global
    ("%who", False),                                # a magic: anything
    ("%time y = total + 1", False),                 # %time runs its code in the notebook
    ("print(undefined_elsewhere)", True),
    ("total = 2\nprint(total)", True),              # bound before it is read
    ("for total in range(3):\n    print(total)", True),
    ("def f(total):\n    return total", True),      # a parameter, not the global
    ("with open('f') as total:\n    print(total)", True),
    ("%time y = 1", True),
])
def test_a_tagged_cell_runs_when_a_later_cell_may_read_what_it_binds(later, skipped):
    """skipped_cells: a `demo` cell that binds `total` is skipped only when no later cell that runs
    may read `total` before binding it (Python's own scopes, a loop or one branch not counting as
    binding, magics and globals() counting as reading everything)."""
    assert (0 in _skips("total = sum(xs)\nplt.plot([total])", later)) is skipped


def test_the_rule_is_decided_from_the_end_and_a_star_import_always_runs():
    """A skipped cell's reads keep nothing running (a demo read only by another skipped demo is
    skipped too); one that does run keeps what it reads; a star import binds unknown names."""
    assert _skips("a = 1", "b = a", tagged=(0, 1)) == {0, 1}
    assert _skips("a = 1", "b = a", "print(b)", tagged=(0, 1)) == set()
    assert _skips("a = 1", "b = a", "print(a)", tagged=(1,)) == {1}
    assert _skips("from m import *", "print(1)") == set()
