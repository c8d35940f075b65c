"""The playground behind :mod:`sykit.widgets`, in parts that work without ipywidgets: distribution
scaling, knobs → host, the line-up, the re-run session and its figures; only :mod:`.ui` imports
ipywidgets."""
