"""Profiles from measurements: a ``ModelProfile`` per model fitted to real runs (:mod:`.profile`),
and a model's capacity measured from a real server (:mod:`.capacity`).

May import: :mod:`sykit._base`, :mod:`sykit._world`, :mod:`sykit._hosts`, :mod:`sykit._run`,
:mod:`sykit._grid`, :mod:`sykit.strategies`.
"""
