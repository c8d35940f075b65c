"""The strategies a playground compares: algorithms, or factories rebuilt from the knobs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sykit import strategies as _strategies
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.types import Algorithm
from sykit._hosts.sim import SimHost
from sykit._playground.knobs import KNOBS, Knobs
from sykit._world.config import Judge

__all__ = [
    "Algorithm",
    "Roles",
    "StrategySpec",
    "build_lineup",
    "default_strategies",
    "hedge_delay",
    "roles",
]

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
    built: dict[str, Any] = {}  # algorithms, or objects with route(), as sy.compare takes them
    for name in (n for n in lineup if n in names):
        spec = lineup[name]
        if _is_algorithm(spec):
            built[name] = spec
            continue
        factory: Callable[..., Any] = spec
        wanted = _factory_knobs(name, factory)
        made = factory(**(values if wanted is None else {k: values[k] for k in wanted}))
        if not (_is_algorithm(made) or callable(made)):
            raise ArgumentTypeError(
                f"strategies[{name!r}] is a factory but returned {type(made).__name__}, "
                "not an algorithm"
            )
        built[name] = made
    return built


@dataclass(frozen=True)
class Roles:
    """The host's models a default line-up uses: ``weak`` (cheapest), ``mid`` (the middle one when
    there are three or more), ``strong`` (priciest) and the ``judge`` of a cascade (None: no
    cascade)."""

    weak: str
    mid: str | None
    strong: str
    judge: str | None


def roles(host: SimHost, judge: str | None = None) -> Roles:
    """Weak, mid and strong by output price (then input price) among the models with a
    ``quality`` (the others are judges or helpers), and a judge: ``judge``, else a model named
    "judge", else the cheapest model without a quality, else, when the host was given a
    ``sy.Judge``, the weak model judging its own drafts."""
    if not isinstance(host, SimHost):
        raise ArgumentTypeError(f"host must be a sy.SimHost, got {type(host).__name__}")
    if judge is not None and judge not in host.models:
        raise ArgumentError(f"judge {judge!r} is not a model of the host: {list(host.models)}")

    def price(model: str) -> tuple[float, float]:
        return host.profiles[model].price_out, host.profiles[model].price_in

    if judge is None and "judge" in host.models:
        judge = "judge"
    answering = [m for m in host.models if m != judge] or list(host.models)
    graded = [m for m in answering if host.profiles[m].quality is not None]
    helpers = sorted((m for m in answering if m not in graded), key=price)
    by_price = sorted(graded or answering, key=price)
    weak, strong = by_price[0], by_price[-1]
    mid = by_price[len(by_price) // 2] if len(by_price) >= 3 else None
    if judge is None and weak != strong:
        if graded and helpers:
            judge = helpers[0]
        elif any(j != Judge() for j in host.judges.values()):
            judge = weak
    return Roles(weak, mid, strong, judge)


def hedge_delay(host: SimHost, model: str, q: float = 0.95) -> float:
    """The ``q`` quantile of ``model``'s answer time on ``host`` (time to first token plus output
    tokens over tokens per second, spikes left out): a hedge after it duplicates about ``1 - q``
    of the calls, the slow ones (Dean and Barroso's rule)."""
    profile = host.profiles[model]
    draws = np.random.default_rng(0).random((3, 4000)).clip(1e-6, 1 - 1e-6)
    ttft, tps = profile.latency.ttft, profile.latency.tokens_per_s
    tokens = profile.output_tokens
    totals = [ttft.quantile(a) + tokens.quantile(b) / tps.quantile(c) for a, b, c in draws.T]
    return round(float(np.quantile(totals, q)), 1) or 0.1


def default_strategies(host: SimHost, *, judge: str | None = None) -> dict[str, StrategySpec]:
    """A line-up from ``sy.strategies`` over the host's models (see :func:`roles`): the weak, mid
    and strong model alone, a fallback chain through them, a cascade weak > strong when there is a
    judge, a race weak | strong and a hedge of the strong model that follows the
    ``hedge_after_s`` knob."""
    r = roles(host, judge)
    weak, mid, strong = r.weak, r.mid, r.strong
    lineup: dict[str, StrategySpec] = {f"{weak} only": _strategies.single(weak)}
    if strong != weak:
        chain = [weak, strong] if mid is None else [weak, mid, strong]
        if mid is not None:
            lineup[f"{mid} only"] = _strategies.single(mid)
        lineup[f"{strong} only"] = _strategies.single(strong)
        lineup[f"fallback {'>'.join(chain)}"] = _strategies.fallback_chain(chain)
        if r.judge is not None:
            lineup[f"cascade {weak}>{strong}"] = _strategies.cascade(weak, strong, judge=r.judge)
        lineup[f"race {weak}|{strong}"] = _strategies.race([weak, strong])

    def hedged(hedge_after_s: float) -> Algorithm:
        return _strategies.hedge(strong, after=hedge_after_s)

    lineup[f"hedge {strong}"] = hedged
    return lineup
