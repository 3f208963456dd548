"""The kernel's side of grading: a learner's function, called by a checker that runs elsewhere.

While `nbgrader autograde` grades a notebook, the checkers and the reference solutions never run
in the learner's kernel (coursekit/judge.py): for each hidden test cell the grader's process runs
the checker, and every call the checker makes to the learner's function travels here as data,
over a pair of named pipes, and its result travels back. So nothing the learner's code can rebind
or read in the kernel takes part in the judgement; a kernel that answers wrongly, or not at all,
only fails its own check.

This module holds no answer and no expected value: a codec for the values that cross (numbers,
strings, lists, tuples, dicts, numpy arrays and scalars, torch tensors and devices, numpy and torch
random generators, and the course's models by how they were made) and the loop that serves calls.
Both sides decode with `json` and `numpy.load(allow_pickle=False)`: nothing received is executed.

A call's reply carries the return value, the arguments as the function left them (so the checker
sees in-place changes, and generators advanced, as with a local call), or the exception's type
name and message.
"""
from __future__ import annotations

import base64
import io
import json
import os
import struct
import warnings

import numpy as np

MAX_FRAME = 1 << 29  # 512 MiB: a reply larger than this is refused, not read
_MODELS: dict = {}  # the kernel's models, built once per description


# ---------------------------------------------------------------- codec

def _npy(array: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array, order="C"), allow_pickle=False)  # (ascontiguousarray would make 0-d arrays 1-d)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _from_npy(text: str) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def encode(obj):
    """A JSON-ready description of obj; TypeError for anything outside the codec."""
    import torch

    if isinstance(obj, np.generic):  # before float: np.float64 is a float
        return {"t": "np", "v": _npy(np.asarray(obj))}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, tuple):
        return {"t": "tuple", "v": [encode(x) for x in obj]}
    if isinstance(obj, list):
        return {"t": "list", "v": [encode(x) for x in obj]}
    if isinstance(obj, dict):
        return {"t": "dict", "v": [[encode(k), encode(v)] for k, v in obj.items()]}
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("a numpy array of Python objects")
        return {"t": "nd", "v": _npy(obj)}
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu()
        dtype = str(t.dtype)
        if t.dtype == torch.bfloat16:
            t = t.float()
        return {"t": "pt", "v": _npy(t.numpy()), "dtype": dtype, "device": str(obj.device),
                "grad": bool(obj.requires_grad)}
    if isinstance(obj, torch.device):
        return {"t": "device", "v": str(obj)}
    if isinstance(obj, np.random.Generator):
        return {"t": "rng", "v": obj.bit_generator.state}
    if isinstance(obj, torch.Generator):
        return {"t": "tgen", "v": _npy(obj.get_state().numpy()), "device": str(obj.device)}
    made = getattr(obj, "made_by", None)
    if isinstance(made, tuple):
        return {"t": "model", "v": list(made)}
    raise TypeError(f"a {type(obj).__name__}")


def decode(data, models: bool = False):
    """The value `encode` described. models=True (the kernel's side only) rebuilds the course's
    models from their description; the grader never accepts one."""
    import torch

    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):  # only inside a tagged container
        raise TypeError("an untagged list")
    kind, value = data["t"], data["v"]
    if kind == "tuple":
        return tuple(decode(x, models) for x in value)
    if kind == "list":
        return [decode(x, models) for x in value]
    if kind == "dict":
        return {decode(k, models): decode(v, models) for k, v in value}
    if kind == "nd":
        return _from_npy(value)
    if kind == "np":
        return _from_npy(value)[()]
    if kind == "pt":
        dtype = getattr(torch, data["dtype"].removeprefix("torch."))
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"no torch dtype {data['dtype']}")
        t = torch.from_numpy(_from_npy(value).copy()).to(dtype)
        if models:  # the kernel's side: on the device the checker chose
            t = t.to(data["device"])
        return t.requires_grad_(data["grad"]) if data["grad"] and t.is_floating_point() else t
    if kind == "device":
        return torch.device(value)
    if kind == "rng":
        rng = np.random.default_rng()
        rng.bit_generator.state = value
        return rng
    if kind == "tgen":
        gen = torch.Generator(device=data["device"] if models else "cpu")
        gen.set_state(torch.from_numpy(_from_npy(value).copy()))
        return gen
    if kind == "model" and models:
        return _model(tuple(value))
    raise TypeError(f"cannot decode {kind!r}")


def _model(made_by: tuple):
    """The course's models, built in the kernel from how the checker's copy was made."""
    if made_by not in _MODELS:
        from specdec.model import load
        from specdec.toy import toy_pair

        name, *args = made_by
        if name == "load":
            _MODELS[made_by] = load(args[0], args[1])
        elif name == "toy_pair":
            _MODELS[made_by] = toy_pair(args[0], close=args[1])[args[2]]
        else:
            raise TypeError(f"no model {name!r}")
    return _MODELS[made_by]


def update_in_place(local, after) -> None:
    """Make a local argument look as the function left its copy (the grader's side)."""
    import torch

    if isinstance(local, np.ndarray) and isinstance(after, np.ndarray) and after.shape == local.shape:
        np.copyto(local, after, casting="unsafe")
    elif isinstance(local, list) and isinstance(after, list):
        local[:] = after
    elif isinstance(local, dict) and isinstance(after, dict):
        local.clear()
        local.update(after)
    elif isinstance(local, torch.Tensor) and isinstance(after, torch.Tensor) and after.shape == local.shape:
        with torch.no_grad():
            local.copy_(after.to(local.dtype))
    elif isinstance(local, np.random.Generator) and isinstance(after, np.random.Generator):
        local.bit_generator.state = after.bit_generator.state
    elif isinstance(local, torch.Generator) and isinstance(after, torch.Generator):
        local.set_state(after.get_state())


# ---------------------------------------------------------------- frames

def frame(message: dict) -> bytes:
    payload = json.dumps(message).encode()
    return struct.pack("<Q", len(payload)) + payload


def unframe(payload: bytes) -> dict:
    return json.loads(payload)


def write_frame(fd: int, message: dict) -> None:
    view = memoryview(frame(message))
    while view:
        view = view[os.write(fd, view):]


def read_exactly(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict:
    (size,) = struct.unpack("<Q", read_exactly(fd, 8))
    if size > MAX_FRAME:
        raise ValueError("a frame larger than the channel allows")
    return unframe(read_exactly(fd, size))


# ---------------------------------------------------------------- the kernel's loop

def _encode_or_none(obj):
    """An argument as the function left it, for the kinds a function can change in place."""
    import torch

    if not isinstance(obj, (np.ndarray, list, dict, torch.Tensor, np.random.Generator, torch.Generator)):
        return None
    try:
        return encode(obj)
    except TypeError:
        return None


def serve(fn, requests: str, replies: str) -> None:
    """Answer the checker's calls of `fn` until it says it is done (the grader calls this)."""
    rfd = os.open(requests, os.O_RDONLY)
    wfd = os.open(replies, os.O_WRONLY)
    try:
        while True:
            message = read_frame(rfd)
            if message["op"] == "done":
                return
            args = [decode(a, models=True) for a in message["args"]]
            kwargs = {k: decode(v, models=True) for k, v in message["kwargs"].items()}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = fn(*args, **kwargs)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - the checker decides what the error means
                write_frame(wfd, {"error": [type(exc).__name__, str(exc)[:2000]]})
                continue
            try:
                reply = {"ok": encode(result)}
            except TypeError:  # the checker says what it expected instead
                reply = {"opaque": type(result).__name__}
            reply["args"] = [_encode_or_none(a) for a in args]
            reply["kwargs"] = {k: _encode_or_none(v) for k, v in kwargs.items()}
            write_frame(wfd, reply)
    finally:
        os.close(rfd)
        os.close(wfd)
