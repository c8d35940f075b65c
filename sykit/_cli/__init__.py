"""The ``sykit`` command (also ``python -m sykit``): :mod:`.main` parses the command line (and runs
``sykit demo``). The ``compare`` job's top is :mod:`.compare_job`, which calls in order:

- :mod:`.experiment`: what it runs (dataset, hosts, strategies, every comparison), and
  :mod:`.compare_learned`, its learned-router part;
- :mod:`.report`: what it prints, with the sentences computed by :mod:`.prose` (findings, faults,
  outage and workload lines) laid out to the terminal by :mod:`.layout`;
- :mod:`.writers`: the files it writes with ``--out`` (CSVs, figures, ``run.json``).

May import: any package of sykit but the top-level ``sykit`` itself.
"""

from sykit._cli.main import main as main

__all__ = ["main"]
