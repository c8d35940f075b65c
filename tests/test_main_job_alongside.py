"""``sykit compare`` runs its sweeps and learned routers in a second process alongside the other
parts: the same output as in one process, errors raised in the job, the sweeps' files written
there and the others while the second process finishes."""

from __future__ import annotations

import pickle
import re

import pandas as pd
import pytest

import sykit as sy
from sykit.__main__ import main
from sykit._cli.background import Background


def _tables(text: str) -> str:
    """The printed tables, without the files and timing lines that end the job."""
    return re.sub(r"\n(wrote \d+ files|done in ).*", "", text, flags=re.S).rstrip()


def test_two_processes_print_and_write_what_one_does(capsys, tmp_path):
    args = ["compare", "--sample", "120", "--quiet", "--faults", "none"]
    assert main([*args, "--workers", "1", "--out", str(tmp_path / "one")]) == 0
    alone = capsys.readouterr().out
    assert main([*args, "--workers", "2", "--out", str(tmp_path / "two")]) == 0
    both = capsys.readouterr().out
    assert _tables(alone) == _tables(both)
    for part in ("sweeps", "learned routers", "judge accuracies"):
        assert part in alone
    probe = Background(int, workers=2)
    if probe.alongside:  # a machine with two cores
        assert "sweeps (alongside, in a second process)" in both
    probe.cancel()
    assert "(alongside" not in alone
    for name in ("learned_routers.csv", "routing_summary.csv", "sweeps.csv", "threshold_curve.png"):
        assert (tmp_path / "two" / name).exists()
        assert f" {name}" in both
    sweeps = [pd.read_csv(tmp_path / run / "sweeps.csv") for run in ("one", "two")]
    pd.testing.assert_frame_equal(*sweeps)
    assert len(sweeps[0]) == 9 + 5  # the threshold and random sweeps' points


def test_workers_below_one_are_refused():
    with pytest.raises(SystemExit, match=r"--workers must be 1 or more, got 0"):
        main(["compare", "--sample", "20", "--quiet", "--workers", "0"])


def _fails(text: str) -> None:
    raise ValueError(text)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_error_of_the_part_alongside_is_raised_when_its_result_is_asked_for(workers):
    part = Background(_fails, "no grades", workers=workers)
    with pytest.raises(ValueError, match="no grades"):
        part.result()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_part_alongside_returns_its_result_and_seconds(workers):
    part = Background(sum, [1, 2, 3], workers=workers)
    value, seconds = part.result()
    assert value == 6 and seconds >= 0
    part.cancel()  # after the result: nothing left to stop


def test_a_dataset_pickles_as_its_table_and_settings():
    ds = sy.datasets.load("routellm").filter(benchmark="mt_bench")
    list(ds)  # its requests built: not sent
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.frame.equals(ds.frame)
    assert (copy.name, copy.models, copy.metadata_columns, copy.group_column) == (
        ds.name,
        ds.models,
        ds.metadata_columns,
        ds.group_column,
    )
    assert [r.id for r in copy] == [r.id for r in ds]
    assert [sy.learn.prompt_text(r) for r in copy] == [sy.learn.prompt_text(r) for r in ds]


def test_the_files_written_beside_the_figures_equal_those_written_in_one_process(tmp_path):
    """The records (CSV and Parquet) are written by the second process's spare worker while
    the figures are drawn: the same bytes, the same list of files."""
    args = ["compare", "--sample", "120", "--quiet"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([*args, "--workers", "1", "--out", str(one)]) == 0
    assert main([*args, "--workers", "2", "--out", str(two)]) == 0
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in two.iterdir())
    assert "robustness_attempts.parquet" in names
    for name in names:
        if name != "run.json":  # its wall times differ
            assert (one / name).read_bytes() == (two / name).read_bytes(), name


def test_a_side_task_runs_on_the_spare_worker_or_here(tmp_path):
    import os

    for workers in (1, 2):
        part = Background(sum, [1, 2], workers=workers)
        wait = part.also(os.getpid)
        pid = wait()
        assert (pid != os.getpid()) == part.alongside
        assert part.result()[0] == 3
