"""Settings for the whole test run, notebooks included.

Progress bars would write to notebook outputs (which nbval compares) and to test logs; the automatic
ones are off. Kernels that nbval starts inherit this environment.

The run is spread over every core by pytest-xdist, a file (or notebook) per worker at a time, since a
notebook's cells share one kernel (``-n 0`` runs in one process). ``pytest -m "not slow"`` leaves
out the notebooks, the browser test and the files below, which run whole jobs, HTTP servers or many
generated programs: the quick loop while working.
"""

import os
from pathlib import Path

import pytest

os.environ["SYKIT_PROGRESS"] = "0"

#: Test files that take more than about ten seconds of one core each.
SLOW_FILES = frozenset(
    {
        "test_cli.py",
        "test_failoverbench_http.py",
        "test_http_host.py",
        "test_learn_estimator.py",
        "test_learn_intervals.py",
        "test_litellm_conformance.py",
        "test_main_job_alongside.py",
        "test_main_job_output.py",
        "test_playground_browser.py",
        "test_properties.py",
        "test_spill.py",
        "test_viz.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        if path.suffix == ".ipynb" or path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
