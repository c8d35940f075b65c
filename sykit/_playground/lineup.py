"""The strategies a playground compares: algorithms, or factories rebuilt from the knobs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from .. import strategies as _strategies
from .._errors import ArgumentError, ArgumentTypeError
from .._hosts.sim import SimHost
from .knobs import KNOBS, Knobs

__all__ = ["Algorithm", "StrategySpec", "build_lineup", "default_strategies"]

Algorithm = Callable[..., Any]
StrategySpec = Algorithm | Callable[..., Algorithm]


def _is_algorithm(spec: Any) -> bool:
    if inspect.iscoroutinefunction(spec):
        return True
    route = getattr(spec, "route", None)
    return callable(route) and not inspect.isroutine(spec)


def _factory_knobs(name: str, spec: Any) -> tuple[str, ...] | None:
    """The knobs a factory takes (None: all, it has ``**kwargs``); TypeError if it is neither an
    algorithm nor a factory."""
    hint = (
        f"strategies[{name!r}] must be an async algorithm (request, driver) -> Outcome or a "
        f"factory taking knob values by name ({', '.join(KNOBS)})"
    )
    if not callable(spec):
        raise ArgumentTypeError(f"{hint}; got {type(spec).__name__}")
    try:
        parameters = inspect.signature(spec).parameters.values()
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{hint}; its signature cannot be read") from None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    names = [p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = [n for n in names if n not in KNOBS]
    if unknown:
        raise ArgumentTypeError(f"{hint}; it takes {unknown}")
    return tuple(names)


def _as_lineup(strategies: Any) -> dict[str, StrategySpec]:
    if isinstance(strategies, Mapping):
        lineup = {str(k): v for k, v in strategies.items()}
    elif isinstance(strategies, Sequence) and not isinstance(strategies, str):
        lineup = {}
        for i, spec in enumerate(strategies):
            if not _is_algorithm(spec):
                raise ArgumentTypeError(
                    f"strategies[{i}] is not an algorithm; pass a dict to name factories"
                )
            name = getattr(spec, "name", None) or getattr(spec, "__name__", f"strategy {i}")
            if name in lineup:
                raise ArgumentError(f"two strategies are named {name!r}; pass a dict to name them")
            lineup[str(name)] = spec
    else:
        raise ArgumentTypeError(
            "strategies must be a dict of name → algorithm or factory, a list of algorithms, "
            f"or None; got {type(strategies).__name__}"
        )
    if not lineup:
        raise ArgumentError("strategies is empty")
    for name, spec in lineup.items():
        if not _is_algorithm(spec):
            _factory_knobs(name, spec)
    return lineup


def build_lineup(
    strategies: Mapping[str, StrategySpec], knobs: Knobs, selected: Iterable[str] | None = None
) -> dict[str, Algorithm]:
    """The algorithms to compare: algorithms as they are, factories called with the knob values
    they name, in the order of ``strategies`` (only ``selected`` ones, if given)."""
    lineup = _as_lineup(strategies)
    names = list(lineup) if selected is None else [str(s) for s in selected]
    unknown = [n for n in names if n not in lineup]
    if unknown:
        raise ArgumentError(f"selected names unknown strategies {unknown}; known: {list(lineup)}")
    values = asdict(knobs)
    built = {}
    for name in (n for n in lineup if n in names):
        spec = lineup[name]
        if _is_algorithm(spec):
            built[name] = spec
            continue
        wanted = _factory_knobs(name, spec)
        made = spec(**(values if wanted is None else {k: values[k] for k in wanted}))
        if not (_is_algorithm(made) or callable(made)):
            raise ArgumentTypeError(
                f"strategies[{name!r}] is a factory but returned {type(made).__name__}, "
                "not an algorithm"
            )
        built[name] = made
    return built


def _judge_model(host: SimHost, judge: str | None) -> str | None:
    if judge is not None:
        if judge not in host.models:
            raise ArgumentError(f"judge {judge!r} is not a model of the host: {list(host.models)}")
        return judge
    return "judge" if "judge" in host.models else None


def default_strategies(host: SimHost, *, judge: str | None = None) -> dict[str, StrategySpec]:
    """A lineup from ``sy.strategies`` over the host's cheapest (weak) and priciest (strong)
    model by output price: each alone, fallback, a cascade if there is a judge (``judge`` or a
    model named "judge"), a race, and a hedge that follows the ``hedge_after_s`` knob.

    Weak and strong are chosen among the models other than the judge, preferring those with a
    ``quality`` (the others are likely judges or helpers)."""
    if not isinstance(host, SimHost):
        raise ArgumentTypeError(f"host must be a sy.SimHost, got {type(host).__name__}")
    judge = _judge_model(host, judge)
    answering = [m for m in host.models if m != judge] or list(host.models)
    answering = [m for m in answering if host.profiles[m].quality is not None] or answering
    by_price = sorted(
        answering, key=lambda m: (host.profiles[m].price_out, host.profiles[m].price_in)
    )
    weak, strong = by_price[0], by_price[-1]
    lineup: dict[str, StrategySpec] = {f"{weak} only": _strategies.single(weak)}
    if strong != weak:
        lineup[f"{strong} only"] = _strategies.single(strong)
        lineup[f"fallback {weak}>{strong}"] = _strategies.fallback_chain([weak, strong])
        if judge is not None:
            lineup[f"cascade {weak}>{strong}"] = _strategies.cascade(weak, strong, judge=judge)
        lineup[f"race {weak}|{strong}"] = _strategies.race([weak, strong])

    def hedged(hedge_after_s: float) -> Algorithm:
        return _strategies.hedge(strong, after=hedge_after_s)

    lineup[f"hedge {strong}"] = hedged
    return lineup
