"""Progress bars: named after what they run, silent in logs, and never left behind in a terminal
or a notebook."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sykit as sy
from sykit._run import plan as _plan
from sykit._run import progress as _progress

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def progress_on(monkeypatch):
    monkeypatch.setenv("SYKIT_PROGRESS", "1")


class Recorder:
    def __init__(self) -> None:
        self.descriptions: list[str] = []
        self.n = 0
        self.closed = False

    def set_description(self, text: str, refresh: bool = True) -> None:
        assert not refresh, "a label drawn at once shows a bar before its delay"
        self.descriptions.append(text)

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        self.closed = True


def test_a_bar_is_labelled_by_the_strategy_and_seed_it_runs(host, monkeypatch):
    bars: list[Recorder] = []
    monkeypatch.setattr(_plan, "make_progress", lambda *a: bars.append(Recorder()) or bars[-1])
    requests = [sy.Request("hi", id=i) for i in range(3)]
    lineup = {"fast": sy.strategies.single("fast"), "strong": sy.strategies.single("strong")}
    sy.compare(lineup, requests, host=host, seeds=[0, 1])
    sy.compare(lineup, requests, host=host)
    assert bars[0].descriptions == [
        "fast · seed 0",
        "strong · seed 0",
        "fast · seed 1",
        "strong · seed 1",
    ]
    assert bars[1].descriptions == ["fast", "strong"]
    assert bars[0].n == 12 and bars[0].closed


def test_off_a_terminal_the_automatic_bar_is_off_and_a_forced_one_writes_little(
    progress_on, monkeypatch
):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    assert _progress.make_progress(1000, None, "x") is None
    bar = _progress.make_progress(1000, True, "x")
    for _ in range(1000):
        bar.update(1)
    bar.close()
    assert log.getvalue().count("\r") <= 3 and len(log.getvalue()) < 300


def test_in_a_notebook_the_bar_clears_its_output_when_it_closes(progress_on, monkeypatch):
    pytest.importorskip("ipywidgets")
    from IPython import display

    shown: list[tuple] = []

    class Handle:
        def update(self, obj, raw=False):
            shown.append(("update", obj, raw))

    def fake_display(obj, display_id=None):
        shown.append(("display", type(obj).__name__, display_id))
        return Handle()

    monkeypatch.setattr(_progress, "_in_notebook", lambda: True)
    monkeypatch.setattr(display, "display", fake_display)
    bar = _progress.make_progress(4, True, "fast")
    bar.update(4)
    bar.close()
    assert shown == [("display", "TqdmHBox", True), ("update", {"text/plain": ""}, True)]
    # an automatic bar of a quick run is never displayed at all
    shown.clear()
    quick = _progress.make_progress(4, None, "fast")
    quick.update(4)
    quick.close()
    assert shown == []


def test_the_cli_piped_to_a_file_writes_no_progress_stream(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SYKIT_PROGRESS"}
    env["PYTHONPATH"] = str(ROOT)
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        subprocess.run(
            [sys.executable, "-m", "sykit", "demo", "--requests", "6000"],
            stdout=out,
            stderr=err,
            env=env,
            check=True,
            timeout=300,
        )
    err = (tmp_path / "err").read_bytes()
    assert b"\r" not in err and b"req/s" not in err and len(err) < 200, err[:200]
    assert "small only" in (tmp_path / "out").read_text()


def _screen(raw: bytes) -> list[str]:
    """The lines a terminal shows after ``raw``: ``\\r`` returns to the line's start and later
    text overwrites, ``ESC[A`` moves up a line, other escape sequences change nothing shown."""
    lines: list[list[str]] = [[]]
    row = col = 0
    text = raw.decode("utf-8", "replace")
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\x1b":
            end = i + 2
            while end < len(text) and not text[end].isalpha():
                end += 1
            if text[i : end + 1] == "\x1b[A":
                row = max(row - 1, 0)
            i = end + 1
            continue
        if char == "\r":
            col = 0
        elif char == "\n":
            row, col = row + 1, 0
            while len(lines) <= row:
                lines.append([])
        else:
            line = lines[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            col += 1
        i += 1
    return ["".join(line).rstrip() for line in lines]


def _run_in_terminal(*args: str) -> list[str]:
    """Run the sykit command in a pseudo-terminal (stdout and stderr both on it, as in a shell)
    and return what the terminal shows at the end."""
    import fcntl
    import pty
    import struct
    import termios

    env = {k: v for k, v in os.environ.items() if k != "SYKIT_PROGRESS"}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="120", TERM="xterm")
    leader, follower = pty.openpty()
    # a new pseudo-terminal is 0 columns wide, where tqdm draws nothing: size it as a window
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "sykit", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    raw = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other side closed (Linux reports EIO)
            break
        if not chunk:
            break
        raw += chunk
    os.close(leader)
    assert process.wait(timeout=300) == 0, raw[-2000:]
    return _screen(raw.replace(b"\r\n", b"\n"))


@pytest.mark.parametrize("requests", ["200", "4000"])
def test_in_a_terminal_no_bar_is_left_behind(requests):
    """A run shorter than the bar's delay draws no bar; a longer one erases its bar: the
    terminal shows the command's output alone, its first line from its first column."""
    screen = _run_in_terminal("demo", "--requests", requests)
    assert screen[0].startswith("sykit demo: "), screen[:3]
    shown = "\n".join(screen)
    assert "req/s" not in shown and "%|" not in shown, shown


def test_in_a_notebook_labelling_a_quick_run_shows_no_bar(progress_on, monkeypatch):
    pytest.importorskip("ipywidgets")
    from IPython import display

    shown: list[object] = []
    monkeypatch.setattr(_progress, "_in_notebook", lambda: True)
    monkeypatch.setattr(display, "display", lambda obj, display_id=None: shown.append(obj))
    quick = _progress.make_progress(4, None, "compare")
    _progress.label(quick, "fast", 0, 1)
    quick.update(4)
    quick.close()
    assert shown == []
