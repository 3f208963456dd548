"""The wire between the grader and the learner's kernel: the values that cross, the frames they
travel in, and the kernel's loop that answers calls.

While a hidden test is judged (coursekit.judge.execute) the checker runs in the grader's process
and every call it makes to the learner's function travels to the kernel as data, over a pair of
named pipes (coursekit.judge.channel is the grader's end), and its result travels back. This
module is the only part of the course's grading that the kernel imports: it holds no answer, no
checker and no expected value, and imports nothing of `solutions`.

- The codec: numbers, strings, lists, tuples, dicts, numpy arrays and scalars, torch tensors and
  devices, numpy and torch random generators, and the course's models by how they were made
  (`specdec.madeby.MadeBy`, rebuilt from its factory table; coursekit.judge.codec). Both sides
  decode with `json` and `numpy.frombuffer` (plain numeric dtypes only): nothing received is
  executed, and only the kernel's side rebuilds models.
- One framing for both ends: an 8-byte little-endian length, then that many bytes of JSON, at
  most MAX_FRAME (`frame`, `frame_size`; coursekit.judge.frames).
- Calls travel in batches (a single call is a batch of one): a batch names each generator or model
  once and its calls share it, as a loop of local calls would. Each call's reply carries the
  return value and the arguments the function changed (so the checker sees in-place changes as
  with a local call), or the exception's type name and message; the batch's reply ends with the
  shared generators as the calls left them.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from coursekit.judge.codec import _PLAIN, PLAIN_KINDS, _made_by, _torch, decode, encode
from coursekit.judge.frames import read_frame, write_frame


# ---------------------------------------------------------------- the kernel's loop

def _encode_or_none(obj):
    """An argument as the function left it, for the kinds a function can change in place."""
    torch = _torch()
    kinds = (np.ndarray, list, dict, np.random.Generator) + ((torch.Tensor, torch.Generator) if torch else ())
    if not isinstance(obj, kinds):
        return None
    try:
        return encode(obj)
    except TypeError:
        return None


def _shareable(obj) -> bool:
    """Objects a batch of calls shares, as a loop of local calls would: random generators (each
    call advances them) and the course's models."""
    torch = _torch()
    kinds = (np.random.Generator,) + ((torch.Generator,) if torch else ())
    return isinstance(obj, kinds) or _made_by(obj) is not None


def _content(obj):
    """A key equal for two arrays or tensors exactly when `encode` describes them alike (a batch
    sends each such value once), or None for every other kind."""
    if type(obj) is np.ndarray:
        return ("nd", obj.dtype.str, obj.shape, obj.tobytes()) if obj.dtype.kind in PLAIN_KINDS else None
    torch = _torch()
    if torch is not None and type(obj) is torch.Tensor:
        t = obj.detach().cpu()
        t = t.float() if t.dtype == torch.bfloat16 else t
        return ("pt", str(obj.dtype), str(obj.device), bool(obj.requires_grad), tuple(t.shape), t.numpy().tobytes())
    return None


def encode_calls(calls, events: bool = False) -> tuple[dict, list]:
    """A batch of calls [(args, kwargs), ...] as one message. A generator or model passed to
    several calls is sent once and shared by them in the kernel. Every other argument is the
    call's own: an array or tensor equal to one already in the batch is sent once ("values") and
    each call gets its own copy of it, everything else is encoded with the call. With `events`,
    each call's reply also carries what the shared models that record their inputs were fed.
    Returns the message and the shared objects, in the order it names them."""
    shared, index, values, seen = [], {}, [], {}
    by_id = {}  # id -> its reference, for the objects passed to several calls (alive until we return)

    def arg(value):
        kind = type(value)
        if kind in _PLAIN or kind is list or kind is tuple:  # never shared, never in "values"
            return encode(value)
        ref = by_id.get(id(value))
        if ref is not None:
            return ref
        if _shareable(value):
            index[id(value)] = len(shared)
            shared.append(value)
            ref = {"t": "ref", "v": index[id(value)]}
        else:
            key = _content(value)
            if key is None:
                return encode(value)
            if key not in seen:
                seen[key] = len(values)
                values.append(encode(value))
            ref = {"t": "val", "v": seen[key]}
        by_id[id(value)] = ref
        return ref

    body = [[[arg(a) for a in args], {k: arg(v) for k, v in kwargs.items()}] for args, kwargs in calls]
    return {"op": "many", "shared": [encode(v) for v in shared], "values": values, "calls": body,
            "events": bool(events)}, shared


class _Value:
    """One of a batch's "values" in the kernel: decoded once; each call gets a fresh copy, and
    whether the call changed its copy is a comparison of content keys (`_content`), not a new
    encoding."""

    def __init__(self, data):
        self.data, self.value = data, decode(data, models=True)
        self.key = _content(self.value)

    def fresh(self):
        if isinstance(self.value, np.ndarray):
            return self.value.copy()
        copy = self.value.detach().clone()
        return copy.requires_grad_(True) if self.value.requires_grad else copy

    def changed(self, value):
        """The copy as the call left it (encoded), or None when it is as it was sent."""
        try:
            if _content(value) == self.key:
                return None
        except (AttributeError, RuntimeError, TypeError):
            pass
        now = _encode_or_none(value)
        return None if now is None or now == self.data else now


def _call(fn, args, kwargs, sent_args, sent_kwargs, values) -> dict:
    """One call's reply: its value (or exception), and each argument the call changed ("args",
    "kwargs"; absent when it changed none). Warnings
    are ignored (`_many` sets the filter once for the batch)."""
    try:
        result = fn(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the checker decides what the error means
        return {"error": [type(exc).__name__, str(exc)[:2000]]}
    try:
        reply = {"ok": encode(result)}
    except TypeError:  # the checker says what it expected instead
        reply = {"opaque": type(result).__name__}

    def after(value, sent):
        if not isinstance(sent, dict):  # None, a bool, number or string: nothing to change
            return None
        tag = sent.get("t")
        if tag == "ref":  # shared: reported once, after the batch
            return None
        if tag == "val":
            return values[int(sent["v"])].changed(value)
        now = _encode_or_none(value)
        return None if now is None or now == sent else now

    # what the call changed in place, left out when it changed nothing (most calls)
    changed = [after(a, sent) for a, sent in zip(args, sent_args)]
    if any(c is not None for c in changed):
        reply["args"] = changed
    changed_kw = {k: after(v, sent_kwargs[k]) for k, v in kwargs.items()}
    if any(c is not None for c in changed_kw.values()):
        reply["kwargs"] = changed_kw
    return reply


def _recording(obj) -> bool:
    """A model that writes down what it was fed (specdec.toy.CachedBigramModel)."""
    return callable(getattr(obj, "reset_events", None)) and isinstance(getattr(obj, "events", None), list)


def _many(fn, message: dict) -> dict:
    """A batch of calls in order, stopping after the first that raises; then the shared
    generators as the calls left them. A shared model that records what it is fed starts each
    call with an empty record; when the message asks for them ("events": true), the call's reply
    carries the records ("events": [[index, record]]). Only the checks that judge how a model was
    fed read them, and encoding them for every call of a statistical check cost more than the
    calls."""
    shared = [decode(v, models=True) for v in message["shared"]]
    values = [_Value(data) for data in message.get("values", [])]

    def arg(data):
        tag = data.get("t") if isinstance(data, dict) else None
        if tag == "ref":
            return shared[int(data["v"])]
        if tag == "val":
            return values[int(data["v"])].fresh()
        return decode(data, models=True)

    replies = []
    recorders = [(i, v) for i, v in enumerate(shared) if _recording(v)]
    with warnings.catch_warnings():  # the kernel's own filters come back after the batch
        warnings.resetwarnings()
        warnings.simplefilter("ignore")
        ignore = list(warnings.filters)
        for sent_args, sent_kwargs in message["calls"]:
            if warnings.filters != ignore:  # the previous call changed them: every call starts alike
                warnings.resetwarnings()
                warnings.simplefilter("ignore")
            args = [arg(a) for a in sent_args]
            kwargs = {k: arg(v) for k, v in sent_kwargs.items()}
            for _, model in recorders:
                model.reset_events()
            replies.append(_call(fn, args, kwargs, sent_args, sent_kwargs, values))
            if recorders and message.get("events"):
                try:
                    replies[-1]["events"] = [[i, encode(model.events)] for i, model in recorders]
                except TypeError:  # a record the learner's code replaced: the checker says so
                    replies[-1]["events"] = [[i, None] for i, _ in recorders]
            if "error" in replies[-1]:
                break
    return {"many": replies, "shared": [_encode_or_none(v) if _made_by(v) is None else None for v in shared]}


def serve(fn, requests: str, replies: str) -> None:
    """Answer the checker's calls of `fn` until it says it is done (the grader calls this).
    What the kernel holds already is frozen out of the garbage collector meanwhile: a batch
    of thousands of calls allocates enough to set off full collections, and each one would walk
    torch's and the notebook's objects again (gc.freeze; they rejoin it when the cell ends)."""
    import gc

    rfd = os.open(requests, os.O_RDONLY)
    wfd = os.open(replies, os.O_WRONLY)
    gc.freeze()
    try:
        while True:
            message = read_frame(rfd)
            if message["op"] == "done":
                return
            write_frame(wfd, _many(fn, message))  # a single call is a batch of one
    finally:
        gc.unfreeze()
        os.close(rfd)
        os.close(wfd)
