"""Simulation throughput: sykit against a bare simpy model of the same workload, in one process.

Workload (from the engine research): N requests, each races model calls A and B (latency log-normal,
median 0.8 s, sigma 0.6; the loser is cancelled), then makes call C under a 1.0 s timeout; 64
requests in flight. sykit records every attempt; the simpy model records nothing: each call is a
process, cancelling is an interrupt, latencies come from one seeded ``random.Random``.

Prints requests per wall second for both, their ratio (sykit / simpy; the goal is ≥ 0.5), and the
bytes per attempt row of the final DataFrame (goal ≤ 150). For reference it also times the same
workload written as bare asyncio on sykit's virtual-time loop, which bounds what any asyncio-based
engine can reach.

    python benchmarks/sim_throughput.py            # 10,000 requests
    python benchmarks/sim_throughput.py --requests 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import random
import statistics
import time

import sykit as sy

MEDIAN_S = 0.8
SIGMA = 0.6
TIMEOUT_S = 1.0
IN_FLIGHT = 64


def sykit_workload(n: int) -> tuple[float, sy.Result]:
    latency = sy.Latency(ttft=sy.LogNormal(MEDIAN_S, sigma=SIGMA), tokens_per_s=1e9)
    profile = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1.0, price_out=1.0)
    host = sy.SimHost({"A": profile, "B": profile, "C": profile})

    async def race_then_timeout(request, driver):
        _, first = await sy.first(
            driver.call_model(request, ["A"]), driver.call_model(request, ["B"])
        )
        await sy.timeout(TIMEOUT_S, driver.call_model(request, ["C"]))
        return sy.answered(first.model, first)

    requests = [sy.Request("x", id=i, input_tokens=10) for i in range(n)]
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


def asyncio_floor(n: int) -> float:
    """The same workload as bare asyncio on sykit's virtual-time loop: no driver, no records.

    Not a goal, a reference: it shows how much of sykit's time is the asyncio machinery itself.
    """
    import asyncio

    from sykit._engine import run as run_virtual

    rng = random.Random(1)
    mu = math.log(MEDIAN_S)

    async def call():
        await asyncio.sleep(rng.lognormvariate(mu, SIGMA))

    async def request(slots):
        try:
            a, b = asyncio.ensure_future(call()), asyncio.ensure_future(call())
            _, pending = await asyncio.wait({a, b}, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await asyncio.wait(pending)
            try:
                async with asyncio.timeout(TIMEOUT_S):
                    await call()
            except TimeoutError:
                pass
        finally:
            slots.release()

    async def main():
        slots = asyncio.Semaphore(IN_FLIGHT)
        async with asyncio.TaskGroup() as group:
            for _ in range(n):
                await slots.acquire()
                group.create_task(request(slots))

    started = time.perf_counter()
    run_virtual(main)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; medians are reported")
    args = parser.parse_args()
    n = args.requests

    sykit_times, simpy_times, floor_times = [], [], []
    result = None
    for _ in range(args.repeat):  # interleaved, so machine noise hits both alike
        gc.collect()
        elapsed, result = sykit_workload(n)
        sykit_times.append(elapsed)
        gc.collect()
        simpy_times.append(simpy_workload(n)[0])
        gc.collect()
        floor_times.append(asyncio_floor(n))
    assert result is not None
    sykit_s, simpy_s = statistics.median(sykit_times), statistics.median(simpy_times)
    floor_s = statistics.median(floor_times)
    attempts = result.attempts
    bytes_per_row = attempts.memory_usage(deep=True).sum() / len(attempts)
    cancelled = int((attempts["status"] == "cancelled").sum())
    print(f"requests: {n}, in flight: {IN_FLIGHT}, runs: {args.repeat} (medians)")
    print(
        f"sykit : {sykit_s:7.2f} s  {n / sykit_s:9,.0f} requests/s  ({len(attempts):,} attempt rows, {cancelled:,} cancelled)"
    )
    print(f"simpy : {simpy_s:7.2f} s  {n / simpy_s:9,.0f} requests/s  (no records)")
    print(
        f"bare asyncio on the virtual loop: {floor_s:5.2f} s  {n / floor_s:9,.0f} requests/s  (no driver, no records)"
    )
    print(f"ratio sykit/simpy (requests per wall second): {simpy_s / sykit_s:.2f}   goal ≥ 0.5")
    print(
        f"ratio bare-asyncio/simpy: {simpy_s / floor_s:.2f}   (the engine's own ceiling for that ratio)"
    )
    print(f"attempt row size in the DataFrame: {bytes_per_row:.0f} bytes   goal ≤ 150")
    print(f"virtual makespan: {result.requests['end_s'].max():.1f} s")


if __name__ == "__main__":
    main()
