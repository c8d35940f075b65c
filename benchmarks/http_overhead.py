"""Per-call overhead of HttpHost: routing and recording on top of a bare httpx call.

Both sides make the same sequential chat-completion calls to the same loopback FakeProvider model,
which answers at once (no ttft, one token), so what is left is client-side cost:

* bare: ``httpx.AsyncClient.post(...)`` then ``response.json()``, timed one call at a time;
* HttpHost: ``sy.arun`` of an algorithm that makes one ``driver.call_model`` per request
  (candidate loop, attempt and request rows, classification), timed by each request's
  ``latency_s``; the DataFrame build at the end of the run is reported amortized per call.

The server runs in a child process by default, so it does not compete with the client for the GIL.
Prints, for p50 and p99, the milliseconds per call of both, the overhead in ms and the ratio.

    python benchmarks/http_overhead.py                  # 2,000 calls each, 3 rounds
    python benchmarks/http_overhead.py --calls 500 --rounds 1 --server thread
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import time

import httpx

import sykit as sy
from sykit._hosts.http import HttpHost
from sykit.testing import FakeModel, FakeProvider

MODEL = "instant"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "ping"}]}


def serve() -> None:
    """Child-process mode: serve until stdin closes."""
    with FakeProvider({MODEL: FakeModel(ttft_s=0, tokens_per_s=1e9, output_tokens=1)}) as fake:
        print(fake.base_url, flush=True)
        sys.stdin.read()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def bare(base_url: str, calls: int) -> list[float]:
    times = []
    async with httpx.AsyncClient() as client:
        for _ in range(calls):
            started = time.perf_counter()
            response = await client.post(f"{base_url}/chat/completions", json=BODY)
            response.json()
            times.append(time.perf_counter() - started)
    return times


async def with_host(base_url: str, calls: int) -> tuple[list[float], float]:
    host = HttpHost(base_url, models=[MODEL], api_key_env=None)

    async def one_call(request, driver):
        return sy.answered(MODEL, await driver.call_model(request, [MODEL]))

    requests = [sy.Request("ping", id=i) for i in range(calls)]
    started = time.perf_counter()
    result = await sy.arun(one_call, requests, host=host, concurrency=1, progress=False)
    wall = time.perf_counter() - started
    assert (result.requests["status"] == "ok").all(), result.requests["error_message"].iloc[0]
    return result.requests["latency_s"].tolist(), wall / calls


async def measure(base_url: str, calls: int, rounds: int) -> dict[str, list[float]]:
    await bare(base_url, 100)  # warm up both paths (imports, first connections)
    await with_host(base_url, 100)
    out: dict[str, list[float]] = {"bare": [], "host": [], "amortized": []}
    for _ in range(rounds):
        gc.collect()  # each side starts clean: the other side's garbage is not collected on its clock
        out["bare"] += await bare(base_url, calls)
        gc.collect()
        latencies, amortized = await with_host(base_url, calls)
        out["host"] += latencies
        out["amortized"].append(amortized)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.server == "process":
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout is not None and child.stdin is not None
        try:
            results = asyncio.run(measure(child.stdout.readline().strip(), args.calls, args.rounds))
        finally:
            child.stdin.close()
            child.wait(timeout=10)
    else:
        model = {MODEL: FakeModel(ttft_s=0, tokens_per_s=1e9, output_tokens=1)}
        with FakeProvider(model) as fake:
            results = asyncio.run(measure(fake.base_url, args.calls, args.rounds))
    n = len(results["bare"])
    print(
        f"{n} sequential calls each, loopback FakeProvider ({args.server}), Python {sys.version.split()[0]}"
    )
    print(f"{'':>5} {'bare ms':>9} {'HttpHost ms':>12} {'overhead ms':>12} {'ratio':>7}")
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        b = quantile(results["bare"], q) * 1e3
        h = quantile(results["host"], q) * 1e3
        print(f"{label:>5} {b:9.3f} {h:12.3f} {h - b:12.3f} {h / b:7.2f}")
    amortized = statistics.mean(results["amortized"]) * 1e3
    mean_bare = statistics.mean(results["bare"]) * 1e3
    print(
        f"mean per call with the DataFrame build: {amortized:.3f} ms "
        f"(bare {mean_bare:.3f} ms, ratio {amortized / mean_bare:.2f})"
    )


if __name__ == "__main__":
    main()
