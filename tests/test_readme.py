"""The README's example runs as written, and its two set-up commands are the ones CI uses."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_example_runs():
    block = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    res = namespace["res"]
    assert len(res.requests) == 1000 and (res.requests["status"] == "ok").all()
    assert {"cancel_cause", "cost_usd", "phase"} <= set(res.attempts.columns)


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) == 2
    main_job, tests = commands
    assert "sykit compare" in main_job and "pip install ." in main_job
    assert tests in (ROOT / ".ci" / "run").read_text()
