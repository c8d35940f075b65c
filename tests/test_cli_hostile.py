"""The ``sykit`` command on legal but unusual input: a bad setting is refused before anything
runs, in one line naming the option and what to do; an ``--out`` folder holds one run's files."""

from __future__ import annotations

import importlib
import json

import pytest

import sykit as sy
from sykit._cli import experiment, writers
from sykit._cli.main import main

#: A compare job small enough to run in a second: no learned routers, no robustness run.
TINY = ["compare", "--sample", "10", "--quiet", "--workers", "1", "--faults", "none"]


@pytest.fixture
def no_run(monkeypatch):
    """Make any run fail the test: a refused setting must be refused before running."""

    def refuse(*args, **kwargs):
        raise AssertionError("the job ran although a setting was bad")

    monkeypatch.setattr(importlib.import_module("sykit._cli.main"), "compare", refuse)
    monkeypatch.setattr(experiment, "compare", refuse)


@pytest.mark.parametrize("command", [["demo", "--quiet"], TINY])
def test_an_out_path_that_is_a_file_is_refused_before_the_run(command, tmp_path, no_run, capsys):
    (tmp_path / "results").write_text("mine")
    with pytest.raises(SystemExit, match=r"--out '.*results': is a file, not a folder"):
        main([*command, "--out", str(tmp_path / "results")])
    assert (tmp_path / "results").read_text() == "mine"
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("command", [["demo", "--quiet"], TINY])
def test_an_out_path_inside_a_file_names_the_file(command, tmp_path, no_run):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match=r"'.*notes\.txt' is a file, not a folder"):
        main([*command, "--out", str(tmp_path / "notes.txt" / "results")])


@pytest.mark.parametrize("command", [["demo", "--quiet"], TINY])
def test_an_unwritable_out_folder_is_refused_before_the_run(command, tmp_path, no_run, monkeypatch):
    def denied(*args, dir=None, **kwargs):
        raise PermissionError(13, "Permission denied", str(dir))

    monkeypatch.setattr(writers.tempfile, "TemporaryFile", denied)
    with pytest.raises(SystemExit, match=r"cannot write there: Permission denied"):
        main([*command, "--out", str(tmp_path / "results")])


@pytest.mark.parametrize("command", [["demo", "--quiet"], TINY])
def test_an_empty_out_is_refused_rather_than_writing_nothing(command, no_run):
    with pytest.raises(SystemExit, match=r"--out is empty"):
        main([*command, "--out", ""])


def _no_drawing(out, figures):
    """Figures as empty files: what is written matters here, not what is drawn."""
    for name in figures:
        (out / name).write_bytes(b"")
    return list(figures)


def test_a_compare_in_a_used_folder_leaves_none_of_an_earlier_runs_files(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(writers, "save_figures", _no_drawing)
    monkeypatch.setattr(
        writers, "_sweep_files", lambda out, curves, plotted: _no_drawing(out, ["sweeps.csv"])
    )
    out = tmp_path / "rés ults"
    (out / "keep").mkdir(parents=True)
    (out / "mine.txt").write_text("mine")
    for name in ("learned_routers.csv", "robustness_summary.csv", "race_timeline.png"):
        (out / name).write_text("an earlier run's")  # files this run does not write
    assert main([*TINY, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    left = {p.name for p in out.iterdir()}
    assert not {"learned_routers.csv", "robustness_summary.csv", "race_timeline.png"} & left
    assert {"keep", "mine.txt", "run.json", "routing_summary.csv"} <= left
    assert (out / "mine.txt").read_text() == "mine"
    assert json.loads((out / "run.json").read_text())["dataset"]["requests"] == 10
    assert "removed 3 files an earlier run left there" in " ".join(printed.split())


def test_remove_stale_removes_only_the_jobs_files_this_run_did_not_write(tmp_path):
    for name in ("run.json", "learned_routers.csv", "mine.csv"):
        (tmp_path / name).write_text("x")
    (tmp_path / "outcomes.png").mkdir()  # not a file of an earlier run: left alone
    assert writers.remove_stale(tmp_path, ["run.json"]) == ["learned_routers.csv"]
    assert {p.name for p in tmp_path.iterdir()} == {"run.json", "mine.csv", "outcomes.png"}


@pytest.mark.parametrize("outage", ["weak:1..2-3", "weak:.-5", "strong:0-1.2.3"])
def test_an_outage_with_a_malformed_number_is_refused_with_an_example(outage, no_run):
    with pytest.raises(SystemExit, match=r"START and END must be numbers of seconds, e.g."):
        main([*TINY, "--outage", outage])


@pytest.mark.parametrize("seed", ["-1", str(2**63)])
def test_compare_refuses_a_seed_it_cannot_draw_with_before_running(seed, no_run):
    with pytest.raises(
        SystemExit, match=rf"--seed must be a whole number from 0 to 2\*\*63 - 1, got {seed}"
    ):
        main([*TINY, "--seed", seed])


def test_compare_takes_the_largest_seed(capsys):
    assert main([*TINY, "--seed", str(2**63 - 1)]) == 0


def test_an_unknown_benchmark_is_refused_naming_the_datasets_benchmarks(no_run):
    with pytest.raises(
        SystemExit,
        match=r"--benchmark 'GSM8K': not a benchmark of 'routellm'; use one of gsm8k, mmlu",
    ):
        main([*TINY, "--benchmark", "GSM8K"])
    with pytest.raises(SystemExit, match=r"--benchmark '': not a benchmark"):
        main([*TINY, "--benchmark", ""])


def test_a_benchmark_of_a_dataset_without_benchmarks_is_refused_in_one_line(no_run):
    with pytest.raises(SystemExit) as refused:
        main([*TINY, "--dataset", "mmlu_pro", "--benchmark", "gsm8k"])
    message = str(refused.value.code)
    assert (
        message
        == "--benchmark 'gsm8k': dataset 'mmlu_pro' has no benchmarks; leave --benchmark out"
    )


@pytest.mark.parametrize("requests", ["0", "-5"])
def test_demo_refuses_fewer_than_one_request_naming_the_option(requests, no_run):
    with pytest.raises(
        SystemExit, match=rf"--requests must be a number of requests ≥ 1, got {requests}"
    ):
        main(["demo", "--quiet", "--requests", requests])


def test_compare_on_a_dataset_without_routellms_pair_takes_the_better_model_as_strong(capsys):
    assert main([*TINY, "--dataset", "mmlu_pro"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    quality = sy.datasets.load("mmlu_pro").summary()["mean_quality"]
    weak, strong = experiment.weak_and_strong("mmlu_pro")
    assert quality[strong] > quality[weak]
    assert f"weak={weak}, strong={strong}" in printed
    assert {weak, strong} == {"c4ai-command-r-v01", "yi-34b"}  # the pair itself is unchanged
