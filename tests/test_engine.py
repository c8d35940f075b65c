"""The virtual-time loop: exact clock, FIFO ties, deadlock and real-I/O guards, notebooks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import anyio
import pytest

import sykit as sy
from sykit._run.engines import loop as _engine


def test_clock_jumps_exactly_to_each_deadline():
    async def main():
        loop = asyncio.get_running_loop()
        seen = [loop.time()]
        await anyio.sleep(3600)
        seen.append(loop.time())
        await asyncio.sleep(0.25)
        seen.append(loop.time())
        with anyio.move_on_after(2.5):
            await anyio.sleep(10)
        seen.append(loop.time())
        with pytest.raises(TimeoutError):
            with anyio.fail_after(1.25):
                await anyio.sleep(5)
        seen.append(loop.time())
        return seen

    started = time.perf_counter()
    assert _engine.run(main) == [0.0, 3600.0, 3600.25, 3602.75, 3604.0]
    assert time.perf_counter() - started < 5  # an hour of virtual time, no real waiting


def test_equal_deadlines_fire_in_scheduling_order():
    async def main():
        order = []

        async def sleeper(i):
            await asyncio.sleep(1.0)
            order.append(i)

        await asyncio.gather(*(sleeper(i) for i in range(8)))
        return order

    assert _engine.run(main) == list(range(8))


def test_task_group_race_cancels_loser_at_winner_time():
    async def main():
        loop = asyncio.get_running_loop()
        ended = {}

        async def racer(name, delay, group):
            try:
                await anyio.sleep(delay)
                group.cancel_scope.cancel()
            finally:
                ended[name] = loop.time()

        async with anyio.create_task_group() as group:
            group.start_soon(racer, "a", 0.8, group)
            group.start_soon(racer, "b", 2.0, group)
        return ended

    assert _engine.run(main) == {"a": 0.8, "b": 0.8}


def test_deadlock_is_an_error_naming_where_the_task_waits():
    async def stuck():
        await asyncio.Event().wait()

    with pytest.raises(sy.SimDeadlock) as caught:
        _engine.run(stuck)
    message = str(caught.value)
    assert "every task is waiting" in message
    assert "in stuck" in message and "test_engine.py" in message


def test_real_network_io_is_refused_with_a_clear_error():
    async def connect():
        await asyncio.open_connection("127.0.0.1", 9)

    with pytest.raises(sy.errors.RealIOError, match="virtual-time loop"):
        _engine.run(connect)


def test_executor_work_takes_no_virtual_time():
    async def main():
        loop = asyncio.get_running_loop()
        await asyncio.sleep(1.0)
        await loop.run_in_executor(None, time.sleep, 0.05)
        return loop.time()

    assert _engine.run(main) == 1.0


def test_run_inside_a_running_loop_uses_a_worker_thread():
    async def probe():
        await asyncio.sleep(7.5)
        return asyncio.get_running_loop().time()

    async def notebook_cell():
        # What a Jupyter cell does: call the blocking API while the kernel's loop is running.
        return _engine.run(probe)

    assert asyncio.run(notebook_cell()) == 7.5


def test_arun_keeps_the_callers_loop_free():
    async def probe():
        await asyncio.sleep(100.0)
        return asyncio.get_running_loop().time()

    async def caller():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                ticks += 1

        task = asyncio.create_task(ticker())
        result = await _engine.arun(probe)
        task.cancel()
        return result, ticks

    result, ticks = asyncio.run(caller())
    assert result == 100.0
    assert ticks > 0


def test_nest_asyncio_applied_by_the_user_changes_nothing():
    script = textwrap.dedent(
        """
        import asyncio, nest_asyncio
        nest_asyncio.apply()
        import sykit as sy
        from sykit._run.engines import loop as _engine

        async def probe():
            order = []
            async def s(i):
                await asyncio.sleep(2.0)
                order.append(i)
            await asyncio.gather(*(s(i) for i in range(5)))
            return asyncio.get_running_loop().time(), order

        async def cell():
            return _engine.run(probe)

        print(_engine.run(probe))
        print(asyncio.get_event_loop().run_until_complete(cell()))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["(2.0, [0, 1, 2, 3, 4])", "(2.0, [0, 1, 2, 3, 4])"]


def test_an_interrupt_stops_a_simulation_running_in_a_worker_thread():
    # A notebook cell runs sy.run while the kernel's loop runs; Ctrl-C arrives in the main thread.
    # The simulation below never ends on its own, so only a working interrupt lets the script exit.
    script = textwrap.dedent(
        """
        import asyncio, signal, threading
        from sykit._run.engines import loop as _engine

        async def forever():
            while True:
                await asyncio.sleep(1.0)

        async def cell():
            return _engine.run(forever)

        signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        try:
            asyncio.run(cell())
        except KeyboardInterrupt:
            print("interrupted; sim threads left:", sum(t.name.startswith("sykit-sim") for t in threading.enumerate()))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "interrupted; sim threads left: 0", out.stderr


def test_ctrl_c_in_a_notebook_returns_what_finished_on_the_asyncio_engine():
    # In a notebook cell (a running loop) an asyncio-engine run lives in a worker thread; Ctrl-C
    # reaches the main thread. The run stops and returns the requests that had finished.
    script = textwrap.dedent(
        """
        import asyncio, signal, threading, warnings
        import sykit as sy

        host = sy.SimHost({"m": sy.ModelProfile(latency=sy.Latency(ttft=1.0, tokens_per_s=1e9))})

        async def algorithm(request, driver):
            if request.id >= 3:
                while True:  # never ends on its own
                    await asyncio.sleep(1.0)
            return sy.route_to("m", request)

        async def cell():
            return sy.run(algorithm, [sy.Request("q", id=i) for i in range(6)], host=host,
                          engine="asyncio", progress=False)

        signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = asyncio.run(cell())
        print(result.interrupted, sorted(result.requests["request_id"].tolist()), result.engine)
        print([str(w.message).split(":")[0] for w in caught])
        print("sim threads left:", sum(t.name.startswith("sykit-sim") for t in threading.enumerate()))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "True [0, 1, 2] asyncio",
        "['interrupted']",
        "sim threads left: 0",
    ]
