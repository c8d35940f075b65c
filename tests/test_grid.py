"""sy.grid: cells over named axes, identical frames on every executor, failures, Ctrl-C, lost
workers, Parquet output, resume."""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import sys
import threading
import time
import warnings

import cloudpickle
import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st

# Worker processes get this module's functions by value, as they would a notebook's.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

N = 40
PARENT = os.getpid()


def _requests() -> list[sy.Request]:
    return [sy.Request(f"q{i}", id=f"r{i}", input_tokens=100 + i) for i in range(N)]


def _host(failure: float = 0.0) -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.LogNormal(0.4, sigma=0.5), tokens_per_s=200)
    weak = sy.ModelProfile(
        latency=latency, price_in=1e-6, price_out=2e-6, faults=sy.Faults(unavailable=failure)
    )
    strong = sy.ModelProfile(latency=latency, price_in=1e-5, price_out=3e-5)
    return sy.SimHost({"weak": weak, "strong": strong})


def _race_or_chain(mode: str):
    return st.race(["weak", "strong"]) if mode == "race" else st.fallback_chain(["weak", "strong"])


AXES = {"mode": ["race", "chain"], "failure": [0.0, 0.3]}
STRATEGIES = {
    "routed": lambda mode: _race_or_chain(mode),
    "strong only": st.single("strong"),
}


def _grid(**options):
    settings = {
        "host": lambda failure: _host(failure),
        "axes": AXES,
        "seeds": [0, 1],
        "progress": False,
    }
    settings.update(options)
    return sy.grid(STRATEGIES, _requests(), **settings)


@pytest.fixture(scope="module")
def serial() -> sy.Grid:
    return _grid()


# -- the cells ------------------------------------------------------------------------------------
def test_cells_span_the_axes_each_strategy_uses(serial):
    cells = serial.cells
    # routed: 2 modes × 2 failures × 2 seeds; strong only does not use mode: 2 failures × 2 seeds
    assert len(cells) == 8 + 4
    assert (cells["status"] == "done").all()
    strong = cells[cells["strategy"] == "strong only"]
    assert strong["mode"].isna().all() and sorted(strong["failure"].unique()) == [0.0, 0.3]
    assert serial.axes == ("mode", "failure")
    assert list(serial.requests.columns[:4]) == ["strategy", "mode", "failure", "seed"]
    assert len(serial.requests) == 12 * N


def test_a_cells_frames_are_those_of_sy_run(serial):
    direct = sy.run(
        _race_or_chain("chain"),
        _requests(),
        host=_host(0.3),
        seed=1,
        strategy="routed",
        progress=False,
    )
    cell = serial.result("routed", mode="chain", failure=0.3, seed=1)
    pd.testing.assert_frame_equal(cell.requests, direct.requests)
    pd.testing.assert_frame_equal(cell.attempts, direct.attempts)
    requests = serial.requests
    rows = requests[
        (requests["strategy"] == "routed")
        & (requests["mode"] == "chain")
        & (requests["failure"] == 0.3)
        & (requests["seed"] == 1)
    ]
    assert rows["cost_usd"].tolist() == direct.requests["cost_usd"].tolist()


def test_strategies_at_one_axis_value_see_the_same_arrivals():
    """Common random numbers, as in sy.compare: one seed and host axis value, the same arrivals
    for every strategy; another seed, other arrivals."""
    grid = _grid(arrivals=sy.traffic.Poisson(20.0))
    requests = grid.requests
    at = requests[requests["failure"] == 0.3]
    arrivals = {
        key: group["arrival_s"].tolist()
        for key, group in at.groupby(["strategy", "mode", "seed"], dropna=False, observed=True)
    }
    seed0 = [v for (_, _, seed), v in arrivals.items() if seed == 0]
    seed1 = [v for (_, _, seed), v in arrivals.items() if seed == 1]
    assert len(seed0) == 3 and all(v == seed0[0] for v in seed0)
    assert all(v == seed1[0] for v in seed1) and seed1[0] != seed0[0]


def test_summary_from_counts_equals_the_summary_of_the_frames(serial):
    from sykit._results.metrics import summarize

    table = serial.summary()
    assert len(table) == 4 + 2
    assert list(table.columns[:3]) == ["strategy", "mode", "failure"]
    assert (table["seeds"] == 2).all()
    full = summarize(serial.requests, serial.attempts, by=["mode", "failure"])
    pd.testing.assert_frame_equal(
        table.drop(columns=["strategy", "mode", "failure"]).reset_index(drop=True),
        full.drop(columns=["strategy", "mode", "failure"]).reset_index(drop=True),
        check_dtype=False,
    )


def test_comparison_at_fixed_axes(serial):
    cmp = serial.comparison(mode="race", failure=0.0)
    assert cmp.strategies == ["routed", "strong only"]
    assert sorted({r.seed for r in cmp.results}) == [0, 1]
    with pytest.raises(sy.ArgumentError, match="fix"):
        serial.comparison(failure=0.0)
    with pytest.raises(sy.ArgumentError, match="not axes"):
        serial.comparison(nope=1)


def test_result_needs_every_axis(serial):
    with pytest.raises(KeyError, match="2 finished cells"):
        serial.result("routed", mode="race", seed=0)


def test_lines_plot_facets(serial):
    import matplotlib.pyplot as plt

    figure = serial.plot.lines(x="failure", col="mode", y="cost_usd")
    assert len(figure.axes) == 2
    plt.close(figure)
    with pytest.raises(sy.ArgumentError, match="varies within a panel"):
        serial.plot.lines(x="failure")


def test_dict_axis_labels_go_to_the_column():
    grid = sy.grid(
        {"chain": st.fallback_chain(["weak", "strong"])},
        _requests(),
        host=lambda profile: profile,
        axes={"profile": {"calm": _host(0.0), "stormy": _host(0.5)}},
        progress=False,
    )
    assert list(grid.cells["profile"]) == ["calm", "stormy"]
    summary = grid.summary()
    assert summary.set_index("profile").loc["stormy", "fallbacks"] > 0
    assert summary.set_index("profile").loc["calm", "fallbacks"] == 0


# -- executors ------------------------------------------------------------------------------------
def _same(a: sy.Grid, b: sy.Grid) -> None:
    pd.testing.assert_frame_equal(a.requests, b.requests)
    pd.testing.assert_frame_equal(a.attempts, b.attempts)
    columns = ["cell", "strategy", "mode", "failure", "seed", "status", "requests", "attempts"]
    pd.testing.assert_frame_equal(a.cells[columns], b.cells[columns])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pd.testing.assert_frame_equal(a.summary(), b.summary())


def test_process_pool_gives_the_same_frames(serial):
    pooled = _grid(workers=2)
    assert pooled.executor == "2 local worker processes"
    _same(serial, pooled)


def test_any_concurrent_futures_executor(serial):
    with cf.ThreadPoolExecutor(2) as pool:
        threaded = _grid(executor=pool)
    _same(serial, threaded)


def test_dask_local_cluster_gives_the_same_frames(serial):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = _grid(executor=client)
    assert on_dask.executor == "Dask"
    _same(serial, on_dask)


def test_closures_from_the_caller_travel_to_workers():
    share = {"value": 0.25}

    def factory(threshold):  # a closure over local state, as in a notebook cell
        async def algorithm(request, driver):
            model = "strong" if request.input_tokens % 4 < threshold * 4 else "weak"
            return sy.route_to(model, request)

        return algorithm

    kwargs = {
        "host": _host(),
        "axes": {"threshold": [share["value"], 0.75]},
        "progress": False,
    }
    here = sy.grid({"split": factory}, _requests(), **kwargs)
    there = sy.grid({"split": factory}, _requests(), workers=2, **kwargs)
    pd.testing.assert_frame_equal(here.requests, there.requests)
    assert here.summary()["cost_usd"].iloc[0] < here.summary()["cost_usd"].iloc[1]


# -- failures, Ctrl-C, lost workers ---------------------------------------------------------------
def _factory_failing_at(bad: str):
    def factory(mode):
        if mode == bad:
            raise ValueError(f"no such mode {mode}")
        return _race_or_chain(mode)

    return factory


def test_a_failing_cell_reports_its_parameters_and_the_others_run():
    def flaky(mode, failure):
        if mode == "chain" and failure > 0:
            raise ValueError("cannot build this one")
        return _race_or_chain(mode)

    with pytest.warns(UserWarning, match=r"2 of 8 cells failed.*mode='chain', failure=0.3"):
        grid = sy.grid(
            {"flaky": flaky},
            _requests(),
            host=lambda failure: _host(failure),
            axes=AXES,
            seeds=[0, 1],
            progress=False,
        )
    failed = grid.failures
    assert len(failed) == 2 and (failed["status"] == "failed").all()
    assert failed["error"].str.contains("ValueError: cannot build this one").all()
    assert failed["traceback"].str.contains("flaky").all()
    assert (grid.cells["status"] == "done").sum() == 6
    assert len(grid.requests) == 6 * N


def test_warnings_in_cells_become_notes_on_every_executor():
    async def noisy(request, driver):
        warnings.warn("about to route", UserWarning, stacklevel=1)
        return sy.route_to("weak", request)

    for workers in (None, 2):
        with pytest.warns(UserWarning, match="2 of 2 cells raised warnings"):
            grid = sy.grid(
                {"noisy": noisy},
                _requests(),
                host=_host(),
                seeds=[0, 1],
                workers=workers,
                progress=False,
            )
        assert grid.cells["notes"].str.contains("UserWarning: about to route").all()


def _exit_in_worker(mode):
    async def algorithm(request, driver):
        if mode == "chain" and os.getpid() != PARENT:
            os._exit(3)  # the worker process dies
        return sy.route_to("weak", request)

    return algorithm


def test_a_lost_worker_keeps_the_finished_cells():
    with pytest.warns(UserWarning, match="lost with a worker"):
        grid = sy.grid(
            {"dies": _exit_in_worker},
            _requests(),
            host=_host(),
            axes={"mode": ["race", "chain"]},
            seeds=[0, 1, 2],
            workers=1,
            progress=False,
        )
    statuses = dict(zip(grid.cells["cell"], grid.cells["status"], strict=True))
    assert statuses[3] == "lost"  # the first chain cell killed the worker
    assert [statuses[i] for i in (0, 1, 2)] == ["done", "done", "done"]
    assert grid.cells.loc[grid.cells["status"] == "lost", "error"].str.contains("Broken").all()
    assert len(grid.requests) == 3 * N


def test_ctrl_c_in_a_serial_grid_returns_the_finished_cells():
    calls = {"n": 0}

    def factory(mode):
        calls["n"] += 1
        if calls["n"] == 4:  # the third cell (the first call checks the grid): Ctrl-C

            async def interrupted(request, driver):
                raise KeyboardInterrupt

            return interrupted
        return _race_or_chain(mode)

    with pytest.warns(UserWarning, match=r"interrupted: 2 of 4 cells finished"):
        grid = sy.grid(
            {"f": factory},
            _requests(),
            host=_host(),
            axes={"mode": ["race", "chain"]},
            seeds=[0, 1],
            progress=False,
        )
    assert list(grid.cells["status"]) == ["done", "done", "missing", "missing"]
    assert len(grid.requests) == 2 * N


def test_ctrl_c_with_a_pool_stops_the_workers_and_keeps_what_finished(sigint_raises):
    async def slow(request, driver):
        time.sleep(0.02)  # real time, so Ctrl-C arrives while cells run
        return sy.route_to("weak", request)

    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    started = time.perf_counter()
    timer.start()
    try:
        with pytest.warns(UserWarning, match="interrupted"):
            grid = sy.grid(
                {"slow": slow},
                _requests(),
                host=_host(),
                seeds=list(range(40)),
                workers=2,
                progress=False,
            )
    finally:
        timer.cancel()
    assert time.perf_counter() - started < 10  # not the 40 cells × 0.8 s it would take
    statuses = set(grid.cells["status"])
    assert "missing" in statuses and statuses <= {"done", "missing"}
    done = grid.cells[grid.cells["status"] == "done"]
    assert len(grid.requests) == len(done) * N


# -- output folder --------------------------------------------------------------------------------
def test_out_folder_holds_parquet_by_axes_and_reads_back_the_same(serial, tmp_path):
    out = tmp_path / "grid"
    on_disk = _grid(out=out, workers=2)
    _same(serial, on_disk)
    folder = out / "requests"
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet"))
    assert len(files) == 12
    assert any(f.startswith("strategy-routed/mode-race/failure-0.3/seed-1/") for f in files)
    assert any(f.startswith("strategy-strong%20only/failure-0.0/seed-0/") for f in files)


def test_summary_reads_no_attempt_rows(serial, tmp_path, monkeypatch):
    from sykit._grid import store

    on_disk = _grid(out=tmp_path / "grid")
    read = store.read_cell

    def requests_only(path, record, kind, columns=None):
        assert kind == "requests", "the summary read an attempts file"
        return read(path, record, kind, columns)

    monkeypatch.setattr("sykit._grid.result.read_cell", requests_only)
    pd.testing.assert_frame_equal(on_disk.summary(), serial.summary())


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # dask's own use of pandas
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_dask_dataframe_reads_the_folder_directly(tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    out = tmp_path / "grid"
    grid = _grid(out=out)
    frame = dd.read_parquet(out / "requests").compute()
    assert len(frame) == len(grid.requests)
    assert {"strategy", "mode", "failure", "seed"} <= set(frame.columns)
    assert frame.loc[frame["strategy"] == "strong only", "mode"].isna().all()
    totals = frame.groupby(["strategy", "failure"])["cost_usd"].sum()
    expected = grid.requests.groupby(["strategy", "failure"], observed=True)["cost_usd"].sum()
    assert totals.sort_index().tolist() == pytest.approx(expected.sort_index().tolist())


def test_rerun_skips_finished_cells_and_extends(tmp_path):
    out = tmp_path / "grid"
    built = {"n": 0}

    def counted(mode):
        built["n"] += 1
        return _race_or_chain(mode)

    kwargs = {"host": _host(), "axes": {"mode": ["race", "chain"]}, "progress": False, "out": out}
    first = sy.grid({"c": counted}, _requests(), seeds=[0], **kwargs)
    calls_first = built["n"]
    with pytest.warns(UserWarning, match="2 of 4 cells were read"):
        second = sy.grid({"c": counted}, _requests(), seeds=[0, 1], **kwargs)
    assert built["n"] - calls_first == 2 + 1  # the two new cells, and the upfront check
    assert list(second.cells["resumed"]) == [True, False, True, False]
    pd.testing.assert_frame_equal(
        second.requests[second.requests["seed"] == 0].reset_index(drop=True),
        first.requests,
    )
    again = sy.grid({"c": counted}, _requests(), seeds=[0, 1], overwrite=True, **kwargs)
    assert not again.cells["resumed"].any()


def test_a_cell_whose_record_is_missing_runs_again(tmp_path):
    out = tmp_path / "grid"
    kwargs = {"host": _host(), "seeds": [0, 1], "progress": False, "out": out}
    sy.grid({"w": st.single("weak")}, _requests(), **kwargs)
    records = sorted((out / "cells").glob("*.json"))
    records[0].unlink()  # as if the worker died between the files and the record
    with pytest.warns(UserWarning, match="1 of 2 cells were read"):
        again = sy.grid({"w": st.single("weak")}, _requests(), **kwargs)
    assert sorted(again.cells["resumed"]) == [False, True]


def test_out_folder_refuses_foreign_content_and_other_requests(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(sy.ArgumentError, match="not empty"):
        sy.grid({"w": st.single("weak")}, _requests(), host=_host(), out=foreign, progress=False)
    out = tmp_path / "grid"
    sy.grid({"w": st.single("weak")}, _requests(), host=_host(), out=out, progress=False)
    with pytest.raises(sy.ArgumentError, match="other requests"):
        sy.grid({"w": st.single("weak")}, _requests()[:5], host=_host(), out=out, progress=False)


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("axes", "error", "match"),
    [
        ({"not an identifier": [1]}, sy.ArgumentError, "identifiers"),
        ({"status": [1]}, sy.ArgumentError, "already a column"),
        ({"seed": [1]}, sy.ArgumentError, "already a column"),
        ({"mode": []}, sy.ArgumentError, "no values"),
        ({"mode": ["race", "race"]}, sy.ArgumentError, "repeats"),
        ({"mode": "race"}, sy.ArgumentTypeError, "list of values"),
        ({"mode": [object()]}, sy.ArgumentTypeError, "dict of label"),
        ({"mode": [float("nan")]}, sy.ArgumentError, "finite"),
        ([("mode", ["race"])], sy.ArgumentTypeError, "dict of axis name"),
    ],
)
def test_bad_axes_are_refused(axes, error, match):
    with pytest.raises(error, match=match):
        sy.grid(STRATEGIES, _requests(), host=_host(), axes=axes, progress=False)


ONE_MODE = {"mode": ["race"]}


def test_bad_bindings_are_refused_before_anything_runs():
    requests = _requests()
    with pytest.raises(sy.ArgumentTypeError, match="'mood' is not; axes: \\['mode'\\]"):
        sy.grid(
            {"r": lambda mood: _race_or_chain(mood)},
            requests,
            host=_host(),
            axes={"mode": ["race"]},
            progress=False,
        )
    with pytest.raises(sy.ArgumentError, match="used by nothing"):
        sy.grid(
            {"w": st.single("weak")},
            requests,
            host=_host(),
            axes={"mode": ["race"]},
            progress=False,
        )
    with pytest.raises(sy.ArgumentTypeError, match="did not return an algorithm"):
        sy.grid(
            {"r": lambda mode: "weak"},
            requests,
            host=_host(),
            axes={"mode": ["race"]},
            progress=False,
        )
    with pytest.raises(sy.ArgumentTypeError, match="host must be"):
        sy.grid(
            {"r": lambda mode: _race_or_chain(mode)},
            requests,
            host=lambda mode: None,
            axes={"mode": ["race"]},
            progress=False,
        )
    with pytest.raises(sy.ArgumentError, match="not both"):
        sy.grid(STRATEGIES, requests, host=_host(), workers=2, executor=object(), axes=ONE_MODE)
    with pytest.raises(sy.ArgumentError, match="≥ 1"):
        sy.grid(STRATEGIES, requests, host=_host(), workers=0, axes=ONE_MODE)
    with pytest.raises(sy.ArgumentTypeError, match="executor must be"):
        sy.grid(STRATEGIES, requests, host=_host(), executor="dask", axes=ONE_MODE)
    with pytest.raises(sy.ArgumentError, match="seeds must be distinct"):
        sy.grid(STRATEGIES, requests, host=_host(), seeds=[1, 1], axes=ONE_MODE)


def test_an_unpicklable_grid_is_refused_with_a_reason():
    lock = threading.Lock()

    async def holds_a_lock(request, driver):
        with lock:
            return sy.route_to("weak", request)

    with pytest.raises(sy.ArgumentError, match="cannot be sent to workers"):
        sy.grid({"locked": holds_a_lock}, _requests(), host=_host(), workers=2, progress=False)
    serial = sy.grid({"locked": holds_a_lock}, _requests(), host=_host(), progress=False)
    assert (serial.cells["status"] == "done").all()


def test_labels_of_any_text_make_usable_folders(tmp_path):
    labels = ["a/b", "..", "", "ünïcode ✓", "x" * 500, "%2F"]
    grid = sy.grid(
        {"w": lambda tag: st.single("weak")},
        _requests(),
        host=_host(),
        axes={"tag": labels},
        out=tmp_path / "grid",
        progress=False,
    )
    assert (grid.cells["status"] == "done").all()
    assert list(grid.requests.drop_duplicates("tag")["tag"]) == labels
    folders = {p.parent.parent.name for p in (tmp_path / "grid" / "requests").rglob("*.parquet")}
    assert len(folders) == len(labels) and all(len(f) <= 100 for f in folders)


def test_an_output_folder_that_cannot_be_written_fails_the_cells(tmp_path, monkeypatch):
    from sykit._grid import store

    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(store, "write_cell", refuse)
    with pytest.warns(UserWarning, match="2 of 2 cells failed.*read-only"):
        grid = sy.grid(
            {"w": st.single("weak")},
            _requests(),
            host=_host(),
            seeds=[0, 1],
            out=tmp_path / "grid",
            progress=False,
        )
    assert (grid.cells["status"] == "failed").all()


def test_progress_counts_cells_and_failures(monkeypatch):
    seen = {"updates": 0, "postfix": [], "total": None, "unit": None}

    class Bar:
        def update(self, n=1):
            seen["updates"] += n

        def set_postfix(self, **values):
            seen["postfix"].append(values)

        def close(self):
            seen["closed"] = True

    def bar(total, progress, description, unit="req"):
        seen.update(total=total, unit=unit)
        return Bar()

    monkeypatch.setattr("sykit._grid.plan.make_progress", bar)

    def flaky(mode):
        if mode == "chain":
            raise ValueError("no")
        return _race_or_chain(mode)

    with pytest.warns(UserWarning, match="cells failed"):
        sy.grid(
            {"f": flaky}, _requests(), host=_host(), axes={"mode": ["race", "chain"]}, seeds=[0, 1]
        )
    assert seen["total"] == 4 and seen["unit"] == "cell" and seen["updates"] == 4
    assert seen["postfix"][-1] == {"failed": 2} and seen["closed"]


# -- compare and sweep on an executor -------------------------------------------------------------
def test_compare_on_workers_equals_compare():
    lineup = {"race": st.race(["weak", "strong"]), "chain": st.fallback_chain(["weak", "strong"])}
    here = sy.compare(lineup, _requests(), host=_host(0.3), seeds=[0, 1], progress=False)
    there = sy.compare(
        lineup, iter(_requests()), host=_host(0.3), seeds=[0, 1], workers=2, progress=False
    )
    assert [(r.strategy, r.seed) for r in there.results] == [
        (r.strategy, r.seed) for r in here.results
    ]
    pd.testing.assert_frame_equal(here.requests, there.requests)
    pd.testing.assert_frame_equal(here.attempts, there.attempts)
    with pytest.raises(sy.ArgumentError, match="spill"):
        sy.compare(lineup, _requests(), host=_host(), workers=2, spill="x")


def test_compare_on_workers_raises_a_failed_run():
    async def broken(request, driver):
        raise ValueError("no route")

    with pytest.raises(sy.SykitError, match=r"failed.*'bad' seed 0.*no route"):
        sy.compare(
            {"bad": broken, "ok": st.single("weak")},
            _requests(),
            host=_host(),
            workers=2,
            strict=True,
            progress=False,
        )


def test_sweep_on_workers_equals_sweep():
    def make(share):
        return st.weighted_random({"weak": 1 - share, "strong": share})

    kwargs = {"host": _host(), "weak": "weak", "strong": "strong", "progress": False}
    here = sy.sweep(make, [0.2, 0.8], _requests(), **kwargs)
    there = sy.sweep(make, [0.2, 0.8], _requests(), workers=2, **kwargs)
    pd.testing.assert_frame_equal(here.curve, there.curve)
