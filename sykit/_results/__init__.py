"""What a run returns and how it is summarised: ``Result`` and ``Comparison`` (:mod:`.result`),
summary metrics (:mod:`.metrics`), intervals of routing curves (:mod:`.curve_stats`) and telling a
broken algorithm from a bad router (:mod:`.health`).

May import: :mod:`sykit._base`, :mod:`sykit._world`; and :mod:`sykit._viz` inside the plot
accessors only (``Result.plot``), as xarray's ``DataArray.plot`` does.
"""
