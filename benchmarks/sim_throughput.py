"""Simulation throughput: sykit against a bare simpy model of the same workload, in one process.

Workload (from the engine research): N requests, each races model calls A and B (latency log-normal,
median 0.8 s, sigma 0.6; the loser is cancelled), then makes call C under a 1.0 s timeout; 64
requests in flight. sykit records every attempt and request and builds both DataFrames; the simpy
model records nothing: each call is a process, cancelling is an interrupt, latencies come from one
seeded ``random.Random``.

Printed, all measured in this run, sykit and simpy timed in interleaved pairs (medians):

* requests per wall second for both, and their ratio (sykit / simpy: the median of the pairs'
  ratios, which a noisy machine's drift between pairs does not skew);
* the same for a fixed chain (``fallback_chain(["A", "B"])``, on sykit's fast path) against a simpy
  model of a fallback chain, and the general path's speed on that chain;
* bytes per attempt row of the final attempts frame, and live bytes per attempt while a run holds
  its records (tracemalloc);
* with ``--all-pythons``, the same for every CPython 3.11+ found on the machine (each in a venv of
  its own under ``--venvs``, made on first use with ``pip install -e '.[bench]'``).

    python benchmarks/sim_throughput.py                 # 10,000 requests, 5 pairs
    python benchmarks/sim_throughput.py --requests 2000 --pairs 3
    python benchmarks/sim_throughput.py --all-pythons
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import glob
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import sykit as sy

MEDIAN_S = 0.8
SIGMA = 0.6
TIMEOUT_S = 1.0
IN_FLIGHT = 64
ROOT = Path(__file__).resolve().parents[1]


def _host() -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.LogNormal(MEDIAN_S, sigma=SIGMA), tokens_per_s=1e9)
    profile = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1.0, price_out=1.0)
    return sy.SimHost({"A": profile, "B": profile, "C": profile})


def _requests(n: int) -> list[sy.Request]:
    return [sy.Request("x", id=i, input_tokens=10) for i in range(n)]


async def race_then_timeout(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    _, first = await sy.first(driver.call_model(request, ["A"]), driver.call_model(request, ["B"]))
    await sy.timeout(TIMEOUT_S, driver.call_model(request, ["C"]))
    return sy.answered(first.model, first)


def sykit_workload(n: int) -> tuple[float, sy.Result]:
    host, requests = _host(), _requests(n)
    started = time.perf_counter()
    result = sy.run(race_then_timeout, requests, host=host, concurrency=IN_FLIGHT, progress=False)
    return time.perf_counter() - started, result


def simpy_workload(n: int) -> tuple[float, float]:
    """The same workload in simpy: each call a process, the loser and the late call interrupted."""
    import simpy

    rng = random.Random(1)
    mu = math.log(MEDIAN_S)

    def call(env):
        with contextlib.suppress(simpy.Interrupt):  # an interrupt is a cancellation: work stops
            yield env.timeout(rng.lognormvariate(mu, SIGMA))

    def request(env, slots):
        with slots.request() as slot:
            yield slot
            a, b = env.process(call(env)), env.process(call(env))
            yield a | b
            for loser in (a, b):
                if not loser.triggered:
                    loser.interrupt()
            c = env.process(call(env))
            yield c | env.timeout(TIMEOUT_S)
            if not c.triggered:
                c.interrupt()

    env = simpy.Environment()
    slots = simpy.Resource(env, capacity=IN_FLIGHT)
    started = time.perf_counter()
    for _ in range(n):
        env.process(request(env, slots))
    env.run()
    return time.perf_counter() - started, env.now


def _chain_host() -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.LogNormal(MEDIAN_S, sigma=SIGMA), tokens_per_s=1e9)
    flaky = sy.ModelProfile(
        latency=latency,
        output_tokens=1,
        price_in=1.0,
        price_out=1.0,
        faults=sy.Faults(unavailable=0.05),
    )
    steady = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1.0, price_out=1.0)
    return sy.SimHost({"A": flaky, "B": steady}, policy=sy.HostPolicy(max_retries=0, cooldown_s=0))


def chain_workload(n: int, fast: bool = True) -> float:
    """``fallback_chain(["A", "B"])``: the fast path, or (``fast=False``) the general path."""
    chain = sy.strategies.fallback_chain(["A", "B"])
    if not fast:

        async def general(request, driver):
            return await chain(request, driver)

        algorithm = general
    else:
        algorithm = chain
    host, requests = _chain_host(), _requests(n)
    started = time.perf_counter()
    sy.run(algorithm, requests, host=host, concurrency=IN_FLIGHT, progress=False)
    return time.perf_counter() - started


def simpy_chain(n: int) -> float:
    """A fallback chain in simpy: call A; on a 5 % failure (decided at the start), call B."""
    import simpy

    rng = random.Random(2)
    mu = math.log(MEDIAN_S)

    def request(env, slots):
        with slots.request() as slot:
            yield slot
            failed = rng.random() < 0.05
            yield env.timeout(rng.lognormvariate(mu, SIGMA) if not failed else 0.1)
            if failed:
                yield env.timeout(rng.lognormvariate(mu, SIGMA))

    env = simpy.Environment()
    slots = simpy.Resource(env, capacity=IN_FLIGHT)
    started = time.perf_counter()
    for _ in range(n):
        env.process(request(env, slots))
    env.run()
    return time.perf_counter() - started


def _pairs(pairs: int, mine, theirs) -> tuple[float, float, list[float]]:
    """Median seconds of ``mine`` and ``theirs``, timed in interleaved pairs, and each pair's ratio."""
    a, b = [], []
    for _ in range(pairs):
        gc.collect()
        a.append(mine())
        gc.collect()
        b.append(theirs())
    return (
        statistics.median(a),
        statistics.median(b),
        [round(y / x, 2) for x, y in zip(a, b, strict=True)],
    )


def live_bytes_per_attempt(n: int) -> tuple[float, float]:
    """Memory held by a run's records and state when the simulation ends (before the frames are
    built), per attempt: traced with tracemalloc, less what existed before the run; and the part
    of it the attempt log's arrays hold."""
    from sykit._run import plan as _plan

    host, requests = _host(), _requests(n)
    held: dict[str, int] = {}
    build = _plan.Plan._result

    def measured(self, runner, started):  # type: ignore[no-untyped-def]
        held["bytes"] = tracemalloc.get_traced_memory()[0]
        log = runner.run.log
        arrays = [log.f, log.i, log.h, log.b] + ([log.cache] if log.cache is not None else [])
        held["log"] = sum(a.itemsize * len(a) for a in arrays)
        held["attempts"] = log.held()
        return build(self, runner, started)

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    _plan.Plan._result = measured  # type: ignore[method-assign]
    try:
        result = sy.run(
            race_then_timeout, requests, host=host, concurrency=IN_FLIGHT, progress=False
        )
    finally:
        _plan.Plan._result = build  # type: ignore[method-assign]
        tracemalloc.stop()
    n_attempts = len(result.attempts)
    assert held["attempts"] == n_attempts
    return (held["bytes"] - before) / n_attempts, held["log"] / n_attempts


def measure(n: int, pairs: int) -> dict:
    sykit_workload(min(n, 1000))  # warm up imports and caches
    chain_workload(min(n, 1000))
    sykit_s, simpy_s, ratios = _pairs(
        pairs, lambda: sykit_workload(n)[0], lambda: simpy_workload(n)[0]
    )
    fast_s, simpy_chain_s, chain_ratios = _pairs(
        pairs, lambda: chain_workload(n), lambda: simpy_chain(n)
    )
    general_s = statistics.median(chain_workload(n, fast=False) for _ in range(max(1, pairs // 2)))
    _, result = sykit_workload(n)
    attempts = result.attempts
    live, log_bytes = live_bytes_per_attempt(min(n, 10_000))
    return {
        "python": platform.python_version(),
        "requests": n,
        "pairs": pairs,
        "sykit_s": sykit_s,
        "simpy_s": simpy_s,
        "ratio": statistics.median(ratios),
        "pair_ratios": ratios,
        "chain_fast_s": fast_s,
        "chain_general_s": general_s,
        "simpy_chain_s": simpy_chain_s,
        "chain_ratio": statistics.median(chain_ratios),
        "chain_pair_ratios": chain_ratios,
        "engine": result.engine,
        "attempt_rows": len(attempts),
        "cancelled": int((attempts["status"] == "cancelled").sum()),
        "bytes_per_row": float(attempts.memory_usage(deep=True, index=False).sum() / len(attempts)),
        "live_bytes_per_attempt": live,
        "log_bytes_per_attempt": log_bytes,
        "makespan_s": float(result.requests["end_s"].max()),
    }


def report(m: dict) -> None:
    n = m["requests"]
    print(
        f"Python {m['python']}: {n:,} requests, {IN_FLIGHT} in flight, {m['pairs']} interleaved pairs (medians)"
    )
    print(
        f"  race + timeout  sykit {m['sykit_s']:6.3f} s {n / m['sykit_s']:9,.0f} req/s   "
        f"simpy {m['simpy_s']:6.3f} s {n / m['simpy_s']:9,.0f} req/s   "
        f"ratio sykit/simpy {m['ratio']:.2f} (median of the pairs {m['pair_ratios']})"
    )
    print(
        f"  fixed chain     fast path {m['chain_fast_s']:6.3f} s {n / m['chain_fast_s']:9,.0f} req/s   "
        f"general path {m['chain_general_s']:6.3f} s   simpy {m['simpy_chain_s']:6.3f} s   "
        f"ratio fast/simpy {m['chain_ratio']:.2f}  fast/general {m['chain_general_s'] / m['chain_fast_s']:.2f}"
    )
    print(
        f"  records: {m['attempt_rows']:,} attempt rows ({m['cancelled']:,} cancelled) on the "
        f"{m['engine']} engine; {m['bytes_per_row']:.0f} bytes per attempt row in the frame; "
        f"{m['live_bytes_per_attempt']:.0f} live bytes per attempt during the run, of which the "
        f"attempt log's arrays hold {m['log_bytes_per_attempt']:.0f}"
    )


def _other_pythons() -> list[str]:
    found = {}
    for name in ("python3.11", "python3.12", "python3.13", "python3.14"):
        path = shutil.which(name)
        candidates = [path] if path else []
        candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.1*/bin/{name}")))
        for candidate in candidates:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                version = subprocess.run(
                    [candidate, "-c", "import platform; print(platform.python_version())"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=True,
                ).stdout.strip()
                if version and version != platform.python_version():
                    found.setdefault(version.rsplit(".", 1)[0], candidate)
                break
    return [found[v] for v in sorted(found)]


def _venv_python(python: str, venvs: Path) -> Path:
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    venv = venvs / version
    exe = venv / "bin" / "python"
    if not exe.exists():
        print(f"  making {venv} (pip install -e '.[bench]') …", flush=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(exe), "-m", "pip", "install", "-q", "-e", f"{ROOT}[bench]"], check=True)
    return exe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=5, help="interleaved sykit/simpy pairs")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON line (for --all-pythons)"
    )
    parser.add_argument("--all-pythons", action="store_true", help="also run under other CPythons")
    parser.add_argument("--venvs", default="/tmp/sykit-bench-venvs", help="where their venvs live")
    args = parser.parse_args()
    m = measure(args.requests, args.pairs)
    if args.json:
        print(json.dumps(m))
        return
    report(m)
    if args.all_pythons:
        for python in _other_pythons():
            exe = _venv_python(python, Path(args.venvs))
            out = (
                subprocess.run(
                    [
                        str(exe),
                        __file__,
                        "--requests",
                        str(args.requests),
                        "--pairs",
                        str(args.pairs),
                        "--json",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            report(json.loads(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
