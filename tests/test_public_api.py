"""The public surface is exactly what sykit/__init__.py exports, and it cannot drift silently."""

from __future__ import annotations

import sykit as sy


def test_all_lists_exactly_the_public_names_sorted():
    public = sorted(name for name in vars(sy) if not name.startswith("_"))
    assert sy.__all__ == sorted(sy.__all__)
    assert sorted(sy.__all__) == public


def test_public_objects_present_themselves_as_sykit():
    for name in ("SimHost", "Request", "run", "ModelProfile", "first"):
        assert getattr(sy, name).__module__ == "sykit"


def test_submodules_declare_their_exports():
    assert isinstance(sy.strategies.__all__, list) and sy.strategies.__all__
    for name in sy.strategies.__all__:
        assert callable(getattr(sy.strategies, name))


def test_every_public_callable_has_a_docstring():
    missing = [
        name for name in sy.__all__ if callable(getattr(sy, name)) and not getattr(sy, name).__doc__
    ]
    assert missing == []
