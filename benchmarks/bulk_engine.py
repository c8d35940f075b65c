"""The bulk engine against a bare simpy model and against a NumPy floor, in one process.

Printed, all measured in this run (medians of interleaved pairs; a ratio is the median of the
pairs' ratios, which a noisy machine's drift between pairs does not skew):

1. **Fixed chain with faults** (``fallback_chain(["A", "B"])``, "A" answers 503 to 5 % of
   attempts, no retries, 64 in flight, log-normal latencies): sykit on the bulk engine (records and
   both frames built) and on the kernel's fast path, against a simpy model of the same chain that
   records nothing (sim_throughput.py's), at ``--requests`` requests (default 100,000).
2. **Capability refusals**: the same chain over requests of which 30 % carry an image, to a
   first model without vision (each such request is refused with a 400 and falls back): the
   bulk engine against the kernel.
3. **litellm_like** (``litellm_like(["A", "B"])``: its own retry loop, two retries with
   backoff and jitter, then the fallback) on the same host and requests: the bulk engine against
   the kernel.
4. **Fault-free comparison of the README job's static strategies** on the shipped RouteLLM
   dataset (weak only, strong only, random 30 % strong, fallback weak>strong, threshold 30 %
   strong): ``sy.compare`` on the bulk engine and its summary table without bootstrap intervals
   (means of quality, cost and latency per strategy), repeated on one dataset (what the runs
   over a dataset keep serves the next) and as the first comparison over it, against a NumPy
   floor that does the same routing and means as array lookups on the dataset's columns. Also against a second floor that
   does the work no evaluation with today's draws can skip: the keyed BLAKE2b draws (each
   random routing choice, each attempt's latency), the closed loop's placement (32 in flight, a
   heap of end times) and the means, without records or frames: what sykit costs beyond it is
   its records, frames and per-request code. And the closed loop's placement alone, which any
   evaluation that places requests in time does one request after another.
5. **The user's workload**: the fixed chain with faults as a user runs it, the requests built
   inside the timing from distinct prompts with no ids (``sy.Request(text)``, ids assigned by the
   run), against the same simpy model; and from a shipped ``Dataset`` (RouteLLM's prompts,
   repeated to ``--requests``); and what building one ``sy.Request`` from a distinct prompt costs.

    python benchmarks/bulk_engine.py
    python benchmarks/bulk_engine.py --requests 10000 --pairs 3
"""

from __future__ import annotations

import argparse
import gc
import heapq
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

import sykit as sy
from sykit._base.rng import SLOT, first_uniform
from sykit._run.engines.bulk._draws import attempt_units, quantiles

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_throughput import IN_FLIGHT, _chain_host, _requests, simpy_chain


def pairs(
    count: int, mine: Callable[[], float], theirs: Callable[[], float]
) -> tuple[float, float, list[float]]:
    """Median seconds of ``mine`` and ``theirs`` in interleaved pairs, and each pair's ratio."""
    a, b = [], []
    for _ in range(count):
        gc.collect()
        a.append(mine())
        gc.collect()
        b.append(theirs())
    return statistics.median(a), statistics.median(b), [y / x for x, y in zip(a, b, strict=True)]


def chain_run(
    n: int, engine: str, algorithm: object = None, *, images: bool = False
) -> Callable[[], float]:
    host, requests = _chain_host(), _requests(n)
    if images:  # 30 % of the requests carry an image; "A" has no vision, "B" has
        profiles = {**host.profiles, "B": replace(host.profiles["B"], vision=True)}
        host = sy.SimHost(profiles, policy=host.policy)
        requests = [replace(r, images=["https://example.com/a.png"]) if i % 10 < 3 else r
                    for i, r in enumerate(requests)]  # fmt: skip
    chain = algorithm if algorithm is not None else sy.strategies.fallback_chain(["A", "B"])
    return timed_run(chain, host, engine, lambda: requests)


def timed_run(
    chain: object, host: sy.SimHost, engine: str, requests: Callable[[], list[sy.Request]]
) -> Callable[[], float]:
    """One timed run of ``chain`` over ``requests()`` (called inside the timing), its frames
    built, on ``engine``."""

    def once() -> float:
        started = time.perf_counter()
        result = sy.run(
            chain, requests(), host=host, concurrency=IN_FLIGHT, progress=False, engine=engine
        )
        result.attempts, result.requests  # noqa: B018  # the frames are part of the work
        elapsed = time.perf_counter() - started
        assert result.engine == engine
        return elapsed

    return once


WEAK, STRONG = "mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview"


def lineup(dataset: sy.datasets.Dataset) -> dict[str, object]:
    score = sy.strategies.simulated_score(WEAK, STRONG)
    threshold = sy.strategies.calibrate(score, dataset, 0.3)
    return {
        "weak only": sy.strategies.single(WEAK),
        "strong only": sy.strategies.single(STRONG),
        "random 30% strong": sy.strategies.weighted_random({WEAK: 0.7, STRONG: 0.3}),
        "fallback weak>strong": sy.strategies.fallback_chain([WEAK, STRONG]),
        "threshold 30% strong": sy.strategies.threshold_router(
            WEAK, STRONG, score=score, threshold=threshold
        ),
    }


def sykit_comparison(
    dataset: sy.datasets.Dataset, host: sy.SimHost, strategies: dict
) -> Callable[[], float]:
    def once() -> float:
        started = time.perf_counter()
        comparison = sy.compare(strategies, dataset, host=host, progress=False)
        requests = comparison.requests
        table = requests.groupby("strategy", observed=True)[
            ["quality", "cost_usd", "latency_s"]
        ].mean()
        elapsed = time.perf_counter() - started
        assert {r.engine for r in comparison.results} == {"bulk"}
        assert len(table) == len(strategies)
        return elapsed

    return once


def sykit_comparison_cold(
    dataset: sy.datasets.Dataset, host: sy.SimHost, strategies: dict
) -> Callable[[], float]:
    """:func:`sykit_comparison` as the first comparison over a dataset: on a copy of it that
    holds nothing an earlier run made (its requests, their columns), with the simulated score's
    kept noise cleared; both done outside the timing."""
    from sykit.strategies._router_score import _keyed_noise

    def once() -> float:
        fresh = pickle.loads(pickle.dumps(dataset))  # a copy sends its table, not its requests
        _keyed_noise.cache_clear()
        return sykit_comparison(fresh, host, strategies)()

    return once


def table_columns(
    dataset: sy.datasets.Dataset,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """The dataset's grades and answer lengths per model, and its input tokens, as arrays."""
    frame = dataset.frame
    quality = {m: frame[f"quality:{m}"].to_numpy(float) for m in (WEAK, STRONG)}
    output = {m: frame[f"output_tokens:{m}"].to_numpy(float) for m in (WEAK, STRONG)}
    return quality, output, frame["input_tokens"].to_numpy(float)


def closed_loop_end(durations: list[float], slots: int = 32) -> float:
    """When the last of ``durations`` ends, placed in order in a closed loop of ``slots``."""
    free = [0.0] * slots
    for duration in durations:
        heapq.heappush(free, heapq.heappop(free) + duration)
    return max(free)


def numpy_floor(dataset: sy.datasets.Dataset, host: sy.SimHost) -> Callable[[], float]:
    """The same routing and means as array lookups: each request's model from its score (or a
    keyed draw), its grade, its cost and its latency from the dataset's columns."""
    frame = dataset.frame
    quality, output, inputs = table_columns(dataset)
    prices = {m: (host.profiles[m].price_in, host.profiles[m].price_out) for m in (WEAK, STRONG)}
    rng = np.random.default_rng(0)
    scores = rng.random(len(frame))
    ttft = rng.lognormal(np.log(0.5), 0.5, size=len(frame))

    def once() -> float:
        started = time.perf_counter()
        table = {}
        strong_share = {
            "weak only": np.zeros(len(frame), bool),
            "strong only": np.ones(len(frame), bool),
            "random 30% strong": scores < 0.3,
            "fallback weak>strong": np.zeros(len(frame), bool),
            "threshold 30% strong": scores >= np.quantile(scores, 0.7),
        }
        for name, strong in strong_share.items():
            q = np.where(strong, quality[STRONG], quality[WEAK])
            out = np.where(strong, output[STRONG], output[WEAK])
            p_in = np.where(strong, prices[STRONG][0], prices[WEAK][0])
            p_out = np.where(strong, prices[STRONG][1], prices[WEAK][1])
            cost = (inputs * p_in + out * p_out) / 1e6
            latency = ttft + out / 80.0
            table[name] = (np.nanmean(q), cost.mean(), latency.mean())
        elapsed = time.perf_counter() - started
        assert len(table) == 5
        return elapsed

    return once


def same_work_floor(dataset: sy.datasets.Dataset, host: sy.SimHost) -> Callable[[], float]:
    """The fault-free comparison's unavoidable work with sykit's draws and clock: each random
    routing choice and each attempt's TTFT and decode rate from keyed BLAKE2b draws (turned into
    quantiles as the simulated host turns them), each strategy's requests placed in a closed loop
    of 32 in flight (a heap of end times), and the means. No records, no frames."""
    ids = dataset.frame["id"].tolist()
    n = len(ids)
    quality, output, inputs = table_columns(dataset)
    profiles = {m: host.profiles[m] for m in (WEAK, STRONG)}
    seed = 0

    def keyed(purpose: str) -> np.ndarray:
        return np.asarray([first_uniform(seed, rid, purpose) for rid in ids])

    def once() -> float:
        started = time.perf_counter()
        strong_share = {
            "weak only": np.zeros(n, bool),
            "strong only": np.ones(n, bool),
            "random 30% strong": keyed("weighted_random") >= 0.7,
            "fallback weak>strong": np.zeros(n, bool),
            "threshold 30% strong": (score := keyed("score")) >= np.quantile(score, 0.7),
        }
        table = {}
        for name, strong in strong_share.items():
            latency = np.empty(n)
            cost = np.empty(n)
            q = np.empty(n)
            for model, picked in ((STRONG, strong), (WEAK, ~strong)):
                rows = np.flatnonzero(picked)
                if not len(rows):
                    continue
                profile = profiles[model]
                u = attempt_units(seed, [ids[k] for k in rows.tolist()], model, [0] * len(rows))
                ttft = quantiles(profile.latency.ttft, u[:, SLOT.TTFT])
                rate = quantiles(profile.latency.tokens_per_s, u[:, SLOT.TOKENS_PER_S])
                out = output[model][rows]
                latency[rows] = ttft + out / rate
                cost[rows] = (inputs[rows] * profile.price_in + out * profile.price_out) / 1e6
                q[rows] = quality[model][rows]
            end = closed_loop_end(latency.tolist())
            table[name] = (np.nanmean(q), cost.mean(), latency.mean(), end)
        elapsed = time.perf_counter() - started
        assert len(table) == 5
        return elapsed

    return once


def placement_alone(n: int, strategies: int = 5, slots: int = 32) -> Callable[[], float]:
    """Only the closed loop's placement of ``strategies`` runs of ``n`` requests (a heap of end
    times, as every engine places a closed loop): the part of any evaluation that places
    requests in time that no vectorising removes."""
    durations = np.random.default_rng(0).lognormal(0.0, 1.0, n).tolist()

    def once() -> float:
        started = time.perf_counter()
        for _ in range(strategies):
            closed_loop_end(durations, slots)
        return time.perf_counter() - started

    return once


def user_chain_run(n: int, engine: str = "bulk") -> Callable[[], float]:
    """The fixed chain on requests built inside the timing from distinct prompts with no ids, as a
    user's list comprehension builds them."""
    prompts = [f"question {i}: what is {i} squared?" for i in range(n)]
    chain = sy.strategies.fallback_chain(["A", "B"])
    return timed_run(
        chain, _chain_host(), engine, lambda: [sy.Request(t, input_tokens=10) for t in prompts]
    )


def dataset_chain_run(dataset: sy.datasets.Dataset, n: int) -> Callable[[], float]:
    """The fixed chain over a shipped dataset's rows, repeated to ``n`` requests."""
    host = _chain_host()
    chain = sy.strategies.fallback_chain(["A", "B"])
    repeats = -(-n // len(dataset))
    frame = dataset.frame.loc[dataset.frame.index.repeat(repeats)].head(n).reset_index(drop=True)
    frame["id"] = range(len(frame))
    # the grades and answer lengths kept for analysis, not as ground truth (their names are the
    # dataset's ground truth's: from_frame would refuse them under those)
    truth = [c for c in frame.columns if c.startswith(("quality:", "output_tokens:"))]
    frame = frame.rename(columns={c: c.replace(":", "_", 1) for c in truth})
    data = sy.datasets.from_frame(frame, prompt="prompt", id="id")

    def once() -> float:
        started = time.perf_counter()
        result = sy.run(chain, data, host=host, concurrency=IN_FLIGHT, progress=False)
        result.attempts, result.requests  # noqa: B018
        return time.perf_counter() - started

    return once


def request_build_us(n: int) -> float:
    """Microseconds to build one ``sy.Request`` from a distinct prompt (median of 5)."""
    prompts = [f"question {i}: what is {i} squared?" for i in range(n)]
    times = []
    for _ in range(5):
        gc.collect()
        started = time.perf_counter()
        [sy.Request(text) for text in prompts]
        times.append(time.perf_counter() - started)
    return statistics.median(times) / n * 1e6


def _rounded(values: list[float], digits: int = 2) -> list[float]:
    return [round(v, digits) for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    n = args.requests

    bulk_s, simpy_s, ratios = pairs(args.pairs, chain_run(n, "bulk"), lambda: simpy_chain(n))
    kernel_s, simpy2_s, kernel_ratios = pairs(
        args.pairs, chain_run(n, "kernel"), lambda: simpy_chain(n)
    )
    print(f"fixed chain with faults, {n:,} requests, {IN_FLIGHT} in flight ({args.pairs} pairs)")
    print(f"  bulk engine : {bulk_s:6.2f} s  ({n / bulk_s:9,.0f} requests/s)   simpy {simpy_s:6.2f} s"
          f"   bulk / simpy speed: {statistics.median(ratios):.2f}x  (pairs {_rounded(ratios)})")  # fmt: skip
    print(f"  kernel      : {kernel_s:6.2f} s  ({n / kernel_s:9,.0f} requests/s)   simpy {simpy2_s:6.2f} s"
          f"   kernel / simpy speed: {statistics.median(kernel_ratios):.2f}x  (pairs {_rounded(kernel_ratios)})")  # fmt: skip

    refused_bulk, refused_kernel, refused_ratios = pairs(
        args.pairs, chain_run(n, "bulk", images=True), chain_run(n, "kernel", images=True)
    )
    print(
        f"the same chain, 30 % of the requests with an image that 'A' refuses ({args.pairs} pairs)"
    )
    print(f"  bulk engine : {refused_bulk:6.2f} s   kernel {refused_kernel:6.2f} s"
          f"   bulk / kernel speed: {statistics.median(refused_ratios):.2f}x  (pairs {_rounded(refused_ratios)})")  # fmt: skip

    litellm = sy.strategies.litellm_like(["A", "B"])
    lite_bulk, lite_kernel, lite_ratios = pairs(
        args.pairs, chain_run(n, "bulk", litellm), chain_run(n, "kernel", litellm)
    )
    print(f"litellm_like([A, B]) on the same host, {n:,} requests ({args.pairs} pairs)")
    print(f"  bulk engine : {lite_bulk:6.2f} s   kernel {lite_kernel:6.2f} s"
          f"   bulk / kernel speed: {statistics.median(lite_ratios):.2f}x  (pairs {_rounded(lite_ratios)})")  # fmt: skip

    dataset = sy.datasets.load("routellm")
    host = sy.SimHost(sy.profiles.from_catalog(dataset.models), policy=sy.HostPolicy(cooldown_s=0))
    strategies = lineup(dataset)
    mine, floor, floor_ratios = pairs(args.pairs, sykit_comparison(dataset, host, strategies),
                                      numpy_floor(dataset, host))  # fmt: skip
    slower = [1 / r for r in floor_ratios]
    print(
        f"fault-free comparison of the README job's 5 static strategies, {len(dataset):,} prompts"
    )
    print(f"  sykit (bulk) compare + means: {mine * 1000:7.1f} ms   NumPy floor: {floor * 1000:6.2f} ms"
          f"   sykit / floor time: {statistics.median(slower):.1f}x  (pairs {_rounded(slower, 1)})")  # fmt: skip
    mine2, work, work_ratios = pairs(args.pairs, sykit_comparison(dataset, host, strategies),
                                     same_work_floor(dataset, host))  # fmt: skip
    slower2 = [1 / r for r in work_ratios]
    place, _, place_ratios = pairs(args.pairs, placement_alone(len(dataset)),
                                        numpy_floor(dataset, host))  # fmt: skip
    print(f"  sykit (bulk) compare + means: {mine2 * 1000:7.1f} ms   same-work floor (keyed draws,"
          f" closed loop): {work * 1000:6.2f} ms   sykit / floor time: {statistics.median(slower2):.1f}x"
          f"  (pairs {_rounded(slower2, 1)})")  # fmt: skip
    cold, work3, cold_ratios = pairs(args.pairs, sykit_comparison_cold(dataset, host, strategies),
                                     same_work_floor(dataset, host))  # fmt: skip
    print(f"  the first comparison over the dataset (nothing an earlier run made kept): "
          f"{cold * 1000:7.1f} ms   same-work floor: {work3 * 1000:6.2f} ms   sykit / floor time: "
          f"{statistics.median([1 / r for r in cold_ratios]):.1f}x  (pairs {_rounded([1 / r for r in cold_ratios], 1)})")  # fmt: skip
    print(f"  the closed loop's placement alone (heapq, 32 slots): {place * 1000:6.2f} ms   "
          f"placement / NumPy floor time: {statistics.median([1 / r for r in place_ratios]):.1f}x")  # fmt: skip

    user_s, simpy3_s, user_ratios = pairs(args.pairs, user_chain_run(n), lambda: simpy_chain(n))
    data_s, simpy4_s, data_ratios = pairs(
        args.pairs, dataset_chain_run(dataset, n), lambda: simpy_chain(n)
    )
    print(f"the user's workload: the same chain, {n:,} requests ({args.pairs} pairs)")
    print(f"  distinct prompts, no ids, built in the timing: {user_s:6.2f} s   simpy {simpy3_s:6.2f} s"
          f"   bulk / simpy speed: {statistics.median(user_ratios):.2f}x  (pairs {_rounded(user_ratios)})")  # fmt: skip
    print(f"  a shipped Dataset's rows (routellm, repeated): {data_s:6.2f} s   simpy {simpy4_s:6.2f} s"
          f"   bulk / simpy speed: {statistics.median(data_ratios):.2f}x  (pairs {_rounded(data_ratios)})")  # fmt: skip
    print(f"  one sy.Request from a distinct prompt: {request_build_us(n):.2f} µs")


if __name__ == "__main__":
    main()
