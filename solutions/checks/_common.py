"""Shared machinery for the hidden-test checkers.

A checker takes the learner's function, calls it on many inputs, compares with the reference
in `solutions.reference`, and on failure raises an AssertionError whose message is one plain
sentence: what is wrong and, for the known mistakes, which mistake it is. It never puts
expected values in that sentence, because nbgrader shows it in the feedback.

Rules every checker follows:
- values are compared with tolerances, distributions with seeded statistical tests;
- learner code runs with warnings silenced (a passing cell that wrote a warning to stderr
  would score 0);
- an exception inside learner code becomes a one-sentence failure naming the call.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from scipy import stats

from coursekit.judge import messages
from coursekit.judge.verdict import CheckFailure  # what fail() raises; verdict turns it into the hint

# Seed of every random stream a checker draws, so the same submission always gets the same grade.
SEED = 20_261_129


def fail(message: str, generic: bool = False) -> None:
    __tracebackhide__ = True  # IPython hides this frame: the learner sees the hint, not our code
    raise CheckFailure(message, generic) from None


def one_sentence(*checks: Callable) -> tuple[Callable, ...]:
    """The hidden tests of one exercise, in cell order, made to agree: a check that fails says the first
    hint in cell order that names a mistake (not `generic`), or where none does the first hint, so that
    one mistake shows one sentence in the feedback (shown once) instead of its consequences next to it.
    A failing check runs the checks before it and, only when its own hint is generic, those after it,
    until the first named hint; a check that passes costs nothing more."""
    def agreeing(check):
        @functools.wraps(check)
        def wrapped(fn) -> None:
            __tracebackhide__ = True
            try:
                check(fn)
            except CheckFailure as own:
                fail(*_first_named(checks, check, own, fn))
        return wrapped

    return tuple(agreeing(check) for check in checks)


def agreed(failures) -> CheckFailure | None:
    """What every failing check of an exercise says, from each check's own failure (None where it passed),
    in cell order: the first that names a mistake, else the first. `one_sentence` finds the same one
    lazily, running no more checks than it needs."""
    failed = [f for f in failures if f is not None]
    return next((f for f in failed if not f.generic), failed[0] if failed else None)


def _first_named(checks, current, own: CheckFailure, fn) -> tuple[str, bool]:
    first = None
    for check in checks:
        if check is current:
            failure = own
        else:
            try:
                check(fn)
                continue
            except CheckFailure as other:
                failure = other
            except Exception:  # a sibling that cannot even run says nothing about this cell
                continue
        if not failure.generic:
            return str(failure), False
        first = first or failure
    return str(first), True


def call(fn: Callable, *args, name: str | None = None, on_error: dict | None = None, **kwargs):
    """Call learner code quietly; turn any exception into a hint that names the call.

    `on_error` maps exception types to a more specific hint (e.g. ZeroDivisionError at alpha = 1)."""
    __tracebackhide__ = True
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any learner error becomes a hint
        _raised(exc, fn, args, kwargs, name, on_error)


def call_many(fn: Callable, calls: list, name: str | None = None, on_error: dict | None = None,
              events: bool = False) -> list:
    """[call(fn, *args, **kwargs) for args, kwargs in calls], in one exchange when fn runs in the
    learner's kernel (coursekit.judge.channel.RemoteFunction.many), which makes a checker's thousands of
    seeded draws as fast as local calls. A generator or model passed to several calls is shared by
    them, as in the loop; give each call its own copy of an array the function might change.
    `events`: a model that records what it is fed (specdec.toy.CachedBigramModel) holds, after
    the calls, what the last call fed it, as a local call leaves it (only the checks that read
    the records ask: sending them back costs more than the calls)."""
    __tracebackhide__ = True
    many = getattr(fn, "many", None)
    if many is None:
        return [call(fn, *args, name=name, on_error=on_error, **kwargs) for args, kwargs in calls]
    values, failed = many(calls, events=True) if events else many(calls)
    if failed is not None:
        index, exc = failed
        args, kwargs = calls[index]
        _raised(exc, fn, args, kwargs, name, on_error)
    return values


def _raised(exc: BaseException, fn, args, kwargs, name, on_error) -> None:
    """The hint for an exception that learner code raised."""
    __tracebackhide__ = True
    if isinstance(exc, NotImplementedError):
        fail(messages.NOT_IMPLEMENTED)
    if not isinstance(exc, Exception):
        raise exc
    shown = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
    label = f"{name or getattr(fn, '__name__', 'your function')}({shown})"
    for kind, hint in (on_error or {}).items():
        if isinstance(exc, kind):
            fail(f"{label} raised {type(exc).__name__}: {hint}")
    fail(f"{label} raised {type(exc).__name__}: {exc}")


def _short(value) -> str:
    if isinstance(value, np.ndarray):
        return f"<array shape {value.shape}>"
    if isinstance(value, np.random.Generator):
        return "rng"
    kind = type(value)
    if kind.__module__.startswith("torch") or hasattr(value, "parameters"):  # tensors, generators, models
        shape = getattr(value, "shape", None)
        if shape is not None and hasattr(value, "tolist") and value.numel() <= 8:
            return f"tensor({value.tolist()})"
        return f"<{kind.__name__} shape {tuple(shape)}>" if shape is not None else f"<{kind.__name__}>"
    return repr(value)


def as_float_array(value, label: str) -> np.ndarray:
    __tracebackhide__ = True
    if value is None:  # np.asarray(None, dtype=float) would be nan and hide the real mistake
        fail(f"{label} returned None: does the function end with `return` and the value?")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        fail(f"{label} returned {type(value).__name__}, which is not a number or an array of numbers.")


def require_scalar(value, label: str) -> float:
    """One number for scalar inputs: a float, a numpy scalar or a 0-d array (not shape (1,))."""
    __tracebackhide__ = True
    array = as_float_array(value, label)
    if array.ndim != 0:
        fail(f"{label} must return one number for scalar inputs, not an array of shape {array.shape} "
             "(return float(x) or x.item()).")
    return float(array)


def require_ndarray(value, label: str) -> np.ndarray:
    """An array input gets a numpy array back, not a list: callers keep doing array arithmetic on it."""
    __tracebackhide__ = True
    if value is None or not isinstance(value, np.ndarray):
        as_float_array(value, label)  # None and non-numbers get their own hint
        fail(f"{label} returned a {type(value).__name__} for array input; return a numpy array "
             "(np.asarray(...) converts it), shaped by the inputs.")
    return value


def token_list(out, label: str) -> list[int]:
    """Tokens returned by a learner's function as a list of ints: a list, tuple or 1-D integer
    array of ints is fine (numpy integers too); anything else fails with a hint."""
    __tracebackhide__ = True
    if out is None:
        fail(f"{label} returned None: does the function end with `return` and the list of tokens?")
    if type(out).__module__.startswith("torch"):
        fail(f"{label} returned a torch tensor; return a list of ints.")
    items = out.tolist() if isinstance(out, np.ndarray) and out.ndim == 1 else out
    if not isinstance(items, (list, tuple)):
        fail(f"{label} must return a list of ints, not {type(out).__name__}.")
    for t in items:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            fail(f"{label} returned the token {t!r} ({type(t).__name__}); tokens are ints (int(x)), "
                 "so that they can index a vocabulary.")
    return [int(t) for t in items]


def unchanged(label: str, **pairs) -> None:
    """Fail when learner code changed an argument in place: pairs are name=(copy kept, object passed)."""
    __tracebackhide__ = True
    for name, (kept, passed) in pairs.items():
        kept_a, passed_a = np.asarray(kept), np.asarray(passed)
        same = kept_a.shape == passed_a.shape and bool(np.allclose(
            passed_a.astype(float), kept_a.astype(float), rtol=1e-12, atol=1e-15, equal_nan=True))
        if not same:
            fail(f"{label} changed its argument `{name}` in place; work on a copy (for example "
                 f"{name} = np.array({name}, dtype=float)) so that the caller's array stays as it was.")


def close(a, b, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=False)))


Mistake = tuple[str, Callable]  # (hint, wrong answer): the wrong answer takes one entry of `inputs`


def broadcasts_like_numpy(got: np.ndarray, want: np.ndarray, name: str, inputs: str, hint: str) -> None:
    """A vectorised answer called with broadcastable arrays `inputs` (described for the learner):
    the reference's shape, and the values of its scalar calls."""
    __tracebackhide__ = True
    if got.shape != want.shape:
        fail(f"{name} must broadcast its arguments like numpy: shapes {inputs} give {want.shape}, not {got.shape}.")
    if not close(got, want, rtol=1e-7, atol=1e-10):
        fail(f"{name} with array inputs disagrees with its scalar values (check {hint} inside arrays: "
             "use np.where, not if-statements).", generic=True)


def diagnose(got_values: Iterable, mistakes: Iterable[Mistake], inputs: Iterable, rtol=1e-6) -> str | None:
    """Return the hint of the first known mistake that reproduces every got value, if any.

    `mistakes` is a sequence of (hint, wrong) pairs, tried in order; several wrong answers may
    share one hint."""
    got_values = list(got_values)
    inputs = list(inputs)
    for hint, wrong in mistakes:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                expected = [wrong(*args) for args in inputs]
            except Exception:  # noqa: BLE001 - a wrong model that does not apply here
                continue
        if all(close(g, e, rtol=rtol, atol=1e-9) for g, e in zip(got_values, expected)
               if np.all(np.isfinite(np.asarray(e, dtype=float)))):
            return hint
    return None


def tokens_per_round(alpha, K):
    """(1 - alpha**(K+1)) / (1 - alpha), K+1 at alpha = 1: the closed form the mistakes are built on."""
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(all="ignore"):
        return np.where(alpha == 1.0, K + 1.0, (1 - alpha ** (K + 1)) / (1 - alpha))


# Hints that more than one notebook gives: one wording per named mistake, defined here once
# (tests/test_checkers.py fails on two hints of different modules that open with the same mistake).
HINT_EXPONENT_K = ("exponent K instead of K+1 in the expected tokens: a round has K+1 emission slots, because "
                   "after the accepted drafts the target always adds one token (the correction at the first "
                   "rejection, or the bonus token when all K are accepted).")
HINT_NO_TARGET_TOKEN = ("the +1 is missing: this counts only the accepted drafts, but every round also emits one "
                        "token from the target after them (the correction at the first rejection, or the bonus "
                        "token), so tokens per round = accepted + 1.")
HINT_NO_DISCOUNT = ("K (or K+1) tokens per round assumes every draft is accepted; use the expected tokens per "
                    "round, (1 - alpha**(K+1)) / (1 - alpha).")


def counts_match_pmf(samples: np.ndarray, values: np.ndarray, pmf: np.ndarray, alpha_level: float) -> bool:
    """Exact two-sided binomial test of every bin's count, Bonferroni-corrected over the bins.

    Under the null (samples drawn from `pmf`), each bin's count is Binomial(n, pmf[i]) and the
    probability that ANY bin's exact two-sided p-value falls below alpha_level / len(values) is
    at most alpha_level (union bound). No asymptotic approximation is involved, so the bound
    holds for small bins too. A sample value outside `values` fails outright.
    """
    samples = np.asarray(samples)
    if not np.all(np.isin(samples, values)):
        return False
    n = samples.size
    per_bin = alpha_level / len(values)
    for value, p in zip(values, pmf):
        k = int(np.sum(samples == value))
        if p <= 0.0:
            if k:
                return False
            continue
        if p >= 1.0:
            if k != n:
                return False
            continue
        if stats.binomtest(k, n, p).pvalue < per_bin:
            return False
    return True



# ---------------------------------------------------------------- the contract of a checker module

@dataclass(frozen=True)
class Heavy:
    """Why an exercise's checks are too costly for the fast test tier, and where: `in_process` when they
    are slow however they are called (they run the shipped model), else only through the channel to a
    kernel (thousands of calls, each a round trip there). tests/support/tiers.py derives the tiers from it."""
    reason: str
    in_process: bool = False


# Statistical checks (03, 06): thousands of seeded calls, cheap in process, seconds each through the channel.
SAMPLING_CALLS = Heavy("thousands of seeded sampling calls for its statistical tests: cheap in process, seconds "
                       "through the channel to a kernel")


@dataclass(frozen=True)
class Exercise:
    """One exercise as its checker module grades it: `checks`, the check_* functions its hidden-test
    cells call, in cell order (one group under the one-sentence rule, `one_sentence`), and `heavy`
    (None: cheap enough for the fast tier)."""
    name: str
    checks: tuple[str, ...]
    heavy: Heavy | None = None

    def __post_init__(self):
        if isinstance(self.checks, str):
            object.__setattr__(self, "checks", (self.checks,))


@dataclass(frozen=True)
class Contract:
    """What a checker module grades, in notebook order: `declare` builds it, and the registry
    (coursekit.registry.contract), the test tiers and coursekit.gpucheck read it. tests/test_registry.py
    holds it to the source notebook: its exercises, and each exercise's hidden tests in cell order."""
    module: str  # "a01"
    exercises: tuple[Exercise, ...]

    def __getitem__(self, name: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        raise KeyError(f"{self.module} declares no exercise {name!r}")

    def exercise_of(self, check: str) -> Exercise:
        """The exercise whose hidden tests call `check` ("check_x" or "aNN.check_x")."""
        name = check.rsplit(".", 1)[-1]
        for exercise in self.exercises:
            if name in exercise.checks:
                return exercise
        raise KeyError(f"{self.module} declares no check {name!r}")

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(check for exercise in self.exercises for check in exercise.checks)


def declare(namespace: dict, *exercises: Exercise) -> Contract:
    """A checker module's contract, its last statement: `CONTRACT = declare(globals(), Exercise(...), ...)`.

    It applies the one-sentence rule: the checks of an exercise with several hidden tests are wrapped by
    `one_sentence`, in the declared (cell) order, under their own names in the module, which is where a
    hidden test's `verdict("aNN.check_x", fn)` finds them. A name the module does not define, or that
    two exercises claim, fails at import."""
    module = str(namespace.get("__name__", "")).rsplit(".", 1)[-1]
    seen: set[str] = set()
    for exercise in exercises:
        for name in exercise.checks:
            if not (name.startswith("check_") and callable(namespace.get(name))):
                raise NameError(f"{module}: exercise {exercise.name} declares {name}, which the module does not define")
            if name in seen:
                raise ValueError(f"{module}: {name} is declared under two exercises")
            seen.add(name)
        if len(exercise.checks) > 1:
            namespace.update(zip(exercise.checks, one_sentence(*(namespace[n] for n in exercise.checks))))
    return Contract(module, tuple(exercises))
