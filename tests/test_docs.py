"""The API reference is generated from the docstrings and must match the code."""

from __future__ import annotations

import importlib.util
import re
import types
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
    """Every name of every tier has its entry: the core as ``sy.X``, each public sub-module's as
    ``sy.module.X``; and every old top-level spelling is listed with its new home."""
    text = (DOCS / "reference.md").read_text()
    missing = [name for name in sy.__all__ if f"### `sy.{name}" not in text]
    tiers = sorted(
        name
        for name, value in vars(sy).items()
        if isinstance(value, types.ModuleType) and not name.startswith("_")
    )
    for tier in tiers:
        assert f"## `sy.{tier}`" in text, tier
        missing += [
            f"{tier}.{name}"
            for name in getattr(sy, tier).__all__
            if f"### `sy.{tier}.{name}" not in text
        ]
    assert missing == []
    for name, tier in sy._MOVED.items():
        assert f"| `sy.{name}` | `sy.{tier}.{name}` |" in text, name


def test_the_guides_use_no_old_spelling():
    """The docs, README and notebooks write ``sy.traffic.Poisson``, not the old ``sy.Poisson``
    (which warns); only the reference's table of old spellings names them."""
    root = DOCS.parent
    old = re.compile(r"(?<![\w.])(?:sy|sykit)\.(" + "|".join(sy._MOVED) + r")\b")
    pages = [*DOCS.glob("*.md"), root / "README.md", *(root / "notebooks").glob("*.ipynb")]
    found = []
    for page in pages:
        text = page.read_text()
        if page.name == "reference.md":
            text = text.split("## Core: ", 1)[1]  # past the table of old spellings
        found += [f"{page.name}: {m.group(0)}" for m in old.finditer(text)]
    assert found == []


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


def test_the_engines_page_examples_run_on_the_engine_it_says():
    """docs/engines.md: the declared routers it shows run on the bulk engine, and the refusal it
    quotes is the one sykit gives."""
    import re

    text = (DOCS / "engines.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    host = sy.SimHost({"big": sy.ModelProfile(), "small": sy.ModelProfile()})
    requests = [sy.Request("x" * n) for n in (10, 3_000, 50)]
    namespace: dict = {"sy": sy, "host": host, "requests": requests}
    exec(compile(blocks[0], "docs/engines.md", "exec"), namespace)
    for router in (namespace["pick"], namespace["by_length"]):
        assert sy.run(router, requests, host=host).engine == "bulk"
    routed = sy.run(namespace["by_length"], requests, host=host).requests
    assert list(routed["served_model"]) == ["small", "big", "small"]

    async def my_router(request, driver):
        return await driver.call("small", request)

    check = blocks[1]
    assert 'result.engine                       # "bulk"' in check
    exec(compile(check.split("\n\n")[0], "docs/engines.md", "exec"), namespace)
    assert namespace["result"].engine == "bulk"
    quoted = re.search(r"# ArgumentError: (.*?) \.\.\.", check, re.S).group(1)
    quoted = " ".join(line.lstrip("# ") for line in quoted.splitlines())
    try:
        sy.run(my_router, requests, host=host, engine="bulk")
    except sy.ArgumentError as error:
        assert str(error).startswith(quoted), (str(error), quoted)
    else:
        raise AssertionError("engine='bulk' accepted a router that is not static")
