"""The playground as a person sees it: JupyterLab in a real browser.

A JupyterLab server on 127.0.0.1 (a free port, a random token, settings and runtime files in a
temporary folder) serves a copy of ``notebooks/05_hedging_tail_latency.ipynb``; Playwright drives
Debian's chromium (``/usr/bin/chromium``, or the path in ``SYKIT_CHROMIUM``) through it: clear the
outputs, run all cells, then move the playground's hedge-delay slider with the keyboard and pick
another plot in its menu. The table and the figure must follow, no cell may show an error and the
browser console must stay free of errors.

Needs the ``browser`` extra (``pip install -e '.[test,browser]'``), which installs JupyterLab and
Playwright's Python package; the browser itself comes from Debian (``apt-get install chromium``),
not from ``playwright install``. Without the extra the test is skipped, saying why (``-ra`` prints
it); with the extra and no chromium, or a Playwright that does not import, it fails.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

_MISSING = [name for name in ("jupyterlab", "playwright") if importlib.util.find_spec(name) is None]
if _MISSING:
    pytest.skip(
        f"the browser extra is not installed ({', '.join(_MISSING)} missing): "
        "pip install -e '.[test,browser]'",
        allow_module_level=True,
    )
# Installed but broken fails here, loudly.
sync_api = importlib.import_module("playwright.sync_api")

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "05_hedging_tail_latency.ipynb"
CHROMIUM = Path(os.environ.get("SYKIT_CHROMIUM", "/usr/bin/chromium"))

#: Seconds: for JupyterLab to answer, for all cells to run (about 10 s of kernel time on an idle
#: machine), and for one playground change to show.
SERVER_START_S = 90
RUN_ALL_S = 180
UPDATE_S = 60

#: What an output area shows when a cell or a widget failed.
_ERROR_OUTPUTS = (
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]',
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]',
)
_ERROR_TEXTS = ("Traceback", "Error displaying widget", "Error rendering", "Run failed")


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (the server shuts its kernels down), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """A JupyterLab server serving a folder with a copy of the notebook; stopped at the end."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    home = tmp_path / "jupyter"
    settings = home / "settings"
    # No news fetched from jupyter.org and no toast asking about it: the page talks only to the
    # local server.
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
    }
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        # Nothing from PyPI: no update check, no extension listing.
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Lab(f"http://127.0.0.1:{port}", token, root, log)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}:\n{server.log_tail()}")
            try:
                status = httpx.get(
                    f"{server.url}/api/status",
                    headers={"Authorization": f"token {token}"},
                    timeout=5,
                )
                if status.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab did not answer in {SERVER_START_S} s:\n{server.log_tail()}"
                )
            time.sleep(0.25)
        yield server
    finally:
        _stop(process)


@pytest.fixture
def browser_page() -> Iterator[tuple[object, list[str]]]:
    """A chromium page, and the list that collects its console errors and uncaught exceptions."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"no chromium at {CHROMIUM}: install Debian's (apt-get install chromium) or set "
            "SYKIT_CHROMIUM to a Chromium executable"
        )
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(UPDATE_S * 1000)
            sync_api.expect.set_options(timeout=UPDATE_S * 1000)

            def console(message) -> None:
                if message.type == "error":
                    problems.append(f"console error: {message.text} ({message.location})")

            page.on("console", console)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            yield page, problems
        finally:
            browser.close()


def _output_errors(page) -> list[str]:
    """The texts of every output that shows an error, in any cell or widget."""
    texts = page.evaluate(
        """([selectors, words]) => {
            const found = [];
            for (const s of selectors)
                for (const e of document.querySelectorAll(s)) found.push(e.textContent);
            for (const e of document.querySelectorAll('.jp-OutputArea-output')) {
                const text = e.textContent;
                if (words.some(w => text.includes(w))) found.push(text);
            }
            return found;
        }""",
        [list(_ERROR_OUTPUTS), list(_ERROR_TEXTS)],
    )
    return sorted(set(texts))


def _rows(table) -> list[list[str]]:
    """The table's body, a list of cell texts per row."""
    return table.evaluate(
        "t => [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent.trim()))"
    )


def _run_all(page, code_cells: int) -> None:
    """Clear every output, run all cells from the menus, and wait until each code cell has run."""

    def prompts() -> list[str]:
        return page.evaluate(
            """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')]
                    .map(e => e.textContent.trim())"""
        )

    page.get_by_role("menuitem", name="Edit", exact=True).click()
    page.get_by_role("menuitem", name="Clear Outputs of All Cells", exact=True).click()
    page.wait_for_function(
        """() => document.querySelectorAll('.jp-NotebookPanel .jp-OutputArea-output').length == 0"""
    )
    assert all(re.fullmatch(r"\[ ?\]:", p) for p in prompts()), prompts()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    deadline = time.monotonic() + RUN_ALL_S
    while True:
        current = prompts()
        done = sum(bool(re.fullmatch(r"\[\d+\]:", p)) for p in current)
        if done == code_cells == len(current):
            break
        errors = _output_errors(page)
        assert not errors, f"a cell failed ({done} of {code_cells} ran):\n" + "\n".join(errors)
        assert time.monotonic() < deadline, (
            f"{done} of {code_cells} code cells ran in {RUN_ALL_S} s; prompts: {current}"
        )
        time.sleep(0.5)
    indicator = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator").first
    sync_api.expect(indicator).to_have_attribute("data-status", "idle")


def test_playground_in_jupyterlab(lab: Lab, browser_page, tmp_path: Path) -> None:
    page, problems = browser_page
    expect = sync_api.expect
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code_cells = sum(cell["cell_type"] == "code" for cell in cells)
    try:
        page.goto(f"{lab.url}/lab/tree/{NOTEBOOK.name}?token={lab.token}")
        expect(page.locator(".jp-NotebookPanel .jp-Cell").first).to_be_visible(
            timeout=SERVER_START_S * 1000
        )
        # The kernel has started and the notebook is connected to it (the status bar says so).
        expect(
            page.locator(".jp-StatusBar-Widget").get_by_text(re.compile(r"\| Idle$"))
        ).to_be_visible(timeout=SERVER_START_S * 1000)
        _run_all(page, code_cells)
        assert not _output_errors(page)

        # The playground: the output holding the "hedge after (s)" slider.
        playground = page.locator(".jp-OutputArea-output").filter(
            has=page.locator(".widget-label", has_text="hedge after (s)")
        )
        expect(playground).to_have_count(1)
        slider = playground.locator(".widget-slider").filter(has_text="hedge after (s)")
        handle = slider.locator(".noUi-handle")
        readout = slider.locator(".widget-readout")
        plot = playground.locator(".widget-dropdown").filter(has_text="plot").locator("select")
        # Below the controls: the status line (the run, or why it failed), then the table.
        below = playground.locator(".widget-vbox > .widget-html")
        expect(below).to_have_count(2)
        status, table = below.nth(0), below.nth(1).locator("table")
        # The plot's output widget shows one output, the figure (a plot that cannot be drawn
        # shows a line of text instead).
        shown = playground.locator(".widget-output .jp-OutputArea-output")
        figure = shown.locator("img")
        expect(table).to_have_count(1)
        expect(shown).to_have_count(1)
        expect(figure).to_have_count(1)
        expect(status).to_contain_text(re.compile(r"^run \d+: 1000 requests × 3 strategies"))
        runs = int(re.match(r"run (\d+):", status.text_content()).group(1))
        expect(readout).to_have_text("2.50")
        expect(plot).to_have_value("latency CDF")  # the options are labelled
        playground.scroll_into_view_if_needed()
        table_before = _rows(table)
        figure_before = figure.get_attribute("src")
        assert figure_before and figure_before.startswith("data:image/png;base64,")

        # The slider, from the keyboard: 2.5 s -> 2.6 s re-runs the comparison.
        handle.focus()
        page.keyboard.press("ArrowRight")
        expect(readout).to_have_text("2.60")
        expect(status).to_contain_text(f"run {runs + 1}: 1000 requests × 3 strategies")
        expect(figure).not_to_have_attribute("src", figure_before)
        table_after = _rows(table)
        assert table_after != table_before
        assert [row[0] for row in table_after] == ["no hedge", "hedge (slider)", "hedge at p95"]
        # Only the strategy built from the slider moved, and the table shows by how much in
        # brackets; the others kept their runs.
        changed = [bool(re.search(r"\([+-]", " ".join(row))) for row in table_after]
        assert changed == [False, True, False], table_after
        expect(shown).to_have_count(1)
        figure_slider = figure.get_attribute("src")

        # The plot menu redraws without re-running: a new figure, the same table and run.
        plot.select_option(label="attempt outcomes")
        expect(figure).not_to_have_attribute("src", figure_slider)
        expect(shown).to_have_count(1)
        assert figure.get_attribute("src").startswith("data:image/png;base64,")
        expect(status).to_contain_text(f"run {runs + 1}:")
        assert _rows(table) == table_after

        assert not _output_errors(page), _output_errors(page)
        assert "Traceback" not in lab.log.read_text(errors="replace"), lab.log_tail()
        assert not problems, "\n".join(problems)
    except BaseException:
        with contextlib.suppress(Exception):
            page.screenshot(path=tmp_path / "failure.png", full_page=True)
            print(f"screenshot: {tmp_path / 'failure.png'}")
        print(f"JupyterLab log:\n{lab.log_tail()}")
        raise
