"""How far ``sy.Capacity``'s rate-at-service-start approximation is from exact processor sharing.

Workload: an M/M/1 processor-sharing server — one model, ``Capacity(slots=∞-ish, slowdown=1)``
(one sequence's rate shared by every call in service), Poisson arrivals at rate ρ, exponential
work with a mean of 1 s at full rate (100 tokens/s, a mean of 100 output tokens, no time to first
token). sykit sets each call's rate once, when its service starts; exact processor sharing
re-times every call at each arrival and departure.

For each utilisation ρ the script runs sykit, then replays **the same arrivals and the same work**
(read back from sykit's records) through an exact processor-sharing simulation written here, and
prints the mean and p99 response time of both, their ratio, and the M/M/1-PS mean, 1 / (1 − ρ).
Usage: ``python benchmarks/processor_sharing.py [--requests N] [--seeds K]``.
"""

from __future__ import annotations

import argparse
import heapq
import math
import os

import numpy as np

import sykit as sy

RHOS = (0.3, 0.5, 0.7, 0.8, 0.9)


def host() -> sy.SimHost:
    profile = sy.ModelProfile(
        latency=sy.Latency(ttft=0.0, tokens_per_s=100),
        output_tokens=sy.dists.Exponential(100),
        capacity=sy.Capacity(slots=100_000, slowdown=1),
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


def measure(rho: float, n: int, seed: int) -> tuple[float, float, float, float]:
    """(sykit mean, exact mean, sykit p99, exact p99) response times at utilisation ``rho``."""
    requests = [sy.Request(f"q{i}", id=i, input_tokens=1) for i in range(n)]
    result = sy.run(
        sy.strategies.single("m"),
        requests,
        host=host(),
        arrivals=sy.traffic.Poisson(rho),
        seed=seed,
        progress=False,
    )
    frame = result.requests.sort_values("request_id")
    attempts = result.attempts.sort_values("request_id")
    arrivals = frame["arrival_s"].to_numpy(float)
    latency = frame["latency_s"].to_numpy(float)
    work = attempts["output_tokens"].to_numpy(float) / 100.0
    exact = exact_ps(arrivals, work)
    warm = slice(n // 10, None)  # leave out the first tenth: the server starts empty
    return (
        float(latency[warm].mean()),
        float(exact[warm].mean()),
        float(np.quantile(latency[warm], 0.99)),
        float(np.quantile(exact[warm], 0.99)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.requests:,} requests × {args.seeds} seeds")
    print(
        f"{'ρ':>4}  {'M/M/1-PS mean':>13}  {'exact mean':>10}  {'sykit mean':>10}  {'mean err':>8}"
        f"  {'exact p99':>9}  {'sykit p99':>9}  {'p99 err':>7}"
    )
    for rho in RHOS:
        rows = np.array([measure(rho, args.requests, seed) for seed in range(args.seeds)])
        mine_mean, exact_mean, mine_p99, exact_p99 = rows.mean(axis=0)
        print(
            f"{rho:4.1f}  {1 / (1 - rho):13.2f}  {exact_mean:10.2f}  {mine_mean:10.2f}  "
            f"{mine_mean / exact_mean - 1:+8.1%}  {exact_p99:9.1f}  {mine_p99:9.1f}  "
            f"{mine_p99 / exact_p99 - 1:+7.1%}"
        )


if __name__ == "__main__":
    main()
