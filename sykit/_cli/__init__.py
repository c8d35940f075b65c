"""The ``sykit`` command (also ``python -m sykit``): :mod:`.main` parses the command line; the
``compare`` job is :mod:`.compare_job` and its learned-router part :mod:`.compare_learned`.

May import: any package of sykit but the top-level ``sykit`` itself.
"""

from sykit._cli.main import main as main

__all__ = ["main"]
