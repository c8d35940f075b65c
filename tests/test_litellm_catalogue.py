"""The LiteLLM catalogue page (docs/litellm-catalogue.md) is generated from the recorded run
(conformance/litellm_catalogue.json): the page's table must be the one the JSON gives, and the
JSON must cover the whole failoverbench catalogue. No LiteLLM needed: only the recording is."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import sykit as sy

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "conformance" / "litellm_catalogue.py"


def _script():
    spec = importlib.util.spec_from_file_location("litellm_catalogue", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data():
    return json.loads((ROOT / "conformance" / "litellm_catalogue.json").read_text())


def test_the_recording_covers_s01_to_s16():
    data = _data()
    catalogue = sy.failoverbench.catalogue()
    assert list(data["scenarios"]) == [f"S{i:02d}" for i in range(1, 17)] == list(catalogue)
    assert data["litellm_version"] and 0 < data["time_scale"] <= 1
    for sid, row in data["scenarios"].items():
        assert row["title"] == catalogue[sid].title
        for who in ("litellm", "reference", "litellm_like"):
            requests = row[who]["requests"]
            assert len(requests) == len(catalogue[sid].requests), (sid, who)
            for request in requests:
                assert request["served"] == (request["served_by"] is not None), (sid, who)
                assert request["time_s"] >= 0 and all(len(a) == 2 for a in request["attempts"])
        for who in ("reference", "litellm_like"):
            assert row[who]["passed"] == (row[who]["problems"] == []), (sid, who)


def test_the_reference_routers_pass_in_the_recording():
    assert all(row["reference"]["passed"] for row in _data()["scenarios"].values())


def test_the_docs_table_is_the_one_the_recording_gives():
    script = _script()
    page = (ROOT / "docs" / "litellm-catalogue.md").read_text()
    assert script.table_of_page(page) == script.markdown(_data()), (
        "docs/litellm-catalogue.md is stale: run "
        "`python conformance/litellm_catalogue.py --markdown --write`"
    )
