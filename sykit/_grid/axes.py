"""A grid's named axes, the functions bound to them, and the cells they span.

An axis is a name and its values: a list of plain values (numbers, strings, booleans), which are
also what the frames' axis column holds, or a dict ``label → object`` (a fault profile, a host
setting), whose labels go to the column and whose objects go to the functions. A function takes
part in an axis by naming it as a parameter, as pytest fixtures are bound: a strategy factory
``lambda threshold: …``, a host factory ``lambda faults: …``. A strategy's cells span the axes its
own factory and the shared functions (host, concurrency, arrivals) name, times the seeds; an axis
a strategy does not use is not multiplied for it (its column is empty in that strategy's rows).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import keyword
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._results.metrics import SUMMARY_COLUMNS
from sykit._run.inputs import as_algorithm
from sykit._run.records import ATTEMPT_COLUMNS, REQUEST_COLUMNS

__all__ = ["Axis", "Binding", "Cell", "StrategyEntry", "cells_of", "check_axes", "check_strategies"]

#: Column names an axis cannot take: the frames' own, and the grid's.
RESERVED = frozenset(
    {*ATTEMPT_COLUMNS, *REQUEST_COLUMNS, "seed", "cell", "session_id", "turn", "parent_session"}
)

#: Columns of ``Grid.cells`` and ``Grid.summary()`` that an axis column would stand beside: an
#: axis of one of these names would overwrite the cell's status or make the summary unreadable.
GRID_COLUMNS = frozenset(
    {"status", "resumed", "wall_s", "engine", "requests", "attempts", "error", "notes"}
    | {"traceback", "key", *SUMMARY_COLUMNS}
)

#: The percentile columns ``summary(percentiles=...)`` adds (``latency_p90_s``, ``ttft_p99.9_s``).
_PERCENTILE_COLUMN = re.compile(r"(latency|ttft)_p[0-9.]+_s")

Label = bool | int | float | str


@dataclass(frozen=True)
class Axis:
    """One named axis: ``labels`` go to the frames' column, ``values`` to the functions."""

    name: str
    labels: tuple[Label, ...]
    values: tuple[Any, ...]

    def value(self, label: Label) -> Any:
        return self.values[self.labels.index(label)]

    @property
    def kind(self) -> str:
        """What its labels are, for the column that holds them: ``"str"``, ``"bool"``, ``"int"``,
        ``"float"`` (numbers, ints among them) or ``"mixed"``."""
        labels = self.labels
        if all(isinstance(v, str) for v in labels):
            return "str"
        if all(isinstance(v, bool) for v in labels):
            return "bool"
        if any(isinstance(v, bool | str) for v in labels):
            return "mixed"
        return "int" if all(isinstance(v, int) for v in labels) else "float"


def _label(name: str, value: Any, where: str) -> Label:
    """A plain, JSON-safe label (numpy scalars unwrapped), or a clear error."""
    if hasattr(value, "item") and not isinstance(value, bool | int | float | str):
        value = value.item()  # numpy scalars
    if isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ArgumentError(f"axis {name!r}: {where} {value!r} is not a finite number")
        return float(value)
    raise ArgumentTypeError(
        f"axis {name!r}: {where} {value!r} ({type(value).__name__}) is not a number, string or "
        f"bool; to vary objects, give a dict of label → object: axes={{{name!r}: {{'label': obj}}}}"
    )


def check_axes(axes: object, protected: Sequence[str] = ()) -> dict[str, Axis]:
    """Check ``axes`` (name → values, or name → {label: object}) and return them as Axis."""
    if axes is None:
        return {}
    if not isinstance(axes, Mapping):
        raise ArgumentTypeError(
            "axes must be a dict of axis name → list of values, e.g. "
            f"{{'threshold': [0.2, 0.5]}}, got {type(axes).__name__}"
        )
    checked = {}
    for name, given in axes.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ArgumentError(
                f"axis names must be Python identifiers (they are bound as parameter names), "
                f"got {name!r}"
            )
        if name in RESERVED or name in protected:
            raise ArgumentError(
                f"axis name {name!r} is already a column of the frames; choose another name"
            )
        if name in GRID_COLUMNS or _PERCENTILE_COLUMN.fullmatch(name):
            raise ArgumentError(
                f"axis name {name!r} is already a column of grid.cells or grid.summary(); "
                "choose another name"
            )
        if isinstance(given, Mapping):
            labels = tuple(_label(name, key, "label") for key in given)
            values = tuple(given.values())
        elif isinstance(given, str | bytes) or not isinstance(given, Sequence | range):
            if hasattr(given, "tolist"):  # numpy arrays, pandas Series and Index
                given = given.tolist()
            else:
                raise ArgumentTypeError(
                    f"axis {name!r} must be a list of values or a dict of label → object, "
                    f"got {type(given).__name__}"
                )
            labels = tuple(_label(name, v, "value") for v in given)
            values = labels
        else:
            labels = tuple(_label(name, v, "value") for v in given)
            values = labels
        if not labels:
            raise ArgumentError(f"axis {name!r} has no values")
        repeated = sorted({repr(v) for v in labels if labels.count(v) > 1})
        if repeated:
            raise ArgumentError(f"axis {name!r} repeats values: {', '.join(repeated)}")
        _refuse_same_text(name, labels)
        checked[name] = Axis(name, labels, values)
    return checked


def _refuse_same_text(name: str, labels: Sequence[Label]) -> None:
    """Refuse labels that differ but read the same as text (``1`` and ``'1'``): an axis of mixed
    types is a text column, and the output folder names its levels by the text, so their cells
    could not be told apart."""
    seen: dict[str, Label] = {}
    for label in labels:
        text = str(label)
        if text in seen:
            first = seen[text]
            raise ArgumentError(
                f"axis {name!r}: values {first!r} ({type(first).__name__}) and {label!r} "
                f"({type(label).__name__}) both read {text!r} as text, as the axis column and "
                "the output folder show them; give values that differ as text, or of one type"
            )
        seen[text] = label


@dataclass(frozen=True)
class Binding:
    """A grid setting: a fixed value, or a function of the axes its parameters name."""

    value: Any
    params: tuple[str, ...] | None = None  # None: a fixed value

    def resolve(self, values: Mapping[str, Any]) -> Any:
        if self.params is None:
            return self.value
        return self.value(**{p: values[p] for p in self.params})


def _parameters(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    names = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            return None
        if parameter.kind is parameter.POSITIONAL_ONLY:
            return None
        names.append(parameter.name)
    return tuple(names)


def bind(what: str, value: Any, axes: Mapping[str, Axis], *, factory_only: bool) -> Binding:
    """``value`` as a Binding: a callable whose parameters all name axes is a function of them.

    ``factory_only``: the setting is always a function when callable (a host factory); otherwise
    (concurrency, arrivals) a callable is one only when it names axes."""
    if not callable(value) or (inspect.isclass(value)):
        return Binding(value)
    params = _parameters(value)
    if params is None or not params:
        if factory_only:
            raise ArgumentTypeError(
                f"{what} is a function with no named parameters; a function of the grid's axes "
                f"names them as parameters (axes: {sorted(axes)})"
            )
        return Binding(value)
    unknown = [p for p in params if p not in axes]
    if unknown:
        raise ArgumentError(
            f"{what} takes {', '.join(map(repr, unknown))}, which "
            f"{'is not an axis' if len(unknown) == 1 else 'are not axes'}; the grid's axes: "
            f"{sorted(axes) or 'none'}"
        )
    return Binding(value, params)


@dataclass(frozen=True)
class StrategyEntry:
    """A strategy of the grid: an algorithm, or a factory of one from the axes it names."""

    name: str
    binding: Binding

    @property
    def uses(self) -> tuple[str, ...]:
        return self.binding.params or ()

    def build(self, values: Mapping[str, Any]) -> Callable[..., Any]:
        algorithm = self.binding.resolve(values)
        if self.binding.params is not None:
            shown = ", ".join(f"{p}={values[p]!r}" for p in self.binding.params)
            try:
                return as_algorithm(algorithm, self.name)[1]
            except ArgumentTypeError as error:
                raise ArgumentTypeError(
                    f"strategy {self.name!r} built with {shown} did not return an algorithm: "
                    f"{error}"
                ) from None
        return as_algorithm(algorithm, self.name)[1]


def _is_factory(value: Any, axes: Mapping[str, Axis]) -> bool:
    """A plain (not async) function whose parameters are all axis names builds an algorithm."""
    if not callable(value) or inspect.isclass(value) or getattr(value, "route", None):
        return False
    target = value
    while hasattr(target, "func") and hasattr(target, "args"):  # functools.partial
        target = target.func
    call = inspect.getattr_static(type(value), "__call__", None)
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(call):
        return False
    params = _parameters(value)
    return params is not None and bool(params) and all(p in axes for p in params)


def check_strategies(strategies: object, axes: Mapping[str, Axis]) -> list[StrategyEntry]:
    """Named strategies: algorithms as :func:`sy.compare` takes them, or factories of the axes."""
    if isinstance(strategies, Mapping):
        given: list[tuple[str | None, Any]] = [
            (str(name), value) for name, value in strategies.items()
        ]
        named = True
    elif isinstance(strategies, Sequence) and not isinstance(strategies, str | bytes):
        given = [(None, value) for value in strategies]
        named = False
    else:
        raise ArgumentTypeError(
            "strategies must be a dict of name → algorithm (or factory of one) or a list of "
            f"algorithms, got {type(strategies).__name__}"
        )
    if not given:
        raise ArgumentError("strategies is empty")
    entries = []
    for name, value in given:
        if _is_factory(value, axes):
            if name is None:
                raise ArgumentTypeError(
                    f"strategy factory {getattr(value, '__name__', value)!r} needs a name: pass "
                    "strategies as a dict of name → factory"
                )
            entries.append(
                StrategyEntry(name, bind(f"strategy {name!r}", value, axes, factory_only=True))
            )
            continue
        try:
            label, _ = as_algorithm(value, name)
        except ArgumentTypeError as error:
            params = _parameters(value) if callable(value) else None
            if params and not inspect.iscoroutinefunction(value):
                unknown = [p for p in params if p not in axes]
                raise ArgumentTypeError(
                    f"strategy {name or getattr(value, '__name__', '?')!r} is a plain function of "
                    f"({', '.join(params)}): a factory's parameters must all be axis names "
                    f"({', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} "
                    f"not; axes: {sorted(axes) or 'none'}), and an algorithm is "
                    "`async def (request, driver)`"
                ) from None
            raise error from None
        entries.append(StrategyEntry(label, Binding(value)))
    names = [e.name for e in entries]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ArgumentError(
            f"strategy names must be unique; repeated: {repeated}"
            + ("" if named else " (pass a dict to name them)")
        )
    return entries


@dataclass(frozen=True)
class Cell:
    """One run of the grid: a strategy, a label on each axis it uses, a seed."""

    index: int
    strategy: str
    labels: tuple[tuple[str, Label], ...]
    seed: int

    @property
    def key(self) -> str:
        """A name for the cell that does not depend on the grid around it (an output folder
        recognises the cell's files by it when the grid is run again or extended)."""
        text = json.dumps([self.strategy, sorted(self.labels), self.seed], sort_keys=True)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]

    def describe(self) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in (*self.labels, ("seed", self.seed)))
        return f"{self.strategy} ({shown})"


def cells_of(
    entries: Sequence[StrategyEntry],
    axes: Mapping[str, Axis],
    shared: Sequence[Binding],
    seeds: Sequence[int],
) -> list[Cell]:
    """Every cell, strategy by strategy, the axes in the order they were given, seeds innermost."""
    shared_uses = {p for binding in shared for p in (binding.params or ())}
    used_anywhere = set(shared_uses)
    cells: list[Cell] = []
    for entry in entries:
        uses = [name for name in axes if name in shared_uses or name in entry.uses]
        used_anywhere.update(uses)
        for combination in itertools.product(*(axes[name].labels for name in uses)):
            labels = tuple(zip(uses, combination, strict=True))
            for seed in seeds:
                cells.append(Cell(len(cells), entry.name, labels, seed))
    unused = [name for name in axes if name not in used_anywhere]
    if unused:
        raise ArgumentError(
            f"{'axis' if len(unused) == 1 else 'axes'} {', '.join(map(repr, unused))} "
            "used by nothing: name an axis as a parameter of a strategy factory, of host, "
            "concurrency or arrivals"
        )
    return cells
