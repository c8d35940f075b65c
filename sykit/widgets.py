"""A playground of knobs: change fault rates, latency, concurrency, hedge delay, judge error or the
strategies compared, and the comparison re-runs (instantly, in virtual time) and redraws.

    pg = sy.widgets.playground(requests, host)     # in Jupyter: controls, summary table, a plot
    pg.controls["concurrency"].value = 8           # re-runs; pg.summary is the new table

Strategies that depend on a knob are passed as *factories* that take knob values by name, so they
are rebuilt on every change::

    sy.widgets.playground(requests, host, {
        "small only": sy.strategies.single("small"),                          # an algorithm
        "hedge large": lambda hedge_after_s: sy.strategies.hedge("large", after=hedge_after_s),
    })

The knob logic (:class:`Knobs`, :func:`apply_knobs`, :func:`build_lineup`) is plain Python; only
:func:`playground` needs ipywidgets, and imports it when called.
"""

from __future__ import annotations

import base64
import functools
import html
import inspect
import io
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import strategies as _strategies
from ._config import Faults, ModelProfile
from ._dists import Constant, Distribution, Empirical, Exponential, LogNormal, Uniform
from ._errors import ArgumentError, ArgumentTypeError
from ._hosts.sim import SimHost
from ._results import Comparison
from ._runner import compare

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.figure import Figure

__all__ = [
    "KNOBS",
    "PLOTS",
    "Knobs",
    "Playground",
    "apply_knobs",
    "build_lineup",
    "default_strategies",
    "playground",
    "scale_distribution",
]

# -- scaling distributions ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scaled:
    """``factor`` times a draw from ``base``, for distributions without a closed form."""

    base: Distribution
    factor: float

    def quantile(self, u: float) -> float:
        return self.base.quantile(u) * self.factor

    @property
    def mean(self) -> float:
        return self.base.mean * self.factor


def scale_distribution(dist: Distribution, factor: float) -> Distribution:
    """The distribution of ``factor × X`` for X ~ ``dist``, of the same kind where there is one
    (a LogNormal stays a LogNormal with the same sigma), so scaled profiles still read well."""
    if isinstance(factor, bool) or not isinstance(factor, int | float):
        raise ArgumentTypeError(f"factor must be a number, got {type(factor).__name__}")
    if not (math.isfinite(factor) and factor > 0):
        raise ArgumentError(f"factor must be a finite number > 0, got {factor!r}")
    if not isinstance(dist, Distribution):
        raise ArgumentTypeError(f"dist must be a distribution such as sy.LogNormal, got {dist!r}")
    if factor == 1:
        return dist
    if isinstance(dist, Constant):
        return Constant(dist.value * factor)
    if isinstance(dist, LogNormal):
        return LogNormal(dist.median * factor, sigma=dist.sigma)
    if isinstance(dist, Uniform):
        return Uniform(dist.low * factor, dist.high * factor)
    if isinstance(dist, Exponential):
        return Exponential(mean=dist.mean_value * factor)
    if isinstance(dist, Empirical):
        return Empirical(x * factor for x in dist.samples)
    if isinstance(dist, _Scaled):
        return _Scaled(dist.base, dist.factor * factor)
    return _Scaled(dist, float(factor))


# -- knobs ----------------------------------------------------------------------------------------

_RANDOM_FAULTS = ("rate_limit", "unavailable", "timeout", "policy", "invalid")


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """What the playground's controls set.

    * ``fault_scale`` multiplies every model's random fault probabilities and latency-spike chance
      (0 turns them off); ``rate_limit``, ``unavailable`` and ``timeout`` add that probability of a
      429, a 503 or a timeout to every model. If the rates of a model add up to over 1 they are
      scaled down to sum to 1.
    * ``latency_scale`` multiplies every time to first token and reject delay and divides tokens
      per second: every answer takes that many times as long.
    * ``concurrency`` requests in flight; ``hedge_after_s`` for strategy factories that take it;
      ``judge_error_rate`` is ``1 - accuracy`` of every model's judge.
    """

    fault_scale: float = 1.0
    rate_limit: float = 0.0
    unavailable: float = 0.0
    timeout: float = 0.0
    latency_scale: float = 1.0
    concurrency: int = 32
    hedge_after_s: float = 2.0
    judge_error_rate: float = 0.1

    def __post_init__(self) -> None:
        for name in ("fault_scale", "latency_scale", "hedge_after_s"):
            value = _real(getattr(self, name), name)
            if value < 0 or (value == 0 and name != "fault_scale"):
                raise ArgumentError(f"{name} must be > 0, got {value!r}")
        for name in ("rate_limit", "unavailable", "timeout", "judge_error_rate"):
            value = _real(getattr(self, name), name)
            if not 0 <= value <= 1:
                raise ArgumentError(f"{name} must be a probability from 0 to 1, got {value!r}")
        if (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise ArgumentError(f"concurrency must be an int ≥ 1, got {self.concurrency!r}")

    def replace(self, **changes: Any) -> Knobs:
        """A copy with some knobs changed (checked like the original)."""
        unknown = sorted(set(changes) - set(KNOBS))
        if unknown:
            raise ArgumentTypeError(f"unknown knob(s) {unknown}; the knobs are {list(KNOBS)}")
        return Knobs(**{**asdict(self), **changes})


#: The knob names, which are also the parameter names a strategy factory may take.
KNOBS: tuple[str, ...] = tuple(f.name for f in fields(Knobs))


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ArgumentTypeError(f"{name} must be a number, got {value!r}")
    return float(value)


def _faults(faults: Faults, knobs: Knobs) -> Faults:
    extra = {"rate_limit": knobs.rate_limit, "unavailable": knobs.unavailable}
    extra["timeout"] = knobs.timeout
    rates = {k: getattr(faults, k) * knobs.fault_scale + extra.get(k, 0.0) for k in _RANDOM_FAULTS}
    total = sum(rates.values())
    if total > 1:
        rates = {k: v / total for k, v in rates.items()}
    return faults.replace(**rates, spike_p=min(1.0, faults.spike_p * knobs.fault_scale))


def _profile(profile: ModelProfile, knobs: Knobs) -> ModelProfile:
    k = knobs.latency_scale
    latency = profile.latency.replace(
        ttft=scale_distribution(profile.latency.ttft, k),  # type: ignore[arg-type]
        tokens_per_s=scale_distribution(profile.latency.tokens_per_s, 1 / k),  # type: ignore[arg-type]
    )
    return profile.replace(
        latency=latency,
        reject_delay_s=scale_distribution(profile.reject_delay_s, k),  # type: ignore[arg-type]
        faults=_faults(profile.faults, knobs),
    )


def apply_knobs(host: SimHost, knobs: Knobs) -> SimHost:
    """``host`` with the knobs' faults, latency scale and judge error rate on every model."""
    if not isinstance(host, SimHost):
        raise ArgumentTypeError(f"host must be a sy.SimHost, got {type(host).__name__}")
    if not isinstance(knobs, Knobs):
        raise ArgumentTypeError(f"knobs must be a sy.widgets.Knobs, got {type(knobs).__name__}")
    models = {name: _profile(p, knobs) for name, p in host.profiles.items()}
    accuracy = 1.0 - knobs.judge_error_rate
    judges = {name: j.replace(accuracy=accuracy) for name, j in host.judges.items()}
    return host.replace(models=models, judge=judges)


# -- strategies -----------------------------------------------------------------------------------

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


# -- the playground -------------------------------------------------------------------------------

#: The plots the playground can draw, by ``plot=`` value.
PLOTS: dict[str, str] = {
    "cost_quality": "cost vs quality",
    "latency_cdf": "latency CDF",
    "outcomes": "attempt outcomes",
    "timeline": "timeline (first strategy)",
}

_TABLE_COLUMNS = {
    "strategy": "strategy",
    "success_rate": "success",
    "mean_quality": "quality",
    "cost_per_request_usd": "USD / request",
    "latency_p50_s": "p50 (s)",
    "latency_p99_s": "p99 (s)",
    "attempts_per_request": "attempts / request",
    "wasted_share": "wasted",
    "fallbacks": "fallbacks",
    "retries": "retries",
}


def _summary_html(summary: pd.DataFrame) -> str:
    """The summary columns that matter when turning knobs, as an HTML table."""
    table = summary[list(_TABLE_COLUMNS)].rename(columns=_TABLE_COLUMNS)
    formats = {
        "success": "{:.1%}",
        "wasted": "{:.1%}",
        "quality": "{:.3f}",
        "USD / request": "${:.6f}",
        "p50 (s)": "{:.2f}",
        "p99 (s)": "{:.2f}",
        "attempts / request": "{:.2f}",
    }
    formatters = {column: f.format for column, f in formats.items()}
    return table.to_html(index=False, formatters=formatters, border=0, na_rep="–")


class _PlaygroundLogic:
    """The playground: knob controls over a comparison that re-runs on every change.

    ``controls`` maps each knob name (see :data:`KNOBS`), ``"strategies"`` and ``"plot"`` to its
    widget; setting a control's ``value`` re-runs (or, for ``"plot"``, redraws). After each run:
    ``comparison``, ``summary`` (the DataFrame), ``table`` (an HTML widget showing it), ``figure``
    (the matplotlib Figure drawn into ``output``), ``runs`` (how many so far) and ``error`` (the
    exception of a failed run, shown in ``status``; the previous results stay).
    """

    controls: dict[str, Any]
    table: ipywidgets.HTML
    status: ipywidgets.HTML
    output: ipywidgets.Output
    comparison: Comparison | None
    summary: pd.DataFrame | None
    figure: Figure | None
    host: SimHost
    runs: int
    error: Exception | None

    def _setup(
        self,
        requests: list[Any],
        base_host: SimHost,
        lineup: dict[str, StrategySpec],
        seed: int,
    ) -> None:
        self._requests = requests
        self._base_host = base_host
        self._lineup = lineup
        self._seed = seed
        self._colors = _strategy_colors(list(lineup))
        self._holding = False
        self.comparison = None
        self.summary = None
        self.figure = None
        self.host = base_host
        self.runs = 0
        self.error = None
        for name, control in self.controls.items():
            handler = self._plot_changed if name == "plot" else self._knob_changed
            control.observe(handler, names="value")

    @property
    def knobs(self) -> Knobs:
        """The knob values the controls show now."""
        return Knobs(**{name: self.controls[name].value for name in KNOBS})

    @property
    def selected(self) -> list[str]:
        """The strategies selected now, in lineup order."""
        chosen = set(self.controls["strategies"].value)
        return [name for name in self._lineup if name in chosen]

    def set(self, **values: Any) -> None:
        """Set several controls at once and re-run once: ``pg.set(concurrency=8, timeout=0.1)``."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ArgumentTypeError(
                f"unknown control(s) {unknown}; the controls are {list(self.controls)}"
            )
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = tuple(value) if name == "strategies" else value
        finally:
            self._holding = False
        if set(values) - {"plot"}:
            self.rerun()
        else:
            self.redraw()

    def _knob_changed(self, change: Mapping[str, Any]) -> None:
        if not self._holding:
            self.rerun()

    def _plot_changed(self, change: Mapping[str, Any]) -> None:
        if not self._holding:
            self.redraw()

    def rerun(self) -> None:
        """Run the selected strategies with the current knobs, then update the table and plot."""
        selected = self.selected
        if not selected:
            self.status.value = "<i>Select at least one strategy.</i>"
            return
        try:
            knobs = self.knobs
            host = apply_knobs(self._base_host, knobs)
            lineup = build_lineup(self._lineup, knobs, selected)
            comparison = compare(
                lineup,
                self._requests,
                host=host,
                seeds=[self._seed],
                concurrency=knobs.concurrency,
                progress=False,
            )
        except Exception as exc:
            self.error = exc
            self.status.value = _error_html(exc)
            return
        self.error = None
        self.host = host
        self.comparison = comparison
        self.summary = comparison.summary()
        self.runs += 1
        self.table.value = _summary_html(self.summary)
        self.status.value = (
            f"<small>run {self.runs}: {len(self._requests)} requests × {len(lineup)} "
            f"strategies, seed {self._seed}</small>"
        )
        self.redraw()

    def redraw(self) -> None:
        """Draw the chosen plot of the last comparison into ``output``."""
        if self.comparison is None:
            return
        try:
            figure = _draw(self.controls["plot"].value, self.comparison, self._colors, self.summary)
        except Exception as exc:
            self.figure = None
            self.output.outputs = (_text_output(f"{type(exc).__name__}: {exc}"),)
            return
        self.figure = figure
        # Rendering the PNG is most of a redraw's time: skip it when no notebook can show it.
        self.output.outputs = (_figure_output(figure),) if _in_notebook() else ()


def _strategy_colors(names: list[str]) -> dict[str, str]:
    from ._viz import strategy_colors

    return strategy_colors(names)


def _in_notebook() -> bool:
    """Whether an IPython kernel could display the output (IPython is imported by any kernel)."""
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def _draw(
    plot: str,
    comparison: Comparison,
    colors: Mapping[str, str] | None = None,
    summary: pd.DataFrame | None = None,
) -> Figure:
    """A Figure (not managed by pyplot, so nothing shows twice) with one of :data:`PLOTS`."""
    from matplotlib.figure import Figure

    from . import _viz

    if plot not in PLOTS:
        raise ArgumentError(f"plot must be one of {list(PLOTS)}, got {plot!r}")
    colors = dict(colors) if colors is not None else _viz.strategy_colors(comparison.strategies)
    if plot == "outcomes":
        figure = Figure(figsize=(11, 3.8), layout="constrained")
        _viz.plot_outcomes(
            comparison.attempts,
            comparison.requests,
            strategies=comparison.strategies,
            colors=colors,
            ax=figure.subplots(1, 2),
        )
        return figure
    figure = Figure(figsize=(9, 3.8), layout="constrained")
    ax = figure.subplots()
    if plot == "cost_quality":
        summary = comparison.summary() if summary is None else summary
        _viz.plot_cost_quality(summary, colors=colors, ax=ax)
    elif plot == "latency_cdf":
        _viz.plot_latency_cdf(
            comparison.requests, strategies=comparison.strategies, colors=colors, ax=ax
        )
    else:
        first = comparison.results[0]
        figure.set_size_inches(9, 3.2)
        _viz.plot_timeline(first.attempts, first.requests, strategy=first.strategy, ax=ax)
    return figure


def _figure_output(figure: Figure) -> dict[str, Any]:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {
        "output_type": "display_data",
        "data": {"image/png": png, "text/plain": repr(figure)},
        "metadata": {},
    }


def _text_output(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text + "\n"}


def _error_html(exc: Exception) -> str:
    message = html.escape(f"{type(exc).__name__}: {exc}")
    return f'<span style="color:#b00020">Run failed, showing the previous results: {message}</span>'


@functools.cache
def _playground_class() -> type:
    import ipywidgets

    class Playground(_PlaygroundLogic, ipywidgets.VBox):
        __doc__ = _PlaygroundLogic.__doc__

    Playground.__module__ = __name__
    Playground.__qualname__ = "Playground"
    return Playground


def __getattr__(name: str) -> Any:
    # ``Playground`` subclasses ipywidgets.VBox: built on first use so ``import sykit`` stays light.
    if name == "Playground":
        return _playground_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _controls(
    knobs: Knobs, names: list[str], selected: list[str], plot: str
) -> dict[str, ipywidgets.Widget]:
    import ipywidgets as w

    style = {"description_width": "130px"}
    layout = w.Layout(width="340px")

    def slider(kind: Any, description: str, value: Any, **kwargs: Any) -> Any:
        return kind(
            value=value,
            description=description,
            continuous_update=False,
            style=style,
            layout=layout,
            **kwargs,
        )

    return {
        "fault_scale": slider(
            w.FloatSlider, "fault rates ×", knobs.fault_scale, min=0.0, max=10.0, step=0.1
        ),
        "rate_limit": slider(
            w.FloatSlider, "+ 429 rate", knobs.rate_limit, min=0.0, max=0.5, step=0.01
        ),
        "unavailable": slider(
            w.FloatSlider, "+ 503 rate", knobs.unavailable, min=0.0, max=0.5, step=0.01
        ),
        "timeout": slider(
            w.FloatSlider, "+ timeout rate", knobs.timeout, min=0.0, max=0.3, step=0.01
        ),
        "latency_scale": slider(
            w.FloatLogSlider,
            "latency ×",
            knobs.latency_scale,
            base=2,
            min=-3,
            max=3,
            step=0.25,
        ),
        "concurrency": slider(
            w.IntSlider, "concurrency", knobs.concurrency, min=1, max=max(128, knobs.concurrency)
        ),
        "hedge_after_s": slider(
            w.FloatSlider,
            "hedge after (s)",
            knobs.hedge_after_s,
            min=0.1,
            max=max(10.0, knobs.hedge_after_s),
            step=0.1,
        ),
        "judge_error_rate": slider(
            w.FloatSlider, "judge error rate", knobs.judge_error_rate, min=0.0, max=0.5, step=0.01
        ),
        "strategies": w.SelectMultiple(
            options=names,
            value=tuple(selected),
            rows=min(8, len(names)),
            description="strategies",
            style={"description_width": "70px"},
            layout=w.Layout(width="330px"),
        ),
        "plot": w.Dropdown(
            options=[(label, key) for key, label in PLOTS.items()],
            value=plot,
            description="plot",
            style={"description_width": "70px"},
            layout=w.Layout(width="330px"),
        ),
    }


def playground(
    requests: Iterable[Any],
    host: SimHost,
    strategies: Mapping[str, StrategySpec] | Sequence[Algorithm] | None = None,
    *,
    seed: int = 0,
    plot: str = "cost_quality",
    judge: str | None = None,
    selected: Sequence[str] | None = None,
    concurrency: int = 32,
    hedge_after_s: float = 2.0,
    latency_scale: float = 1.0,
    fault_scale: float = 1.0,
    judge_error_rate: float | None = None,
) -> Playground:
    """Controls for the knobs, the summary table and one plot, re-run on every change.

    ``strategies`` maps names to algorithms or to factories taking knob values by name (e.g.
    ``lambda hedge_after_s: sy.strategies.hedge("large", after=hedge_after_s)``); None builds
    :func:`default_strategies` from the host's models (``judge`` names the judge model).
    ``selected`` picks which run first (default: all). The keyword knobs set the controls'
    starting values; ``judge_error_rate=None`` starts from the host's own judge.
    Keep the requests to a few thousand so every change re-runs in well under a second.
    """
    if not isinstance(host, SimHost):
        raise ArgumentTypeError(
            f"host must be a sy.SimHost (the playground re-runs on every change), got "
            f"{type(host).__name__}"
        )
    if isinstance(requests, str) or not isinstance(requests, Iterable):
        raise ArgumentTypeError(
            f"requests must be a list of sy.Request, got {type(requests).__name__}"
        )
    requests = list(requests)
    if plot not in PLOTS:
        raise ArgumentError(f"plot must be one of {list(PLOTS)}, got {plot!r}")
    lineup = default_strategies(host, judge=judge) if strategies is None else _as_lineup(strategies)
    if judge_error_rate is None:
        reference = _judge_model(host, judge) or host.models[0]
        judge_error_rate = round(1.0 - host.judges[reference].accuracy, 6)
    knobs = Knobs(
        concurrency=concurrency,
        hedge_after_s=hedge_after_s,
        latency_scale=latency_scale,
        fault_scale=fault_scale,
        judge_error_rate=judge_error_rate,
    )
    names = list(lineup)
    if selected is None:
        chosen = names
    else:
        if isinstance(selected, str):
            raise ArgumentTypeError(
                "selected must be a list of strategy names, not a single string"
            )
        chosen = [str(s) for s in selected]
        unknown = [s for s in chosen if s not in lineup]
        if unknown:
            raise ArgumentError(f"selected names unknown strategies {unknown}; known: {names}")

    import ipywidgets as w

    controls = _controls(knobs, names, chosen, plot)
    table = w.HTML()
    status = w.HTML()
    output = w.Output()
    column = w.Layout(margin="0 12px 0 0")
    panel = w.HBox(
        [
            w.VBox(
                [controls[k] for k in ("fault_scale", "rate_limit", "unavailable", "timeout")],
                layout=column,
            ),
            w.VBox(
                [
                    controls[k]
                    for k in ("latency_scale", "concurrency", "hedge_after_s", "judge_error_rate")
                ],
                layout=column,
            ),
            w.VBox([controls["strategies"], controls["plot"]]),
        ]
    )
    pg = _playground_class()(children=[panel, status, table, output])
    pg.controls = controls
    pg.table, pg.status, pg.output = table, status, output
    pg._setup(requests, host, lineup, seed)
    pg.rerun()
    if pg.error is not None:
        raise pg.error
    return pg


if TYPE_CHECKING:

    class Playground(_PlaygroundLogic, ipywidgets.VBox):
        pass
