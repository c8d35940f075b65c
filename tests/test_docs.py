"""The API reference is generated from the docstrings and must match the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import sykit as sy

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("make_reference", DOCS / "make_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_is_current():
    assert (DOCS / "reference.md").read_text() == _generator().render(), (
        "docs/reference.md is stale: run `python docs/make_reference.py`"
    )


def test_reference_names_every_export():
    text = (DOCS / "reference.md").read_text()
    missing = [name for name in sy.__all__ if f"sy.{name}" not in text]
    assert missing == []


def test_guides_exist():
    for page in (
        "guide.md",
        "troubleshooting.md",
        "porting-libsy.md",
        "datasets.md",
        "http.md",
        "plots.md",
    ):
        assert (DOCS / page).stat().st_size > 500, page


def test_the_plots_page_runs_as_written(monkeypatch):
    """docs/plots.md is a walk-through meant to be pasted into a notebook: every block runs."""
    import re

    import matplotlib

    matplotlib.use("Agg")
    namespace: dict = {}
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "plots.md").read_text(), re.S)
    assert len(blocks) >= 5
    for block in blocks:
        exec(compile(block, "docs/plots.md", "exec"), namespace)
    assert namespace["sweep"].apgr() > 0


def test_the_evaluating_routers_page_runs_as_written():
    """docs/evaluating-routers.md: its examples run, and the figure it quotes is what they give."""
    import re

    namespace: dict = {}
    text = (DOCS / "evaluating-routers.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, "docs/evaluating-routers.md", "exec"), namespace)
    cv = namespace["cv"]
    assert f"APGR {cv.apgr:.3f}" in text
    assert cv.realizable and cv.apgr.low > cv.random.value + 2 * cv.random.sd
    score = namespace["score"]
    assert isinstance(score(namespace["gsm8k"][0]), float)
