"""spill=: records written to Parquet while the run goes, read back lazily, identical frames."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas.testing as pdt
import pyarrow.parquet as pq
import pytest

import sykit as sy
from sykit._run import spill as _spill


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Chunks of 4 rows, so even a small run writes many files while it goes."""
    monkeypatch.setattr(_spill, "CHUNK_ROWS", 4)


def busy_host() -> sy.SimHost:
    """Random latencies; "flaky" fails often (retries, fallbacks, cooldown skips, timeouts)."""
    latency = sy.Latency(
        ttft=sy.dists.LogNormal(0.6, sigma=0.7), tokens_per_s=sy.dists.Uniform(30, 90)
    )
    base = sy.ModelProfile(latency=latency, output_tokens=20, price_in=1.0, price_out=2.0)
    faults = sy.Faults(unavailable=0.15, rate_limit=0.1, timeout=0.05, invalid=0.03)
    return sy.SimHost(
        {
            "flaky": base.replace(faults=faults, quality=0.4),
            "steady": base.replace(price_in=5.0, quality=0.8),
            "judge": base.replace(output_tokens=3),
        },
        policy=sy.HostPolicy(max_retries=1, cooldown_s=1.5, timeout_s=4.0),
        judge=sy.Judge(accuracy=0.8),
    )


class Broken(Exception):
    """An algorithm's own error."""


async def mixed(request, driver):
    """A different path per request: races (cancellations), fallbacks, judges, sleeps, errors."""
    n = request.metadata["n"]
    way = n % 6
    if way == 0:  # a race: the loser is cancelled
        _, first = await sy.first(
            driver.call_model(request, ["flaky"]), driver.call_model(request, ["steady"])
        )
        if isinstance(first, Exception):
            return sy.route_to("steady", request)
        driver.evidence(won=first.model, latency=first.latency_s)
        return sy.answered(first.model, first)
    if way == 1:  # the candidate loop: retries, cooldown skips, fallbacks
        return sy.route_to("flaky", request, fallbacks=["steady"])
    if way == 2:  # a judge under a timeout, evidence of several types
        try:
            draft = await driver.call_model(request, ["flaky"])
        except sy.ModelError as error:
            driver.evidence(error=error.kind, tags=["fallback", n])
            return sy.route_to("steady", request)
        question = sy.ask_good_enough(request, draft)
        verdict = await sy.timeout(0.7, driver.call_decision(question, "judge"))
        good = None if verdict is None else verdict.yes("good_enough")
        driver.evidence(verdict=good)
        return sy.answered("flaky", draft) if good else sy.route_to("steady", request)
    if way == 3:  # a long request: holds the watermark back while others finish
        await driver.sleep(20.0 + n % 7)
        return sy.route_to("flaky", request)  # no fallback: may fail
    if way == 4 and n % 4 == 0:  # the algorithm fails
        await driver.sleep(0.1)
        raise Broken(f"request {n} broke")
    if way == 4:  # a hedge
        response = await sy.hedge(lambda: driver.call_model(request, ["flaky"]), after=0.5)
        return sy.answered("flaky", response)
    return sy.route_to("steady", request)  # skips nothing, always served


def dataset(n: int, text_ids: bool) -> list[sy.Request]:
    return [
        sy.Request(
            f"question {i}",
            id=f"q-{i:04d}" if text_ids else 1000 + 3 * i,
            input_tokens=40 + i % 50,
            metadata={"n": i, "tier": ["free", "pro", None][i % 3], "weight": i / 7},
        )
        for i in range(n)
    ]


def assert_same(plain: sy.Result, spilled: sy.Result) -> None:
    pdt.assert_frame_equal(plain.attempts, spilled.attempts)
    pdt.assert_frame_equal(plain.requests, spilled.requests)
    assert spilled.strategy == plain.strategy and spilled.seed == plain.seed


@pytest.mark.parametrize("text_ids", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spilled_frames_are_identical_to_in_memory_ones(tmp_path, tiny_chunks, seed, text_ids):
    requests = dataset(240, text_ids)
    host = busy_host()
    plain = sy.run(mixed, requests, host=host, seed=seed, concurrency=16)
    spilled = sy.run(mixed, requests, host=host, seed=seed, concurrency=16, spill=tmp_path / "s")
    assert_same(plain, spilled)
    attempts, frame = plain.attempts, plain.requests
    # the workload covers what the frames must carry through
    assert set(attempts["status"]) == {"ok", "error", "cancelled", "skipped"}
    assert attempts["retried"].any() and attempts["fallback_reason"].notna().any()
    assert attempts["race_id"].notna().any() and attempts["http_status"].notna().any()
    assert set(frame["status"]) == {"ok", "failed"}
    assert {"tier", "weight", "evidence_won", "evidence_verdict", "evidence_tags"} <= set(frame)
    assert (frame["error_kind"] == "algorithm_error").any()
    chunks = sorted(p.name for p in (tmp_path / "s").glob("attempts-*.parquet"))
    assert len(chunks) > 3


def test_open_loop_arrivals_and_the_asyncio_engine_spill_identically(tmp_path, tiny_chunks):
    requests = dataset(120, text_ids=True)
    host = busy_host()
    for engine in ("kernel", "asyncio"):
        kwargs = {
            "host": host,
            "arrivals": sy.traffic.Poisson(4.0),
            "concurrency": 12,
            "engine": engine,
        }
        plain = sy.run(mixed, requests, **kwargs)
        spilled = sy.run(mixed, requests, spill=tmp_path / engine, **kwargs)
        assert spilled.engine == engine
        assert_same(plain, spilled)


def test_compare_spills_each_strategy_and_seed_to_its_own_folder(tmp_path, tiny_chunks):
    requests = dataset(90, text_ids=False)
    host = busy_host()
    strategies = {
        "mixed": mixed,
        "chain a>b": sy.strategies.fallback_chain(["flaky", "steady"]),
    }
    plain = sy.compare(strategies, requests, host=host, seeds=[3, 4])
    spilled = sy.compare(strategies, requests, host=host, seeds=[3, 4], spill=tmp_path)
    folders = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert folders == ["chain_a_b-seed3", "chain_a_b-seed4", "mixed-seed3", "mixed-seed4"]
    for folder in folders:
        meta = json.loads((tmp_path / folder / "run.json").read_text())
        assert f"{meta['strategy']}-seed{meta['seed']}".replace(" a>b", "_a_b") == folder
    for a, b in zip(plain.results, spilled.results, strict=True):
        assert_same(a, b)
    pdt.assert_frame_equal(plain.requests, spilled.requests)
    pdt.assert_frame_equal(plain.summary(), spilled.summary())


def test_chunks_are_written_while_the_run_goes(tmp_path, tiny_chunks):
    folder = tmp_path / "s"
    seen: dict[int, tuple[int, int, bool]] = {}

    async def watching(request, driver):
        n = request.metadata["n"]
        if n in (60, 119):  # what is on disk midway, and when the last request starts
            seen[n] = (
                len(list(folder.glob("attempts-*.parquet"))),
                len(list(folder.glob("requests-*.parquet"))),
                (folder / "run.json").exists(),
            )
        return sy.route_to("flaky", request, fallbacks=["steady"])

    requests = dataset(120, text_ids=False)
    result = sy.run(watching, requests, host=busy_host(), concurrency=4, spill=folder)
    assert seen[60][0] >= 5 and seen[60][1] >= 5
    assert seen[119][0] > seen[60][0] and seen[119][1] > seen[60][1]
    assert not seen[119][2]
    assert (folder / "run.json").exists()  # written once the run has ended
    assert len(result.requests) == 120


def test_memory_holds_only_the_attempts_after_the_watermark(tmp_path, monkeypatch):
    """A request that runs long keeps the attempts after its first one in memory; the rest go."""
    monkeypatch.setattr(_spill, "CHUNK_ROWS", 8)
    held: dict[int, int] = {}

    async def one_slow(request, driver):
        n = request.metadata["n"]
        held[n] = driver._state.run.log.held()  # attempts in memory when request n starts
        if n == 200:
            response = await driver.call_model(request, ["steady"])
            await driver.sleep(1000.0)  # holds the watermark at its first attempt
            return sy.answered("steady", response)
        return sy.route_to("steady", request)

    host = busy_host()
    requests = dataset(400, text_ids=False)
    plain = sy.run(one_slow, requests, host=host, concurrency=8)
    held.clear()
    spilled = sy.run(one_slow, requests, host=host, concurrency=8, spill=tmp_path)
    assert_same(plain, spilled)
    # before request 200's first attempt, a few chunks at most (those in flight, those waiting
    # for a full chunk); after it, every attempt stays in memory
    assert max(held[n] for n in range(200)) < 3 * 8
    assert held[399] >= 190


def test_a_spilled_result_reads_its_frames_only_when_used(tmp_path, monkeypatch):
    reads: list[str] = []
    original_attempts = _spill.SpilledRun.attempts
    original_requests = _spill.SpilledRun.requests

    def counting_attempts(self):
        reads.append("attempts")
        return original_attempts(self)

    def counting_requests(self):
        reads.append("requests")
        return original_requests(self)

    monkeypatch.setattr(_spill.SpilledRun, "attempts", counting_attempts)
    monkeypatch.setattr(_spill.SpilledRun, "requests", counting_requests)
    plain = sy.run(mixed, dataset(60, text_ids=False), host=busy_host())
    result = sy.run(mixed, dataset(60, text_ids=False), host=busy_host(), spill=tmp_path)
    text = repr(result)  # the repr reads only the status and error columns
    assert reads == []
    assert text.splitlines()[0] == repr(plain).splitlines()[0]
    assert isinstance(result.__dict__["_attempts"], _spill.SpilledFrame)
    frame = result.requests
    assert reads == ["requests"]
    assert result.requests is frame  # read once, then kept
    result.summary()
    assert reads == ["requests", "attempts"]
    pdt.assert_frame_equal(result.summary(), plain.summary())


def test_a_result_refuses_a_folder_a_later_run_wrote_again(tmp_path):
    requests = dataset(30, text_ids=False)
    first = sy.run(mixed, requests, host=busy_host(), spill=tmp_path)
    sy.run(mixed, requests, host=busy_host(), seed=1, spill=tmp_path)
    with pytest.raises(sy.SykitError, match="no longer holds this run's records"):
        _ = first.attempts


def test_rewriting_a_folder_sykit_wrote_clears_it(tmp_path):
    requests = dataset(30, text_ids=False)
    sy.compare({"a": mixed, "b": mixed}, requests, host=busy_host(), spill=tmp_path)
    assert (tmp_path / "a-seed0").is_dir()
    result = sy.run(mixed, requests, host=busy_host(), spill=tmp_path)  # now one run, no subfolders
    assert not any(p.is_dir() for p in tmp_path.iterdir())
    assert len(result.requests) == 30


def test_bad_spill_arguments_are_refused_before_the_run(tmp_path):
    requests = dataset(5, text_ids=False)
    host = busy_host()
    a_file = tmp_path / "records.parquet"
    a_file.write_text("x")
    with pytest.raises(sy.ArgumentError, match="is a file"):
        sy.run(mixed, requests, host=host, spill=a_file)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(sy.ArgumentError, match="not written by sykit"):
        sy.run(mixed, requests, host=host, spill=foreign)
    with pytest.raises(sy.ArgumentError, match="not written by sykit"):
        sy.compare({"a": mixed}, requests, host=host, spill=str(foreign))
    assert (foreign / "notes.txt").read_text() == "keep me"
    with pytest.raises(sy.ArgumentTypeError, match="spill must be a folder path"):
        sy.run(mixed, requests, host=host, spill=3)
    with pytest.raises(sy.ArgumentError, match="empty string"):
        sy.run(mixed, requests, host=host, spill="")
    # a folder sykit wrote, with a file of someone else's added: not overwritten either
    ours = tmp_path / "ours"
    sy.run(mixed, requests, host=host, spill=ours)
    (ours / "notes.txt").write_text("mine")
    with pytest.raises(sy.ArgumentError, match=r"holds files sykit did not write \('notes\.txt'\)"):
        sy.run(mixed, requests, host=host, spill=ours)


def test_an_empty_existing_folder_is_used(tmp_path):
    requests = dataset(12, text_ids=True)
    plain = sy.run(mixed, requests, host=busy_host())
    spilled = sy.run(mixed, requests, host=busy_host(), spill=tmp_path)
    assert_same(plain, spilled)


def test_arun_spills_too(tmp_path, tiny_chunks):
    requests = dataset(40, text_ids=False)
    plain = sy.run(mixed, requests, host=busy_host())
    spilled = asyncio.run(sy.arun(mixed, requests, host=busy_host(), spill=tmp_path))
    assert_same(plain, spilled)


def test_evidence_that_cannot_be_pickled_stops_the_run_with_a_clear_error(tmp_path):
    async def unpicklable(request, driver):
        driver.evidence(callback=lambda: None)
        return sy.route_to("steady", request)

    with pytest.raises(sy.ArgumentTypeError, match=r"'evidence_callback'.*picklable"):
        sy.run(unpicklable, dataset(3, text_ids=False), host=busy_host(), spill=tmp_path)


def test_an_interrupted_run_spills_what_it_had(tmp_path, tiny_chunks):
    async def stopped(request, driver):
        if request.metadata["n"] == 70:
            raise KeyboardInterrupt  # as Ctrl-C would, in the middle of the run
        return await mixed(request, driver)

    requests = dataset(120, text_ids=False)
    with pytest.warns(UserWarning, match="interrupted"):
        plain = sy.run(stopped, requests, host=busy_host(), concurrency=8)
    with pytest.warns(UserWarning, match="interrupted"):
        spilled = sy.run(stopped, requests, host=busy_host(), concurrency=8, spill=tmp_path)
    assert plain.interrupted and spilled.interrupted
    assert 0 < len(plain.requests) < 120
    assert_same(plain, spilled)


def test_a_run_started_again_on_asyncio_starts_its_folder_afresh(tmp_path, tiny_chunks):
    async def awaits_asyncio(request, driver):
        if request.metadata["n"] == 50:
            await asyncio.sleep(0.25)  # the kernel cannot run this: the run starts again on asyncio
        return await mixed(request, driver)

    requests = dataset(80, text_ids=False)
    plain = sy.run(awaits_asyncio, requests, host=busy_host())
    spilled = sy.run(awaits_asyncio, requests, host=busy_host(), spill=tmp_path)
    assert plain.engine == spilled.engine == "asyncio"
    assert_same(plain, spilled)
    meta = json.loads((tmp_path / "run.json").read_text())
    written = {p.name for p in tmp_path.glob("*-*.parquet")}
    assert written == set(meta["attempt_files"]) | set(meta["request_files"])


def test_handed_over_attempts_keep_the_run_wide_numbering():
    from sykit._run.attempt_log import AttemptLog
    from sykit._run.records import decoded

    log = AttemptLog(["a", "b"])
    rows = [log.begin(k, 0, 0, 0, k % 2, 0, 0, -1, float(k)) for k in range(5)]
    assert rows == [0, 1, 2, 3, 4]
    raw = log.hand_over(3)
    assert raw["request"].tolist() == [0, 1, 2] and raw["start_s"].tolist() == [0.0, 1.0, 2.0]
    assert len(log) == 5 and log.held() == 2
    assert log.begin(5, 0, 0, 0, 0, 0, 0, -1, 5.0) == 5  # numbering goes on
    log.ok(4, 9.0, None)
    assert log.raw()["end_s"].tolist()[1] == 9.0 and log.model_of(4) == "a"
    # a handed-over attempt reads as matching nothing, and a late change to it is not recorded
    assert log.request_of(1) == -1 and log.status_of(1) == -1
    log.ok(1, 7.0, None)
    log.set_served(1)
    assert log.raw()["end_s"].tolist()[0] != 7.0 and decoded(log.raw())["served"].tolist() == [
        0,
        0,
        0,
    ]
    with pytest.raises(LookupError):
        log.model_of(1)


# -- a run that did not end: reading back what it completed, and not clearing it -----------------


def _rows_of(result: sy.Result, request_ids) -> tuple:
    """The result's requests and attempts of ``request_ids``, numbered afresh, as plain values."""
    requests = result.requests[result.requests["request_id"].isin(request_ids)]
    attempts = result.attempts[result.attempts["request_id"].isin(request_ids)]
    return tuple(
        frame.reset_index(drop=True).astype(object).where(frame.notna().to_numpy(), None)
        for frame in (requests, attempts)
    )


def _assert_rows_equal(expected: sy.Result, got: sy.Result, request_ids) -> None:
    for a, b in zip(_rows_of(expected, request_ids), _rows_of(got, request_ids), strict=True):
        pdt.assert_frame_equal(a, b)


def test_from_spill_reads_the_whole_chunks_of_a_run_that_did_not_end(tmp_path, tiny_chunks):
    requests = dataset(120, text_ids=True)
    plain = sy.run(mixed, requests, host=busy_host(), concurrency=8)
    sy.run(mixed, requests, host=busy_host(), concurrency=8, spill=tmp_path)
    # as a SIGKILL leaves it: no run.json, a chunk cut short, one being written
    (tmp_path / "run.json").unlink()
    cut = tmp_path / "requests-000003.parquet"
    lost = pq.read_table(cut).column("index").to_pylist()
    cut.write_bytes(cut.read_bytes()[:100])
    (tmp_path / "requests-000999.parquet.part").write_bytes(b"PAR1 half")
    kept = [
        i
        for path in sorted(tmp_path.glob("requests-*.parquet"))
        if path != cut
        for i in pq.read_table(path).column("index").to_pylist()
    ]
    with pytest.warns(UserWarning) as caught:
        recovered = sy.Result.from_spill(tmp_path)
    text = " ".join(str(w.message) for w in caught)
    assert "did not finish" in text
    assert "'requests-000003.parquet'" in text and "'requests-000999.parquet.part'" in text
    assert recovered.interrupted and recovered.strategy == plain.strategy
    ids = [requests[i].id for i in sorted(kept)]
    assert sorted(recovered.requests["request_id"]) == ids and lost
    assert not set(recovered.requests["request_id"]) & {requests[i].id for i in lost}
    _assert_rows_equal(plain, recovered, ids)


def test_from_spill_reads_a_finished_run_as_its_result(tmp_path, tiny_chunks):
    requests = dataset(60, text_ids=False)
    spilled = sy.run(mixed, requests, host=busy_host(), spill=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = sy.Result.from_spill(str(tmp_path))
    assert_same(spilled, again)
    assert not again.interrupted
    with pytest.raises(sy.ArgumentError, match="does not exist"):
        sy.Result.from_spill(tmp_path / "nowhere")
    (tmp_path / "other").mkdir()
    with pytest.raises(sy.ArgumentError, match="not a spill folder sykit wrote"):
        sy.Result.from_spill(tmp_path / "other")


def test_a_folder_holding_a_run_that_did_not_end_is_refused_not_cleared(tmp_path):
    requests = dataset(30, text_ids=False)
    sy.run(mixed, requests, host=busy_host(), spill=tmp_path)
    (tmp_path / "run.json").unlink()  # as a killed run leaves it
    chunks = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(sy.ArgumentError, match=r"did not finish.*sy\.Result\.from_spill"):
        sy.run(mixed, requests, host=busy_host(), spill=tmp_path)
    with pytest.raises(sy.ArgumentError, match="did not finish"):
        sy.compare({"a": mixed}, requests, host=busy_host(), spill=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == chunks  # nothing cleared
    # one strategy of a compare killed: refused too, naming its subfolder
    cmp = tmp_path / "cmp"
    sy.compare({"a": mixed, "b": mixed}, requests, host=busy_host(), spill=cmp)
    (cmp / "b-seed0" / "run.json").unlink()
    with pytest.raises(sy.ArgumentError, match="b-seed0"):
        sy.run(mixed, requests, host=busy_host(), spill=cmp)


def test_a_run_stopped_by_an_error_leaves_a_folder_the_next_run_clears(tmp_path, tiny_chunks):
    async def breaks_late(request, driver):
        if request.metadata["n"] == 50:
            driver.evidence(callback=lambda: None)  # cannot be written: the run stops
        return sy.route_to("steady", request)

    requests = dataset(60, text_ids=False)
    with pytest.raises(sy.ArgumentTypeError):
        sy.run(breaks_late, requests, host=busy_host(), spill=tmp_path)
    assert list(tmp_path.glob("requests-*.parquet"))
    result = sy.run(mixed, requests, host=busy_host(), spill=tmp_path)
    assert len(result.requests) == 60


_KILLED_RUN = """
import sys, time
sys.path.insert(0, {tests!r})
import sykit as sy
from sykit._run import spill
from test_spill import busy_host, dataset, mixed

spill.CHUNK_ROWS = 4

async def stalls(request, driver):
    if request.metadata["n"] == 150:
        open({ready!r}, "w").close()
        time.sleep(60)  # the parent kills the process here
    return await mixed(request, driver)

sy.run(stalls, dataset(200, text_ids=False), host=busy_host(), concurrency=4, spill={folder!r})
"""


def test_from_spill_recovers_a_killed_process_run(tmp_path):
    folder, ready = tmp_path / "spill", tmp_path / "ready"
    script = _KILLED_RUN.format(
        tests=str(Path(__file__).parent), ready=str(ready), folder=str(folder)
    )
    process = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the run in the subprocess never reached request 150"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    with pytest.raises(sy.ArgumentError, match="did not finish"):
        sy.run(mixed, dataset(5, text_ids=False), host=busy_host(), spill=folder)
    with pytest.warns(UserWarning, match="did not finish"):
        recovered = sy.Result.from_spill(folder)
    assert recovered.interrupted and 100 <= len(recovered.requests) < 150

    async def stalls(request, driver):  # the same, under the killed run's name, never stalling
        return await mixed(request, driver)

    plain = sy.run(stalls, dataset(200, text_ids=False), host=busy_host(), concurrency=4)
    _assert_rows_equal(plain, recovered, list(recovered.requests["request_id"]))


def _interrupting_writes(monkeypatch, kind: str, at: int, moment: str) -> None:
    """Ctrl-C (a real SIGINT) as the ``at``-th ``kind`` chunk is written: before the file is
    written, or once it is whole and before it gets its name (``moment``)."""
    write, replace = _spill._Writer._write, os.replace
    seen = []

    def interrupted_write(self, name, columns, tables):
        if name.startswith(kind):
            seen.append(name)
            if len(seen) == at:
                if moment == "before":
                    os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the write
                else:
                    monkeypatch.setattr(_spill.os, "replace", renamed_after_a_signal)
        write(self, name, columns, tables)

    def renamed_after_a_signal(source, target):
        monkeypatch.setattr(_spill.os, "replace", replace)  # once
        os.kill(os.getpid(), signal.SIGINT)
        replace(source, target)

    monkeypatch.setattr(_spill._Writer, "_write", interrupted_write)


def _rows_on_disk(folder: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in folder.glob("requests-*.parquet*"))


@pytest.mark.parametrize("moment", ["before", "after"])
@pytest.mark.parametrize("kind", ["attempts", "requests"])
@pytest.mark.parametrize("engine", ["bulk", "kernel"])
def test_ctrl_c_while_a_chunk_is_written_keeps_every_finished_row(
    tmp_path, tiny_chunks, monkeypatch, kind, engine, moment
):
    from sykit._run.engines.bulk import _run as bulk

    monkeypatch.setattr(bulk, "_BLOCK", 16)  # the bulk engine records 16 requests at a time
    chain = sy.strategies.fallback_chain(["flaky", "steady"])
    policy = sy.HostPolicy(max_retries=1, cooldown_s=0, timeout_s=4.0)  # no cooldown: bulk runs it
    host = sy.SimHost(busy_host().profiles, policy=policy)
    requests = dataset(120, text_ids=True)
    plain = sy.run(chain, requests, host=host, concurrency=8, engine=engine)
    _interrupting_writes(monkeypatch, kind, at=3, moment=moment)
    with pytest.warns(UserWarning, match="interrupted"):
        stopped = sy.run(chain, requests, host=host, concurrency=8, engine=engine, spill=tmp_path)
    assert stopped.interrupted and stopped.engine == engine
    finished = list(stopped.requests["request_id"])
    assert 0 < len(finished) < 120
    if engine == "bulk" and kind == "requests":  # the chunk of the third block is kept whole
        assert len(finished) == 3 * 16
    # every row a file holds is in the Result, and nothing is left half-written
    assert _rows_on_disk(tmp_path) == len(finished)
    assert not list(tmp_path.glob("*.part"))
    assert set(stopped.attempts["request_id"]) == set(finished)
    _assert_rows_equal(plain, stopped, finished)
    assert_same(stopped, sy.Result.from_spill(tmp_path))


def test_ctrl_c_while_a_spilling_run_starts_raises_and_leaves_a_folder_the_next_run_clears(
    tmp_path, monkeypatch
):
    def interrupted_ids(self, ids):
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(_spill._Writer, "write_ids", interrupted_ids)
    with pytest.raises(KeyboardInterrupt):
        sy.run(mixed, dataset(5, text_ids=False), host=busy_host(), spill=tmp_path)
    monkeypatch.undo()
    result = sy.run(mixed, dataset(5, text_ids=False), host=busy_host(), spill=tmp_path)
    assert len(result.requests) == 5


def test_ctrl_c_between_two_runs_of_a_comparison_keeps_the_first(tmp_path, monkeypatch):
    attach = _spill.Spill.attach
    attached = []

    def interrupted_attach(self, run, ids):
        attached.append(run.strategy)
        if len(attached) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        attach(self, run, ids)

    monkeypatch.setattr(_spill.Spill, "attach", interrupted_attach)
    strategies = {"steady": sy.strategies.single("steady"), "mixed": mixed}
    with pytest.warns(UserWarning, match=r"returning the 10 of 20 .*each one whole"):
        comparison = sy.compare(
            strategies, dataset(10, text_ids=False), host=busy_host(), spill=tmp_path
        )
    assert [r.strategy for r in comparison.results] == ["steady"]


def test_ctrl_c_as_a_spilling_run_ends_returns_it_whole_and_stops_the_comparison(
    tmp_path, monkeypatch
):
    finish = _spill._Writer.finish
    finished = []

    def interrupted_finish(self, run, requests, ids):
        finished.append(run.strategy)
        os.kill(os.getpid(), signal.SIGINT)
        return finish(self, run, requests, ids)

    monkeypatch.setattr(_spill._Writer, "finish", interrupted_finish)
    strategies = {"steady": sy.strategies.single("steady"), "mixed": mixed}
    with pytest.warns(UserWarning, match=r"returning the 10 of 20 .*each one whole"):
        comparison = sy.compare(
            strategies, dataset(10, text_ids=False), host=busy_host(), spill=tmp_path
        )
    (result,) = comparison.results
    assert finished == ["steady"] and not result.interrupted and len(result.requests) == 10
    assert_same(result, sy.Result.from_spill(tmp_path / "steady-seed0"))


@pytest.mark.parametrize("spill", [False, True])
def test_ctrl_c_during_a_bulk_run_keeps_the_blocks_it_recorded(tmp_path, monkeypatch, spill):
    from sykit._run.engines.bulk import _run as bulk

    monkeypatch.setattr(bulk, "_BLOCK", 16)
    place = bulk._Bulk._place_and_record
    blocks = []

    def interrupted(self, low, *args):
        blocks.append(low)
        if len(blocks) == 4:
            os.kill(os.getpid(), signal.SIGINT)  # while the fourth block is being placed
        return place(self, low, *args)

    chain = sy.strategies.fallback_chain(["flaky", "steady"])
    host = sy.SimHost(busy_host().profiles, policy=sy.HostPolicy(max_retries=1, cooldown_s=0))
    requests = dataset(120, text_ids=True)
    plain = sy.run(chain, requests, host=host, concurrency=8)
    monkeypatch.setattr(bulk._Bulk, "_place_and_record", interrupted)
    with pytest.warns(UserWarning, match="returning the 48 of 120"):
        stopped = sy.run(
            chain, requests, host=host, concurrency=8, spill=tmp_path if spill else None
        )
    assert stopped.engine == "bulk" and stopped.interrupted
    finished = list(stopped.requests["request_id"])
    assert finished == [r.id for r in requests[:48]]
    _assert_rows_equal(plain, stopped, finished)
