"""The playground's widgets: controls bound to a :class:`Session`, the summary table and one plot."""

from __future__ import annotations

import functools
import html
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._hosts.sim import SimHost
from sykit._playground.figures import PLOTS, draw, drawable_plots, figure_output, text_output
from sykit._playground.knobs import KNOBS, Knobs
from sykit._playground.lineup import (
    Algorithm,
    StrategySpec,
    _as_lineup,
    default_strategies,
    hedge_delay,
    roles,
)
from sykit._playground.session import Session
from sykit._results.result import Comparison

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.figure import Figure

__all__ = ["playground"]

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


_FORMATS = {
    "success_rate": ("{:.1%}", "{:+.1%}", 1),
    "wasted_share": ("{:.1%}", "{:+.1%}", -1),
    "mean_quality": ("{:.3f}", "{:+.3f}", 1),
    "cost_per_request_usd": ("${:.6f}", "{:+.6f}", -1),
    "latency_p50_s": ("{:.2f}", "{:+.2f}", -1),
    "latency_p99_s": ("{:.2f}", "{:+.2f}", -1),
    "attempts_per_request": ("{:.2f}", "{:+.2f}", -1),
}
_BETTER, _WORSE = "#1b7f3b", "#b00020"


def _cell(column: str, value: Any, delta: Any) -> str:
    """A formatted value, with its change from the previous run (green: better, red: worse)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "–"
    fmt, delta_fmt, good = _FORMATS.get(column, ("{}", "", 0))
    text = html.escape(fmt.format(value))
    if delta is None or pd.isna(delta) or abs(delta) < 1e-12:
        return text
    colour = _BETTER if delta * good > 0 else _WORSE
    return f'{text} <small style="color:{colour}">({delta_fmt.format(delta)})</small>'


def _summary_html(summary: pd.DataFrame, change: pd.DataFrame | None = None) -> str:
    """The summary columns that matter when turning knobs, as an HTML table; with ``change``
    (see :func:`difference`), each value also shows how it moved since the previous run."""
    deltas = change.set_index("strategy") if change is not None else None
    rows = []
    for record in summary.to_dict("records"):
        name = record["strategy"]
        row = []
        for column in _TABLE_COLUMNS:
            delta = None
            if deltas is not None and column in deltas.columns and name in deltas.index:
                delta = deltas.at[name, column]
            row.append(_cell(column, record[column], delta))
        rows.append(row)
    return _html_table(list(_TABLE_COLUMNS.values()), rows)


#: Cell style: the name column reads left to right, numbers line up on the right; a header
#: has its column's alignment and padding, so it sits over its values.
_ALIGN = ("left", "right")
_CELL_STYLE = "text-align:{align};padding:2px 8px;white-space:nowrap"


def _html_table(headers: list[str], rows: list[list[str]]) -> str:
    """One HTML table: ``th`` and ``td`` of a column share their alignment (the first column
    left, the others right). Cells are HTML already; headers are escaped."""

    def style(j: int) -> str:
        return _CELL_STYLE.format(align=_ALIGN[0] if j == 0 else _ALIGN[1])

    head = "".join(
        f'<th style="{style(j)}">{html.escape(title)}</th>' for j, title in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(f'<td style="{style(j)}">{cell}</td>' for j, cell in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return (
        '<table style="border-collapse:collapse">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


#: The controls that change the view only: they redraw without re-running.
_VIEW_CONTROLS = ("plot", "timeline")


class _PlaygroundLogic:
    """The playground: knob controls over a comparison that re-runs on every change.

    ``controls`` maps each knob name (see :data:`KNOBS`), ``"strategies"``, ``"plot"`` and
    ``"timeline"`` (the strategy the timeline shows) to its widget; setting a control's ``value``
    re-runs (or, for ``"plot"`` and ``"timeline"``, redraws). After each run: ``comparison``,
    ``summary`` (the DataFrame), ``change`` (its difference from the previous run, shown in the
    table in brackets), ``table`` (an HTML widget showing it), ``figure`` (the matplotlib Figure
    drawn into ``output``), ``runs`` (how many so far) and ``error`` (the exception of a failed
    run, shown in ``status``; the previous results stay).
    """

    controls: dict[str, Any]
    table: ipywidgets.HTML
    status: ipywidgets.HTML
    output: ipywidgets.Output
    figure: Figure | None
    error: Exception | None
    session: Session

    def _setup(self, session: Session) -> None:
        self.session = session
        self._colors = _strategy_colors(list(session.lineup))
        self._holding = False
        self.figure = None
        self.error = None
        for name, control in self.controls.items():
            handler = self._plot_changed if name in _VIEW_CONTROLS else self._knob_changed
            control.observe(handler, names="value")

    @property
    def comparison(self) -> Comparison | None:
        """The last successful comparison."""
        return self.session.comparison

    @property
    def summary(self) -> pd.DataFrame | None:
        """The summary of the last successful comparison."""
        return self.session.summary

    @property
    def change(self) -> pd.DataFrame | None:
        """The last summary minus the one before, per strategy (None after the first run)."""
        return self.session.change

    @property
    def host(self) -> SimHost:
        """The host the knobs of the last successful run made."""
        return self.session.host

    @property
    def runs(self) -> int:
        """How many runs succeeded so far."""
        return self.session.runs

    @property
    def knobs(self) -> Knobs:
        """The knob values the controls show now."""
        return Knobs(**{name: self.controls[name].value for name in KNOBS})

    @property
    def selected(self) -> list[str]:
        """The strategies selected now, in lineup order."""
        chosen = set(self.controls["strategies"].value)
        return [name for name in self.session.lineup if name in chosen]

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
        if set(values) - set(_VIEW_CONTROLS):
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
            self.session.run(self.knobs, selected)
        except Exception as exc:
            self.error = exc
            self.status.value = _error_html(exc)
            return
        self.error = None
        assert self.summary is not None
        self.table.value = _summary_html(self.summary, self.change)
        since = f"; in brackets: the change since run {self.runs - 1}" if self.runs > 1 else ""
        status = (
            f"<small>run {self.runs}: {len(self.session.requests)} requests × {len(selected)} "
            f"strategies, seed {self.session.seed}{since}</small>"
        )
        for why in self._offer_plots():
            status += f"<br><small>{html.escape(why)}</small>"
        self.status.value = status
        self.redraw()

    def _offer_plots(self) -> list[str]:
        """Offer in the plot menu only the plots the last summary can draw (moving off one it
        cannot, without a redraw); return a line for each plot left out, saying why."""
        offered, why = drawable_plots(self.summary)
        control = self.controls["plot"]
        options = [(PLOTS[key], key) for key in offered]
        if [tuple(option) for option in control.options] != options:
            current = control.value
            self._holding = True
            try:
                control.options = options
                control.value = current if current in offered else offered[0]
            finally:
                self._holding = False
        return why

    def redraw(self) -> None:
        """Draw the chosen plot of the last comparison into ``output``."""
        if self.comparison is None:
            return
        try:
            figure = draw(
                self.controls["plot"].value,
                self.comparison,
                self._colors,
                strategy=self.controls["timeline"].value,
                summary=self.summary,
            )
        except Exception as exc:
            self.figure = None
            shown = PLOTS.get(self.controls["plot"].value, "the plot")
            self.output.outputs = (text_output(f"{shown} cannot be drawn: {exc}"),)
            return
        self.figure = figure
        # Rendering the PNG is most of a redraw's time: skip it when no notebook can show it.
        self.output.outputs = (figure_output(figure),) if _in_notebook() else ()


def _strategy_colors(names: list[str]) -> dict[str, str]:
    from sykit._viz import strategy_colors

    return strategy_colors(names)


def _in_notebook() -> bool:
    """Whether an IPython kernel could display the output (IPython is imported by any kernel)."""
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def _error_html(exc: Exception) -> str:
    message = html.escape(f"{type(exc).__name__}: {exc}")
    return f'<span style="color:#b00020">Run failed, showing the previous results: {message}</span>'


@functools.cache
def playground_class() -> type:
    """``Playground``: the logic on an ipywidgets.VBox, built on first use so ``import sykit``
    stays light."""
    import ipywidgets

    class Playground(_PlaygroundLogic, ipywidgets.VBox):
        __doc__ = _PlaygroundLogic.__doc__

    Playground.__module__ = "sykit.widgets"
    Playground.__qualname__ = "Playground"
    return Playground


#: What each control does, shown when the pointer rests on it.
TOOLTIPS: dict[str, str] = {
    "fault_scale": "Multiplies every model's random fault rates (error answers and non-chat "
    "bodies too) and latency-spike chance; 0 turns every random fault off.",
    "rate_limit": "Adds this probability of a 429 rate limit to every attempt at every model.",
    "unavailable": "Adds this probability of a 503 to every attempt at every model.",
    "timeout": "Adds this probability of a hang until the client deadline to every attempt.",
    "latency_scale": "Every answer takes this many times as long (time to first token ×, "
    "tokens per second ÷).",
    "concurrency": "How many requests are in flight at once.",
    "hedge_after_s": "Seconds before a hedge sends its second copy (strategies that take it).",
    "judge_error_rate": "How often every model's judge gives the wrong verdict (1 − accuracy).",
    "strategies": "The strategies that run (ctrl/cmd-click to pick several).",
    "plot": "The plot drawn below the table (redraws without re-running).",
    "timeline": "The strategy whose timeline is drawn (the plot menu's timeline).",
}


def _controls(
    knobs: Knobs, names: list[str], selected: list[str], plot: str
) -> dict[str, ipywidgets.Widget]:
    import ipywidgets as w

    style = {"description_width": "130px"}
    layout = w.Layout(width="340px")

    def slider(name: str, kind: Any, description: str, **kwargs: Any) -> Any:
        return kind(
            value=getattr(knobs, name),
            description=description,
            continuous_update=False,
            style=style,
            layout=layout,
            tooltip=TOOLTIPS[name],
            **kwargs,
        )

    def menu(name: str, kind: Any, **kwargs: Any) -> Any:
        return kind(
            description=name,
            tooltip=TOOLTIPS[name],
            style={"description_width": "70px"},
            layout=w.Layout(width="330px"),
            **kwargs,
        )

    hedge_max = max(10.0, knobs.hedge_after_s)
    return {
        "fault_scale": slider(
            "fault_scale", w.FloatSlider, "fault rates ×", min=0.0, max=10.0, step=0.1
        ),
        "rate_limit": slider(
            "rate_limit", w.FloatSlider, "+ 429 rate", min=0.0, max=0.5, step=0.01
        ),
        "unavailable": slider(
            "unavailable", w.FloatSlider, "+ 503 rate", min=0.0, max=0.5, step=0.01
        ),
        "timeout": slider("timeout", w.FloatSlider, "+ timeout rate", min=0.0, max=0.3, step=0.01),
        "latency_scale": slider(
            "latency_scale", w.FloatLogSlider, "latency ×", base=2, min=-3, max=3, step=0.25
        ),
        "concurrency": slider(
            "concurrency", w.IntSlider, "concurrency", min=1, max=max(128, knobs.concurrency)
        ),
        "hedge_after_s": slider(
            "hedge_after_s", w.FloatSlider, "hedge after (s)", min=0.1, max=hedge_max, step=0.1
        ),
        "judge_error_rate": slider(
            "judge_error_rate", w.FloatSlider, "judge error rate", min=0.0, max=0.5, step=0.01
        ),
        "strategies": menu(
            "strategies",
            w.SelectMultiple,
            options=names,
            value=tuple(selected),
            rows=min(8, len(names)),
        ),
        "plot": menu(
            "plot", w.Dropdown, options=[(label, key) for key, label in PLOTS.items()], value=plot
        ),
        "timeline": menu(
            "timeline", w.Dropdown, options=names, value=selected[0] if selected else names[0]
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
    hedge_after_s: float | None = None,
    latency_scale: float = 1.0,
    fault_scale: float = 1.0,
    judge_error_rate: float | None = None,
) -> Playground:
    """Controls for the knobs, the summary table and one plot, re-run on every change.

    ``strategies`` maps names to algorithms or to factories taking knob values by name (e.g.
    ``lambda hedge_after_s: sy.strategies.hedge("large", after=hedge_after_s)``); None builds
    :func:`default_strategies` from the host's models (``judge`` names the judge model).
    ``selected`` picks which run first (default: all). The keyword knobs set the controls'
    starting values; ``judge_error_rate=None`` starts from the host's own judge and
    ``hedge_after_s=None`` at the 95th percentile of the strong model's answer time.
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
    models = roles(host, judge)
    if judge_error_rate is None:
        judge_error_rate = round(1.0 - host.judges[models.judge or models.weak].accuracy, 6)
    if hedge_after_s is None:
        hedge_after_s = hedge_delay(host, models.strong)
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
            w.VBox([controls["strategies"], controls["plot"], controls["timeline"]]),
        ]
    )
    pg = playground_class()(children=[panel, status, table, output])
    pg.controls = controls
    pg.table, pg.status, pg.output = table, status, output
    pg._setup(Session(requests, host, lineup, seed))
    pg.rerun()
    if pg.error is not None:
        raise pg.error
    return pg


if TYPE_CHECKING:

    class Playground(_PlaygroundLogic, ipywidgets.VBox):
        pass
