"""How long a playground update takes: 1,000 requests × 5 strategies on the demo host.

An update is what happens when a control moves: re-run the strategies that depend on it, summarise,
draw the plot and, in a notebook, render it to PNG. Printed, per kind of change and plot (medians of
``--repeats`` updates, wall seconds):

* ``all re-run``: a knob every strategy depends on (concurrency);
* ``hedge only``: the hedge delay, which only the hedge strategy depends on;
* each with and without the PNG a notebook renders (``png`` columns).

    python benchmarks/playground_update.py
    python benchmarks/playground_update.py --requests 2000 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import matplotlib

matplotlib.use("Agg")

import sykit as sy
from sykit._cli.main import demo_host, demo_requests
from sykit._playground import ui


def _median_update(pg: Any, changes: list[dict[str, Any]]) -> float:
    times = []
    for change in changes:
        started = time.perf_counter()
        pg.set(**change)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    host = demo_host()
    default = sy.widgets.default_strategies(host)
    names = ["small only", "large only", "cascade small>large", "race small|large", "hedge large"]
    lineup = {name: default[name] for name in names}
    print(
        f"playground update: {args.requests} requests × {len(lineup)} strategies "
        f"({', '.join(lineup)}), median of {args.repeats}"
    )
    print(f"{'plot':<14}{'all re-run':>12}{'+ png':>9}{'hedge only':>12}{'+ png':>9}")
    for plot in sy.widgets.PLOTS:
        row = []
        for png in (False, True):
            ui._in_notebook = lambda png=png: png  # type: ignore[assignment]
            pg = sy.widgets.playground(demo_requests(args.requests), host, lineup, plot=plot)
            concurrency = [{"concurrency": 8 + i} for i in range(args.repeats)]
            delays = [{"hedge_after_s": 3.0 + i} for i in range(args.repeats)]
            row.append((_median_update(pg, concurrency), _median_update(pg, delays)))
        (every, hedge_only), (every_png, hedge_png) = row
        print(f"{plot:<14}{every:>11.2f}s{every_png:>8.2f}s{hedge_only:>11.2f}s{hedge_png:>8.2f}s")


if __name__ == "__main__":
    main()
