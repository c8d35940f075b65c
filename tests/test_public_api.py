"""The public surface is exactly what sykit/__init__.py exports, and it cannot drift silently."""

from __future__ import annotations

import sykit as sy

#: Former names that still work for existing code but are not exported: the module ``sy.faults``
#: clashed with the class ``sy.Faults``.
LEGACY = {"faults"}


def test_all_lists_exactly_the_public_names_sorted():
    public = sorted(name for name in vars(sy) if not name.startswith("_") and name not in LEGACY)
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


def test_fault_presets_and_the_catalogue_have_their_own_homes():
    assert "faults" not in sy.__all__ and "failoverbench" in sy.__all__
    assert sy.Faults.realistic(rate_limit=0.1) == sy.Faults.realistic().replace(rate_limit=0.1)
    assert sy.Faults.realistic().reset == 0.002
    profiles = {"a": sy.ModelProfile(), "b": sy.ModelProfile(price_out=2.0)}
    faulty = sy.profiles.with_faults(profiles, sy.Faults.realistic())
    assert {p.faults for p in faulty.values()} == {sy.Faults.realistic()}
    assert set(sy.failoverbench.__all__) == {
        "HTTP_TIME_SCALE",
        "Scenario",
        "ScenarioOutcome",
        "Tolerance",
        "catalogue",
        "run_catalogue",
    }
    # the old spellings keep working
    assert sy.faults.realistic() == sy.Faults.realistic()
    assert sy.faults.with_faults(profiles, sy.Faults()) == profiles
    assert sy.faults.run_catalogue is sy.failoverbench.run_catalogue
    assert sy.faults.catalogue is sy.failoverbench.catalogue
