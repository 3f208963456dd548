"""The values that cross between the grader and the learner's kernel (coursekit.judge.wire).

Numbers, strings, lists, tuples, dicts, numpy arrays and scalars, torch tensors and devices, numpy
and torch random generators, and the course's models by how they were made (`specdec.madeby.MadeBy`,
rebuilt from its factory table). Both sides decode with `json` and `numpy.frombuffer` (plain numeric
dtypes only): nothing received is executed, and only the kernel's side rebuilds models. The kernel
imports this module (through wire): it holds no answer and imports nothing of `solutions`.
"""
from __future__ import annotations

import base64
import sys

import numpy as np

_MODELS: dict = {}  # the kernel's models, built once per description (MadeBy)

PLAIN_KINDS = "biufc"  # bool, integers, floats, complex: the only dtypes that cross


def _npy(array: np.ndarray) -> list:
    """[dtype, shape, base64 of the raw bytes]: cheap both ways (np.save's header costs more
    than a small array), and nothing in it is ever executed."""
    a = np.asarray(array)
    if a.dtype.kind not in PLAIN_KINDS:
        raise TypeError(f"a numpy array of dtype {a.dtype}")
    return [a.dtype.str, list(a.shape), base64.b64encode(a.tobytes(order="C")).decode("ascii")]


def _from_npy(value) -> np.ndarray:
    dtype_str, shape, text = value
    dtype = np.dtype(str(dtype_str))
    if dtype.kind not in PLAIN_KINDS or dtype.hasobject or dtype.fields:
        raise TypeError(f"an array of dtype {dtype}")
    return np.frombuffer(base64.b64decode(text), dtype=dtype).reshape(tuple(int(n) for n in shape)).copy()


def _torch():
    """torch, when this process has imported it: otherwise no value can be a tensor, and a
    kernel grading 01-03 does not pay for importing it."""
    return sys.modules.get("torch")


_PLAIN = (type(None), bool, int, float, str)


def encode(obj):
    """A JSON-ready description of obj; TypeError for anything outside the codec."""
    kind = type(obj)
    if kind in _PLAIN:  # exactly these types (a subclass, np.float64 included, goes below)
        return obj
    if kind is list or kind is tuple:  # token lists, counters: no element needs a tag
        tag = "list" if kind is list else "tuple"
        if all(type(x) in _PLAIN for x in obj):
            return {"t": tag, "v": list(obj)}
        return {"t": tag, "v": [encode(x) for x in obj]}
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
        return {"t": "nd", "v": _npy(obj)}
    torch = _torch()
    if isinstance(obj, np.random.Generator):
        return {"t": "rng", "v": obj.bit_generator.state}
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu()
        dtype = str(t.dtype)
        if t.dtype == torch.bfloat16:
            t = t.float()
        return {"t": "pt", "v": _npy(t.numpy()), "dtype": dtype, "device": str(obj.device),
                "grad": bool(obj.requires_grad)}
    if torch is not None and isinstance(obj, torch.device):
        return {"t": "device", "v": str(obj)}
    if torch is not None and isinstance(obj, torch.Generator):
        return {"t": "tgen", "v": _npy(obj.get_state().numpy()), "device": str(obj.device)}
    made = _made_by(obj)
    if made is not None:
        return {"t": "model", "v": made.to_json()}
    raise TypeError(f"a {type(obj).__name__}")


def decode(data, models: bool = False):
    """The value `encode` described. models=True (the kernel's side only) rebuilds the course's
    models from their description; the grader never accepts one."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):  # only inside a tagged container
        raise TypeError("an untagged list")
    kind, value = data["t"], data["v"]
    if kind == "tuple" or kind == "list":
        items = list(value) if all(type(x) in _PLAIN for x in value) else [decode(x, models) for x in value]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {decode(k, models): decode(v, models) for k, v in value}
    if kind == "nd":
        return _from_npy(value)
    if kind == "np":
        return _from_npy(value)[()]
    if kind in ("pt", "device", "tgen"):
        import torch
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
        return _model(value)
    raise TypeError(f"cannot decode {kind!r}")


def _made_by(obj):
    """How one of the course's models was made (specdec.madeby.MadeBy), or None for anything else.
    Only a process that has imported specdec.madeby can hold such a model."""
    madeby = sys.modules.get("specdec.madeby")
    made = getattr(obj, "made_by", None)
    return made if madeby is not None and isinstance(made, madeby.MadeBy) else None


def _model(description: dict):
    """The course's models, built in the kernel from how the checker's copy was made: a factory
    of the one table, specdec.madeby.factories (MadeBy.from_json refuses anything else). The
    modules that register factories are imported first, so that the table is whole."""
    import specdec.model  # noqa: F401 - each registers its factories (specdec.madeby.MODULES)
    import specdec.serving  # noqa: F401
    import specdec.toy  # noqa: F401
    from specdec.madeby import MadeBy

    made_by = MadeBy.from_json(description)
    if made_by not in _MODELS:
        _MODELS[made_by] = made_by.build()
    return _MODELS[made_by]


def update_in_place(local, after) -> None:
    """Make a local argument look as the function left its copy (the grader's side)."""
    torch = _torch()

    if isinstance(local, np.ndarray) and isinstance(after, np.ndarray) and after.shape == local.shape:
        np.copyto(local, after, casting="unsafe")
    elif isinstance(local, list) and isinstance(after, list):
        local[:] = after
    elif isinstance(local, dict) and isinstance(after, dict):
        local.clear()
        local.update(after)
    elif torch is not None and isinstance(local, torch.Tensor) and isinstance(after, torch.Tensor) \
            and after.shape == local.shape:
        with torch.no_grad():
            local.copy_(after.to(local.dtype))
    elif isinstance(local, np.random.Generator) and isinstance(after, np.random.Generator):
        local.bit_generator.state = after.bit_generator.state
    elif torch is not None and isinstance(local, torch.Generator) and isinstance(after, torch.Generator):
        local.set_state(after.get_state())
