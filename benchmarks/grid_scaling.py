"""Grid scaling: how much faster a grid runs on 1, 2, … worker processes and on Dask, what each
cell costs on top of its own run, and the smallest cell worth sending to a worker.

Workload: a grid of ``--cells`` cells, each a run of ``--requests`` requests of a fallback chain
with a flaky first model (two strategies × fault levels × seeds). Printed, all measured in this run:

Each figure is the fastest of ``--repeats`` runs.

* serial wall time, then for 1, 2, … workers (up to the CPUs this process may use) the wall time
  of the same grid and its speed-up over serial (pool start-up included, as a user sees it);
* per-cell overhead of the local pool and of Dask: (1-worker wall time − serial − start-up) per
  cell, in ms and as a fraction of a cell's serial time (shipping the grid, scheduling, pickling
  the frames back);
* for cell sizes from a few requests up, serial against all CPUs on a grid of the same number of
  cells: the speed-up, and the smallest size at which the pool is faster.

Measured on the project's 2-core reference machine (a noisy one: figures moved by ±0.2× between
runs). 96 cells of 1,000 requests (39 ms each): 2 workers 1.62× serial, 1 worker 0.93×; local
pool 2.5 ms per cell (6 %), Dask LocalCluster 7 ms (18 %) and 0.9–1.1 s to start a cluster.
64 cells of 500 requests on CPython 3.11 / 3.12 / 3.13: 2 workers 1.35–1.69× / 1.39× / 1.50×.
With cells grouped into tasks, a 2-worker pool beat serial from 5–50 requests per cell
(the threshold itself is within the noise).

    python benchmarks/grid_scaling.py                    # 96 cells of 1,000 requests
    python benchmarks/grid_scaling.py --cells 48 --requests 100 --no-dask
    python benchmarks/grid_scaling.py --all-pythons
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import sykit as sy
from sykit import strategies as st

HERE = Path(__file__).resolve().parent


def _host(outage: float) -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.LogNormal(0.8, sigma=0.6), tokens_per_s=80)
    weak = sy.ModelProfile(
        latency=latency, price_in=1e-6, price_out=2e-6, faults=sy.Faults(unavailable=outage)
    )
    strong = sy.ModelProfile(latency=latency, price_in=1e-5, price_out=3e-5)
    return sy.SimHost({"weak": weak, "strong": strong})


def _grid_args(cells: int, requests: int) -> dict:
    seeds = max(1, cells // 8)
    return {
        "strategies": {
            "chain": st.fallback_chain(["weak", "strong"]),
            "race": st.race(["weak", "strong"]),
        },
        "requests": [sy.Request(f"q{i}", id=i, input_tokens=200) for i in range(requests)],
        "host": _host,
        "axes": {"outage": [0.0, 0.05, 0.1, 0.2]},
        "seeds": list(range(seeds)),
        "progress": False,
    }


REPEATS = 3


def _timed(**options) -> float:
    """The fastest of :data:`REPEATS` runs (the machine's noise only ever adds time)."""
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grid = sy.grid(**options)
        times.append(time.perf_counter() - started)
        assert (grid.cells["status"] == "done").all(), grid.failures
    return min(times)


def _pool_startup(workers: int) -> float:
    """Wall time of a grid with one tiny cell: starting the pool and shipping the grid."""
    args = _grid_args(1, 1)
    args["axes"] = {"outage": [0.0]}
    args["strategies"] = {"chain": args["strategies"]["chain"]}
    args["seeds"] = [0]
    serial = _timed(**args)
    return _timed(**args, workers=workers) - serial


def measure(cells: int, requests: int, dask: bool, sizes: list[int]) -> dict:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpus = cpus or 1
    args = _grid_args(cells, requests)
    n = 2 * 4 * len(args["seeds"])
    _timed(**_grid_args(8, 20))  # warm up imports
    serial = _timed(**args)
    by_workers = {w: _timed(**args, workers=w) for w in range(1, cpus + 1)}
    startup = _pool_startup(1)
    cell_s = serial / n
    pool_overhead = (by_workers[1] - serial - startup) / n
    result = {
        "python": platform.python_version(),
        "cpus": cpus,
        "cells": n,
        "requests": requests,
        "serial_s": serial,
        "workers_s": by_workers,
        "pool_startup_s": startup,
        "cell_ms": 1000 * cell_s,
        "pool_overhead_ms": 1000 * pool_overhead,
        "pool_overhead_share": pool_overhead / cell_s,
    }
    if dask:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            result["dask"] = None
        else:
            started = time.perf_counter()
            with (
                LocalCluster(
                    n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                Client(cluster) as client,
            ):
                up = time.perf_counter() - started
                one = _timed(**args, executor=client)
            with (
                LocalCluster(
                    n_workers=cpus, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                Client(cluster) as client,
            ):
                full = _timed(**args, executor=client)
            overhead = (one - serial) / n
            result["dask"] = {
                "cluster_start_s": up,
                "one_worker_s": one,
                "all_workers_s": full,
                "overhead_ms": 1000 * overhead,
                "overhead_share": overhead / cell_s,
            }
    sweep = []
    for size in sizes:
        small = _grid_args(cells, size)
        one = _timed(**small)
        many = _timed(**small, workers=cpus)
        sweep.append({"requests": size, "serial_s": one, "pool_s": many, "speedup": one / many})
    result["sizes"] = sweep
    paying = [s["requests"] for s in sweep if s["speedup"] > 1.0]
    result["smallest_paying"] = min(paying) if paying else None
    return result


def report(m: dict) -> None:
    n = m["cells"]
    print(
        f"Python {m['python']}: {n} cells of {m['requests']} requests, {m['cpus']} CPUs; "
        f"a cell takes {m['cell_ms']:.1f} ms serially"
    )
    print(f"  serial            {m['serial_s']:7.2f} s")
    for workers, seconds in m["workers_s"].items():
        print(
            f"  {int(workers)} worker(s)       {seconds:7.2f} s   speed-up {m['serial_s'] / seconds:.2f}×"
        )
    print(
        f"  local pool: start-up {m['pool_startup_s']:.2f} s; per cell {m['pool_overhead_ms']:.2f} ms "
        f"= {100 * m['pool_overhead_share']:.1f} % of a cell"
    )
    dask = m.get("dask")
    if dask:
        print(
            f"  Dask LocalCluster: start {dask['cluster_start_s']:.2f} s; 1 worker "
            f"{dask['one_worker_s']:.2f} s, {m['cpus']} workers {dask['all_workers_s']:.2f} s "
            f"(speed-up {m['serial_s'] / dask['all_workers_s']:.2f}×); per cell "
            f"{dask['overhead_ms']:.2f} ms = {100 * dask['overhead_share']:.1f} % of a cell"
        )
    elif "dask" in m:
        print("  Dask: not installed (pip install 'sykit[dask]')")
    print(f"  cell size → speed-up of {m['cpus']} workers over serial ({n} cells):")
    for row in m["sizes"]:
        print(
            f"    {row['requests']:5d} requests: serial {row['serial_s']:6.2f} s, pool "
            f"{row['pool_s']:6.2f} s, {row['speedup']:.2f}×"
        )
    smallest = m["smallest_paying"]
    print(
        "  the pool pays off from "
        + (f"{smallest} requests per cell" if smallest else "none of these sizes")
    )


def main() -> None:
    global REPEATS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=96)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--sizes", default="5,20,50,100,300,1000", help="cell sizes to try")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (the fastest)")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--all-pythons", action="store_true", help="also run under other CPythons")
    parser.add_argument("--venvs", default="/tmp/sykit-bench-venvs")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    REPEATS = max(1, args.repeats)
    m = measure(args.cells, args.requests, not args.no_dask, sizes)
    if args.json:
        print(json.dumps(m))
        return
    report(m)
    if args.all_pythons:
        sys.path.insert(0, str(HERE))
        from sim_throughput import _other_pythons, _venv_python

        for python in _other_pythons():
            exe = _venv_python(python, Path(args.venvs))
            command = [str(exe), __file__, "--json", "--cells", str(args.cells)]
            command += ["--requests", str(args.requests), "--sizes", args.sizes]
            command += ["--repeats", str(REPEATS)]
            if args.no_dask:
                command.append("--no-dask")
            out = subprocess.run(command, capture_output=True, text=True, check=True)
            report(json.loads(out.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
