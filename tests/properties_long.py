"""A long run of the property tests, outside the default suite.

    python tests/properties_long.py --examples 10000            # 2 processes, 5,000 examples each
    python tests/properties_long.py --examples 2000 --processes 1 --seed 7

The property tests are those of tests/test_properties.py (both event engines agree, the records
are sound) and the bulk engine's agreement with the kernel (tests/test_bulk_engine.py).
Each process runs pytest on them with ``SYKIT_PROPERTY_EXAMPLES`` set to its
share of the examples and a hypothesis seed of its own (``--seed`` + its index), so the processes
explore different examples. Hypothesis's statistics give the examples each property test ran, and
its "Falsifying example" reports the counterexamples found (each shrunk, one per distinct error).
The last line is a one-line summary; the exit status is 0 only when no counterexample was found
and every pytest run passed. ``--keep-going`` sets no ``-x``; pass extra pytest arguments after
``--``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TESTS = (
    str(HERE / "test_properties.py"),
    f"{HERE / 'test_bulk_engine.py'}::test_the_bulk_engine_agrees_with_the_kernel_whenever_it_runs",
)

#: hypothesis --hypothesis-show-statistics: a test's node id, then per phase its counts.
TEST_HEADER = re.compile(r"^\S*::(test_\w+)(?:\[[^\]]*\])?:\s*$")
COUNTS = re.compile(r"- (\d+) passing, (\d+) failing, and (\d+) invalid test cases")
DISTINCT = re.compile(r"- Found (\d+)(?: more)? distinct errors? in this phase")
FALSIFYING = re.compile(r"Falsifying (?:explicit )?example: (test_\w+)")
PHASE = re.compile(r"- during (\w+) phase")


def parse(output: str) -> tuple[dict[str, int], dict[str, int]]:
    """Examples run (passing and failing, in every phase but shrinking) and counterexamples (distinct errors
    found, else the falsifying examples printed), per test."""
    run: dict[str, int] = defaultdict(int)
    found: dict[str, int] = defaultdict(int)
    test, phase = None, ""
    for line in output.splitlines():
        header = TEST_HEADER.match(line.strip())
        if header:
            test, phase = header.group(1), ""
        elif phase_line := PHASE.search(line):
            phase = phase_line.group(1)
        elif test is not None and phase != "shrink" and (counts := COUNTS.search(line)):
            run[test] += int(counts.group(1)) + int(counts.group(2))
        elif test is not None and (distinct := DISTINCT.search(line)):
            found[test] += int(distinct.group(1))
    falsifying: dict[str, int] = defaultdict(int)
    for match in FALSIFYING.finditer(output):
        falsifying[match.group(1)] += 1
    for name, n in falsifying.items():
        found[name] = max(found[name], n)
    return run, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="examples per test, in all")
    parser.add_argument("--processes", type=int, default=2, help="pytest processes (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed of the first process")
    parser.add_argument(
        "--keep-going", action="store_true", help="do not stop at the first failure"
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    processes = max(1, args.processes)
    share = [args.examples // processes + (i < args.examples % processes) for i in range(processes)]
    python = sys.executable
    started = time.monotonic()
    jobs = []
    for i, n in enumerate(share):
        if n <= 0:
            continue
        env = dict(os.environ, SYKIT_PROPERTY_EXAMPLES=str(n))
        command = [
            python, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider",
            f"--hypothesis-seed={args.seed + i}", "--hypothesis-show-statistics",
            *([] if args.keep_going else ["-x"]), *args.pytest_args,
        ]  # fmt: skip
        pipe = subprocess.PIPE
        jobs.append(
            subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=pipe, stderr=subprocess.STDOUT, text=True
            )
        )
    run: dict[str, int] = defaultdict(int)
    found: dict[str, int] = defaultdict(int)
    codes = []
    for job in jobs:
        output, _ = job.communicate()
        codes.append(job.returncode)
        if not args.quiet:
            print(output)
        ran, failed = parse(output)
        for test, n in ran.items():
            run[test] += n
        for test, n in failed.items():
            found[test] += n
    tests = sorted(set(run) | set(found))
    parts = [f"{t}: {run.get(t, 0)} examples, {found.get(t, 0)} counterexamples" for t in tests]
    total = sum(found.values())
    ok = total == 0 and all(code == 0 for code in codes)
    print(
        f"properties_long: {'PASS' if ok else 'FAIL'}; {args.examples} examples per test requested "
        f"over {len(jobs)} process(es), seeds {args.seed}..{args.seed + len(jobs) - 1}; "
        + "; ".join(parts)
        + f"; {total} counterexamples in all; pytest exit codes {codes}; "
        f"{time.monotonic() - started:.0f} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
