"""A million requests: wall time and peak memory with and without ``spill=``, and the live bytes
per attempt while a run goes.

Workload: ``sy.strategies.fallback_chain(["a", "b"])`` over N requests (closed loop, 32 in flight);
"a" answers 503 to 3% of attempts and 429 to 1%; with no retries and no cooldown, those requests
fall back to "b" (about 1.04 attempts per request). The requests are a dataset (one table of N rows,
``sy.datasets.from_frame``), or with ``--input list`` a list of N ``sy.Request`` objects.

Each variant runs in a fresh subprocess, so its peak resident memory (VmHWM) is its own:

* ``dataset``: only builds the input and the run's view of it (a dataset's requests are built a
  block at a time as the run reaches them; a list is checked and listed, its requests not
  copied): the floor every run shares;
* ``memory``: ``sy.run`` with the frames built in memory at the end (the bulk engine takes it);
* ``spill``: ``sy.run(..., spill=folder)``: peak measured when the run returns (its Result is lazy),
  then the frames are read back (timed, with the peak after reading);
* ``general``: the same chain wrapped in an async function of one's own, so the event engine runs
  it, in memory.

Then, on a smaller run (``--trace-requests``) under tracemalloc, the memory the run holds is
sampled every 1,000 requests as they start: the slope of a line fitted to those samples against
the attempts recorded so far is the live bytes per attempt (records and everything else the run
keeps per request; the input copy made before the first sample and the frames built at the end
are not in it), and the largest rise above the first sample is what a spilling run holds at most.

    python benchmarks/million_requests.py                      # 1,000,000 requests
    python benchmarks/million_requests.py --requests 100000 --trace-requests 20000
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pandas as pd

import sykit as sy

IN_FLIGHT = 32
SAMPLE_EVERY = 1_000


def make_host() -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.LogNormal(0.5, sigma=0.5), tokens_per_s=80)
    profile = sy.ModelProfile(latency=latency, output_tokens=200, price_in=1.0, price_out=4.0)
    faults = sy.Faults(unavailable=0.03, rate_limit=0.01, retry_after_s=0.5)
    policy = sy.HostPolicy(max_retries=0, cooldown_s=0)
    return sy.SimHost(
        {"a": profile.replace(faults=faults), "b": profile.replace(price_in=3.0)}, policy=policy
    )


INPUT = "dataset"  # set by --input


def make_requests(n: int) -> Any:
    """The N requests: a dataset (one table, its requests built as the run reaches them), or with
    ``--input list`` a list of N ``sy.Request`` objects."""
    if INPUT == "list":
        return [sy.Request("What is 41 + 1?", id=i, input_tokens=200) for i in range(n)]
    frame = pd.DataFrame({"prompt": ["What is 41 + 1?"] * n, "input_tokens": [200] * n})
    return sy.datasets.from_frame(frame, prompt="prompt", input_tokens="input_tokens", name="n")


def peak_rss_mb() -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def variant(name: str, n: int, folder: Path) -> dict:
    """One measurement, in this process (meant to be a fresh one)."""
    requests = make_requests(n)
    out: dict = {"variant": name, "requests": n, "dataset_peak_mb": peak_rss_mb()}
    if name == "dataset":
        from sykit._run.plan import _run_items

        items = _run_items(requests)
        out["with_copy_peak_mb"] = peak_rss_mb()
        del items
        return out
    algorithm = sy.strategies.fallback_chain(["a", "b"])
    if name == "general":
        chain = algorithm

        async def algorithm(request, driver):  # the same chain, as an algorithm of one's own
            return await chain(request, driver)

    spill = folder if name == "spill" else None
    started = time.perf_counter()
    result = sy.run(
        algorithm, requests, host=make_host(), concurrency=IN_FLIGHT, progress=False, spill=spill
    )
    out["run_s"] = time.perf_counter() - started
    out["engine"] = result.engine
    out["peak_mb"] = peak_rss_mb()
    if spill is not None:
        out["folder_mb"] = folder_mb(folder)
        started = time.perf_counter()
        attempts, frame = result.attempts, result.requests
        out["read_s"] = time.perf_counter() - started
        out["peak_after_read_mb"] = peak_rss_mb()
    else:
        attempts, frame = result.attempts, result.requests
    out["attempts"] = len(attempts)
    out["fell_back"] = int((frame["n_fallbacks"] > 0).sum())
    out["frames_mb"] = (
        attempts.memory_usage(deep=True).sum() + frame.memory_usage(deep=True).sum()
    ) / 2**20
    return out


def traced(name: str, n: int, folder: Path) -> dict:
    """The run's live memory under tracemalloc, sampled as requests start."""
    requests = make_requests(n)
    inner = sy.strategies.fallback_chain(["a", "b"])
    samples: list[tuple[int, int]] = []  # (bytes held, attempts so far)
    counter = {"n": 0}

    async def sampled(request, driver):
        counter["n"] += 1
        if counter["n"] % SAMPLE_EVERY == 0:
            log = driver._state.run.log  # the attempts recorded so far, handed over or not
            samples.append((tracemalloc.get_traced_memory()[0] - baseline, len(log)))
        return await inner(request, driver)

    host = make_host()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    sy.run(
        sampled,
        requests,
        host=host,
        concurrency=IN_FLIGHT,
        progress=False,
        spill=folder if name == "spill" else None,
        strategy="fallback(a>b)",
    )
    tracemalloc.stop()
    held = [h for h, _ in samples]
    attempts = [a for _, a in samples]
    slope = statistics.linear_regression(attempts, held).slope
    return {
        "variant": f"trace-{name}",
        "requests": n,
        "bytes_per_attempt": slope,
        "max_rise_mb": (max(held) - held[0]) / 2**20,
    }


def in_subprocess(args: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"variant {args} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--trace-requests", type=int, default=500_000)
    parser.add_argument(
        "--input",
        choices=("dataset", "list"),
        default="dataset",
        help="requests as a dataset (default) or as a list of sy.Request",
    )
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global INPUT
    INPUT = args.input
    if args.variant:  # a child: measure one variant and print it as JSON
        folder = Path(args.folder)
        if args.variant.startswith("trace-"):
            print(json.dumps(traced(args.variant.removeprefix("trace-"), args.requests, folder)))
        else:
            print(json.dumps(variant(args.variant, args.requests, folder)))
        return

    scratch = Path(tempfile.mkdtemp(prefix="sykit-million-"))
    try:
        rows = []
        for name in ("dataset", "memory", "spill", "general"):
            rows.append(in_subprocess(["--variant", name, "--requests", str(args.requests),
                                       "--input", args.input,
                                       "--folder", str(scratch / name)]))  # fmt: skip
        for name in ("memory", "spill"):
            rows.append(in_subprocess(["--variant", f"trace-{name}", "--requests",
                                       str(args.trace_requests), "--input", args.input,
                                       "--folder", str(scratch / f"trace-{name}")]))  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    dataset, memory, spill, general, trace_memory, trace_spill = rows
    n = args.requests
    print(f"{n:,} requests ({args.input}), fallback(a>b), {IN_FLIGHT} in flight, "
          f"{memory['attempts']:,} attempts, {memory['fell_back']:,} requests fell back")  # fmt: skip
    print(f"input only          : peak RSS {dataset['dataset_peak_mb']:8.0f} MiB, "
          f"{dataset['with_copy_peak_mb']:.0f} MiB with the run's view of it")  # fmt: skip
    print(f"run, in memory      : {memory['run_s']:6.1f} s   peak RSS {memory['peak_mb']:8.0f} MiB"
          f"   (frames {memory['frames_mb']:.0f} MiB; {memory['engine']} engine)")  # fmt: skip
    print(f"run, spill=folder   : {spill['run_s']:6.1f} s   peak RSS {spill['peak_mb']:8.0f} MiB"
          f"   (folder {spill['folder_mb']:.0f} MiB on disk; {spill['engine']} engine)")  # fmt: skip
    print(f"  reading it back   : {spill['read_s']:6.1f} s   peak RSS "
          f"{spill['peak_after_read_mb']:8.0f} MiB")  # fmt: skip
    print(f"general path        : {general['run_s']:6.1f} s   peak RSS "
          f"{general['peak_mb']:8.0f} MiB   (an async algorithm; {general['engine']} engine)")  # fmt: skip
    print(f"live memory while running ({args.trace_requests:,} requests, tracemalloc):")
    for row in (trace_memory, trace_spill):
        print(f"  {row['variant']:<13}: {row['bytes_per_attempt']:6.0f} bytes per attempt, "
              f"at most {row['max_rise_mb']:.1f} MiB above the first sample")  # fmt: skip


if __name__ == "__main__":
    main()
