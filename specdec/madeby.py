"""How one of the course's models was made, and the table of factories that can make it again.

A hidden test's checker passes the course's models to the learner's function; while grading, the
checker runs in the grader's process and the learner's function in the kernel, so a model crosses
as its description (`MadeBy`: a factory's name, its plain arguments, which item of a pair) and the
kernel makes its own copy (coursekit.judge.wire). This module imports nothing of specdec: each
module that makes such models registers its factories here when it is imported (specdec.model:
`load`; specdec.toy: `toy_pair`, `text_pair`, `small_pair`; specdec.serving: `pass_time`), so the table never
imports the modules that use it (MODULES names them, for a reader that must know them all).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

MODULES = ("specdec.model", "specdec.toy", "specdec.serving")  # the modules that register factories
_FACTORIES: dict[str, Callable] = {}


def register(name: str, factory: Callable) -> Callable:
    """Add `factory` to the table under `name` (the name `MadeBy.factory` gives); returns it."""
    _FACTORIES[name] = factory
    return factory


def factories() -> dict:
    """The factories whose models can cross grading's pipe, by the name `MadeBy.factory` gives:
    those of the modules imported so far (all of MODULES once they are). Each sets `made_by` on
    what it returns; a new kind of model that a checker passes to the learner's function registers
    its factory and sets its own `made_by` (tests/test_judge.py checks that every factory's models
    cross and come back equal)."""
    return dict(_FACTORIES)


@dataclass(frozen=True)
class MadeBy:
    """How a model was made: a factory of `factories()`, its arguments (plain values) and, for a
    factory that returns a pair, which model of it (`item`)."""
    factory: str
    kwargs: tuple = ()  # sorted (name, value) pairs: hashable, so the kernel builds each model once
    item: int | None = None

    def __init__(self, factory: str, kwargs: dict | None = None, item: int | None = None):
        object.__setattr__(self, "factory", factory)
        object.__setattr__(self, "kwargs", tuple(sorted((kwargs or {}).items())))
        object.__setattr__(self, "item", item)

    def to_json(self) -> dict:
        return {"factory": self.factory, "kwargs": dict(self.kwargs), "item": self.item}

    @classmethod
    def from_json(cls, data: dict) -> "MadeBy":
        """The description, checked: a factory of the table, plain arguments, an integer item."""
        factory, kwargs, item = data["factory"], data["kwargs"], data["item"]
        if factory not in _FACTORIES:
            raise TypeError(f"no model factory {factory!r}")
        if not isinstance(kwargs, dict) or not all(
                isinstance(k, str) and (v is None or type(v) in (bool, int, float, str)) for k, v in kwargs.items()):
            raise TypeError("a model factory's arguments must be plain values")
        if not (item is None or type(item) is int):
            raise TypeError("a model's item must be an integer")
        return cls(factory, kwargs, item)

    def build(self):
        made = _FACTORIES[self.factory](**dict(self.kwargs))
        return made if self.item is None else made[self.item]
