"""How far ``sy.Capacity``'s rate-at-service-start approximation is from exact processor sharing.

Workload: an M/M/1 processor-sharing server — one model, ``Capacity(slots=∞-ish, slowdown=1)``
(one sequence's rate shared by every call in service), Poisson arrivals at rate ρ, exponential
work with a mean of 1 s at full rate (100 tokens/s, a mean of 100 output tokens, no time to first
token). ``sharing="at_start"`` sets each call's rate once, when its service starts;
``sharing="exact"``, as processor sharing does, re-times every call at each arrival and departure.

For each utilisation ρ the script runs sykit with each sharing rule (``Capacity(sharing=...)``:
``"at_start"``, the default, and ``"exact"``), replays **the same arrivals and the same work**
(read back from sykit's records) through an exact processor-sharing simulation written here (the
reference), and prints the M/M/1-PS mean, 1 / (1 − ρ), the reference's mean and p99, each rule's
error against them, and the wall time of an exact run over an at_start one.
Usage: ``python benchmarks/processor_sharing.py [--requests N] [--seeds K]``.
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import time

import numpy as np

import sykit as sy

RHOS = (0.3, 0.5, 0.7, 0.8, 0.9)


def host(sharing: str = "at_start") -> sy.SimHost:
    profile = sy.ModelProfile(
        latency=sy.Latency(ttft=0.0, tokens_per_s=100),
        output_tokens=sy.dists.Exponential(100),
        capacity=sy.Capacity(slots=100_000, slowdown=1, sharing=sharing),
    )
    return sy.SimHost({"m": profile}, policy=sy.HostPolicy(max_retries=0, timeout_s=1e9))


def exact_ps(arrivals: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Response times under exact processor sharing of one unit of rate: every call in service
    advances at 1/n while n are in service (virtual-work clock: a call ends when the shared
    attained service reaches its arrival's attained service plus its work)."""
    order = np.argsort(arrivals, kind="stable")
    response = np.empty(len(arrivals))
    ends: list[tuple[float, int]] = []  # (attained service at which the call ends, index)
    attained = 0.0  # service each call in service has received since the clock started
    now = 0.0
    for i in [*order.tolist(), None]:  # None: after the last arrival, every call departs
        arrival = math.inf if i is None else arrivals[i]
        while ends and now + (ends[0][0] - attained) * len(ends) <= arrival:
            finish, j = heapq.heappop(ends)
            now += (finish - attained) * (len(ends) + 1)
            attained = finish
            response[j] = now - arrivals[j]
        if i is None:
            return response
        if ends:
            attained += (arrival - now) / len(ends)
        now = arrival
        heapq.heappush(ends, (attained + work[i], int(i)))
    raise AssertionError("not reached: the loop returns after its last step")


def measure(rho: float, n: int, seed: int) -> np.ndarray:
    """Per sharing rule (at_start, exact): mean and p99 response time, and the reference's
    mean and p99 on the same arrivals and work, and the run's wall time."""
    requests = [sy.Request(f"q{i}", id=i, input_tokens=1) for i in range(n)]
    rows = []
    for sharing in ("at_start", "exact"):
        began = time.perf_counter()
        result = sy.run(
            sy.strategies.single("m"),
            requests,
            host=host(sharing),
            arrivals=sy.traffic.Poisson(rho),
            seed=seed,
            progress=False,
        )
        took = time.perf_counter() - began
        frame = result.requests.sort_values("request_id")
        attempts = result.attempts.sort_values("request_id")
        arrivals = frame["arrival_s"].to_numpy(float)
        latency = frame["latency_s"].to_numpy(float)
        work = attempts["output_tokens"].to_numpy(float) / 100.0
        exact = exact_ps(arrivals, work)
        warm = slice(n // 10, None)  # leave out the first tenth: the server starts empty
        rows.append(
            [
                latency[warm].mean(),
                exact[warm].mean(),
                np.quantile(latency[warm], 0.99),
                np.quantile(exact[warm], 0.99),
                took,
            ]
        )
    return np.array(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.requests:,} requests × {args.seeds} seeds")
    print(
        f"{'ρ':>4}  {'M/M/1-PS':>8}  {'ref mean':>8}  {'at_start':>8}  {'exact':>7}"
        f"  {'ref p99':>7}  {'at_start':>8}  {'exact':>7}  {'time exact/at_start':>19}"
    )
    for rho in RHOS:
        runs = np.array([measure(rho, args.requests, seed) for seed in range(args.seeds)])
        at_start, exact = runs.mean(axis=0)
        ref_mean, ref_p99 = at_start[1], at_start[3]
        assert np.allclose(exact[[1, 3]], [ref_mean, ref_p99])  # the same arrivals and work
        print(
            f"{rho:4.1f}  {1 / (1 - rho):8.2f}  {ref_mean:8.2f}  {at_start[0] / ref_mean - 1:+8.1%}"
            f"  {exact[0] / ref_mean - 1:+7.1%}  {ref_p99:7.1f}  {at_start[2] / ref_p99 - 1:+8.1%}"
            f"  {exact[2] / ref_p99 - 1:+7.1%}  {exact[4] / at_start[4]:19.2f}"
        )


if __name__ == "__main__":
    main()
