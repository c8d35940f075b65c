"""What ``sykit compare`` prints fits the terminal, leads with findings computed from its
results, and its default robustness run makes the fallback strategies do their work."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest

import sykit as sy
from sykit._cli.experiment import default_outage, with_long_prompts
from sykit._cli.layout import fit_table, fmt_number, fmt_percent
from sykit._cli.main import main
from sykit._cli.prose import robustness_finding, routing_finding
from sykit._cli.writers import ROBUSTNESS_COLUMNS, ROUTING_COLUMNS

SAMPLE = 300


def run(argv: list[str], columns: int) -> str:
    """The text ``sykit`` prints with a terminal ``columns`` wide."""
    printed = io.StringIO()
    with (
        mock.patch.dict(os.environ, {"COLUMNS": str(columns)}),
        contextlib.redirect_stdout(printed),
    ):
        assert main(argv) == 0
    return printed.getvalue()


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> tuple[str, Path]:
    """One default run of the main job on a sample, its CSVs written."""
    out = tmp_path_factory.mktemp("job") / "results"
    printed = run(["compare", "--sample", str(SAMPLE), "--quiet", "--out", str(out)], 120)
    return printed, out


def table(printed: str, part: str) -> pd.DataFrame:
    """The table printed in a part, read back: columns split on two spaces or more."""
    lines = printed.split(part, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("strategy "))
    rows = []
    for line in lines[start:]:
        if not line or line.startswith(("(", "ok %", "$/1k")):
            break
        rows.append([cell.strip() for cell in line.split("  ") if cell.strip()])
    return pd.DataFrame(rows[1:], columns=rows[0]).set_index("strategy")


def test_every_line_fits_a_120_column_terminal(job):
    printed, _ = job
    assert max(len(line) for line in printed.splitlines()) <= 120
    assert "left out to fit" not in printed  # at 120 columns every printed column shows


def test_a_narrow_terminal_gets_fewer_columns_and_no_longer_lines(tmp_path):
    printed = run(["demo", "--requests", "60", "--quiet"], 60)
    assert max(len(line) for line in printed.splitlines()) <= 60
    assert "left out to fit 60 columns" in " ".join(printed.split())


def test_fit_table_leaves_out_columns_from_the_right_and_says_which():
    cells = pd.DataFrame({"strategy": ["a long strategy name"], "x": ["1.00"], "y": ["2.00"]})
    assert fit_table(cells, 80).splitlines()[0].split() == ["strategy", "x", "y"]
    narrow = fit_table(cells, 28)
    assert narrow.splitlines()[0].split() == ["strategy", "x"]
    assert "(y left out to fit 28 columns; see the CSVs of --out)" in " ".join(narrow.split())
    assert max(len(line) for line in narrow.splitlines()) <= 28


def test_the_csvs_keep_every_column(job):
    _, out = job
    routing = pd.read_csv(out / "routing_summary.csv")
    robustness = pd.read_csv(out / "robustness_summary.csv")
    assert set(ROUTING_COLUMNS) <= set(routing.columns)
    assert set(ROBUSTNESS_COLUMNS) <= set(robustness.columns)
    for column in ("n_ungraded", "latency_p95_s", "ttft_p50_s", "fallbacks_context_window"):
        assert column in routing.columns and column in robustness.columns
    assert (routing["d_cost_per_1k_requests_usd"] == routing["d_cost_usd"] * 1000).all()
    assert "d_quality_vs_fault_free" in robustness.columns


def test_the_records_are_also_written_as_parquet_with_their_types(job):
    """pd.read_csv guesses a large CSV's types a block at a time (a DtypeWarning where a text
    column is empty for a whole block); the Parquet beside each records CSV reads back exact."""
    import warnings

    _, out = job
    for name in ("routing_requests", "robustness_requests", "robustness_attempts"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parquet = pd.read_parquet(out / f"{name}.parquet")
        csv = pd.read_csv(out / f"{name}.csv", low_memory=False)
        assert list(parquet.columns) == list(csv.columns) and len(parquet) == len(csv)
        assert parquet["request_id"].astype(str).tolist() == csv["request_id"].astype(str).tolist()


def test_costs_are_per_1000_requests_in_both_printed_tables(job):
    printed, out = job
    routing = table(printed, "1. Routing quality")
    summary = pd.read_csv(out / "routing_summary.csv").set_index("strategy")
    assert "d_cost_usd" not in printed
    for strategy in ("weak only", "cascade (judge)"):
        shown = float(routing.loc[strategy, "Δ $/1k req"])
        assert shown == pytest.approx(summary.loc[strategy, "d_cost_usd"] * 1000, abs=0.006)
        cost = float(routing.loc[strategy, "$/1k req"])
        assert cost == pytest.approx(summary.loc[strategy, "cost_per_1k_requests_usd"], abs=0.006)


def test_each_part_leads_with_its_finding_computed_from_the_results(job):
    printed, out = job
    routing, robustness = printed.split("\n2. Robustness")
    fault_free = pd.read_csv(out / "routing_summary.csv")
    faulty = pd.read_csv(out / "robustness_summary.csv")
    lead = routing.split("1. Routing quality: no faults injected\n", 1)[1].split("\nstrategy ")[0]
    assert " ".join(lead.split()) == routing_finding(fault_free)
    assert lead.startswith("Finding: of the strategies you could deploy, ")
    lead = robustness.split("\n", 1)[1].split("\n  mixtral")[0]
    causes = "the faults, the outage and the long prompts"
    assert " ".join(lead.split()) == robustness_finding(faulty, fault_free, causes)


def test_the_default_robustness_run_makes_the_fallbacks_work(job):
    printed, out = job
    robustness = pd.read_csv(out / "robustness_summary.csv").set_index("strategy")
    shown = table(printed, "\n2. Robustness")
    for strategy in ("fallback weak>strong", "litellm-like"):
        assert robustness.loc[strategy, "fallbacks"] > 0
        assert int(shown.loc[strategy, "fallbacks"]) == robustness.loc[strategy, "fallbacks"]
        differs = robustness.loc[strategy] != robustness.loc["weak only"]
        assert differs[["success_rate", "mean_quality", "cost_per_1k_requests_usd"]].all()
    assert "retries" in shown.columns
    # the header states the outage and the long prompts behind those fallbacks
    assert "outage (503) from t=" in printed and "outage by default: " in printed
    run_json = json.loads((out / "run.json").read_text())
    long_ids = run_json["robustness_workload"]["long_prompt_request_ids"]
    assert len(long_ids) == round(0.01 * SAMPLE) == 3
    assert f"{len(long_ids)} of them (1.0%, drawn with seed 0) with a long context" in printed
    requests = pd.read_csv(out / "robustness_requests.csv")
    long = requests[requests["long_context"]]
    assert set(long["request_id"].astype(str)) == set(long_ids)
    weak = long[long["strategy"] == "weak only"]
    assert (weak["status"] != "ok").all() and (weak["error_kind"] == "context_window").all()


def test_flags_take_the_outage_and_the_long_prompts_away(capsys):
    printed = run(
        ["compare", "--sample", "60", "--quiet", "--outage", "none", "--long-prompts", "0"], 120
    )
    robustness = printed.split("\n2. Robustness")[1]
    assert "outage (503)" not in robustness and "outages: none" in robustness
    assert "none with a long context" in robustness
    assert "the faults cost most to" in " ".join(robustness.split())  # the random faults alone
    with pytest.raises(SystemExit, match="--long-prompts must be a share between 0 and 1"):
        main(["compare", "--sample", "20", "--quiet", "--long-prompts", "2"])


def test_the_long_prompts_are_drawn_with_the_seed_over_the_window():
    data = sy.datasets.load("routellm").head(200)
    workload, ids = with_long_prompts(data, 0.05, 32_768, seed=0)
    _, same = with_long_prompts(data, 0.05, 32_768, seed=0)
    _, other = with_long_prompts(data, 0.05, 32_768, seed=1)
    assert len(ids) == 10 and ids == same and ids != other
    tokens = {str(r.id): r.input_tokens for r in workload}
    assert all(32_768 < tokens[i] <= 1.5 * 32_768 for i in ids)
    before = {str(r.id): r.input_tokens for r in data}
    assert all(tokens[i] == before[i] for i in before if i not in ids)
    assert workload.frame["quality:gpt-4-1106-preview"].equals(
        data.frame["quality:gpt-4-1106-preview"]
    )


def test_the_default_outage_covers_a_tenth_of_the_time_weak_only_took_to_start():
    requests = pd.DataFrame(
        {"strategy": ["weak only"] * 3 + ["strong only"], "start_s": [0.0, 20.0, 40.0, 99.0]}
    )
    assert default_outage(requests, "weak only") == (10.0, 14.0)


def test_numbers_never_round_to_a_misleading_figure():
    assert fmt_percent(0.996) == "99.6%" and fmt_percent(1.0) == "100%" and fmt_percent(0) == "0%"
    assert fmt_percent(0.9997) == "99.97%" and fmt_percent(0.0002) == "0.02%"
    assert fmt_number(-0.001, 2, sign=True) == "+0.00"
    assert fmt_number(float("nan"), 2) == "–"


def test_the_legend_explains_only_the_columns_shown(job):
    printed, _ = job
    assert "waste % = share of the spend" in " ".join(printed.split())  # all fit at 120
    narrow = run(["compare", "--sample", str(SAMPLE), "--quiet"], 100)
    part = " ".join(narrow.split("2. Robustness", 1)[1].split())
    assert "waste % left out to fit 100 columns" in part
    assert "waste % =" not in part


def test_the_job_ends_with_its_time_per_part(job):
    """The last line: the whole wall time, then each part's; the parts this process ran (and its
    wait for the second one) add up to no more than the whole, and a part run alongside in a
    second process says so and takes no more than the whole."""
    import re

    printed, _ = job
    last = " ".join(" ".join(printed.strip().splitlines()[-2:]).split("done in ", 1)[1].split())
    whole_text, parts_text = last.split(" s of wall time: ")
    whole = float(whole_text)
    parts = {
        name: float(seconds)
        for name, seconds in re.findall(r"([a-z][a-z ,()]*?) ([\d.]+)(?:, |$)", parts_text)
    }
    assert list(parts)[:2] == ["quality", "robustness"] and list(parts)[-1] == "files"
    alongside = {name for name in parts if "(alongside" in name}
    assert {name.split(" (")[0] for name in parts} >= {"learned routers", "judge accuracies"}
    here = [s for name, s in parts.items() if name not in alongside]
    assert all(s >= 0 for s in parts.values()) and sum(here) <= whole + 0.3
    assert all(parts[name] <= whole + 0.3 for name in alongside)


def test_each_figure_of_the_job_says_which_run_it_shows():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sykit._cli import writers

    figure, (left, right) = plt.subplots(1, 2)
    left.set_title("Attempt outcomes", loc="left")
    right.set_title("a title long enough to need a line of its own for the run it shows " * 2)
    writers._titled(figure, writers.FAULTY_RUN)
    assert left.get_title(loc="left") == "Attempt outcomes — part 2: under injected faults"
    assert right.get_title().endswith("\npart 2: under injected faults")
    plt.close(figure)


@pytest.mark.parametrize("columns", [80, 120])
def test_every_figure_the_robustness_finding_quotes_is_a_cell_of_its_printed_table(job, columns):
    """Read at 80 and at 120 columns: the finding names its criterion, and the shares answered
    and the changes it quotes are cells of the robustness table printed below it."""
    import re

    printed = job[0] if columns == 120 else run(["compare", "--sample", str(SAMPLE), "--quiet"], 80)
    part = printed.split("2. Robustness", 1)[1]
    finding = " ".join(part.split("\n  mixtral", 1)[0].split())
    assert "ranked by the answered requests it lost and then by its quality" in finding
    table = part[part.index("\nstrategy ") :].split("\n\n", 1)[0]
    cells = {cell for line in table.splitlines()[1:] for cell in line.split()}
    quoted = re.findall(r"([\d.]+%) answered", finding)
    quoted += re.findall(r"Δ (?:quality|\$/1k|p99) ([+-][\d.]+)", finding)
    assert len(quoted) >= 6
    assert [q for q in quoted if q not in cells] == []
