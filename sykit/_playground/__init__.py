"""The playground behind :mod:`sykit.widgets`, in parts that work without ipywidgets: distribution
scaling, knobs → host, the line-up, the re-run session and its figures; only :mod:`.ui` imports
ipywidgets.

May import: :mod:`sykit._base`, :mod:`sykit._results`, :mod:`sykit._world`, :mod:`sykit._hosts`,
:mod:`sykit._viz`, :mod:`sykit.strategies`, :mod:`sykit._grid`.
"""
