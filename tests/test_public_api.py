"""The public surface is exactly what sykit/__init__.py exports, and it cannot drift silently."""

from __future__ import annotations

import pytest

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


#: The public names of each public submodule: a name added to or dropped from one is a change of
#: the public surface, made here on purpose.
SUBMODULES = {
    "strategies": {
        "SimulatedScore", "Threshold", "advisor_gate", "affinity", "calibrate", "capability_aware", "cascade",
        "cheapest_good_enough", "custom_classifier", "fallback_chain", "first_success", "hedge",
        "hedge_first_token", "litellm_like", "oracle", "race", "simulated_score", "single",
        "speculative", "stage_router", "stream_race", "subagent_router", "task_classifier",
        "threshold_router", "weighted_random",
    },
    "datasets": {
        "SIZES", "Dataset", "Trace", "azure_trace", "from_frame", "load", "names", "synthetic",
    },
    "learn": {
        "DEFAULT_LAMBDAS", "CategoryPrior", "Column", "CostCrossFit", "CrossFit", "Embed",
        "Estimate", "Features", "Knn", "Logistic", "MatrixFactorization", "Router", "TfIdf",
        "cost_router", "cross_fit", "cross_fit_costs", "evaluation_host", "from_scores",
        "prompt_text", "random_apgr",
    },
    "testing": {"FAULTS", "FakeModel", "FakeProvider", "ServedRequest"},
    "sessions": {
        "QUADRANTS", "TIERS", "AgentTrace", "CachePrices", "StageCalibration", "TaskOutcomes",
        "calibrate_stage_router", "expected_success", "expected_success_rate", "fit_openhands",
        "grounded_sessions", "load_transcripts", "plot_session_cost_success",
        "plot_session_timeline", "quadrant_counts", "quadrant_of", "session_frame",
        "session_summary", "swebench_pro", "swebench_pro_runs", "synthetic_sessions",
        "openhands_index", "openhands_index_configs", "pair_tasks", "quadrant_probabilities",
        "taubench_airline", "task_frame",
    },
    "profiles": {
        "compare_quantiles", "describe", "fit", "fit_latency", "from_catalog", "measurements",
        "names", "search", "with_faults",
    },
    "widgets": {
        "KNOBS", "PLOTS", "Knobs", "Playground", "apply_knobs", "build_lineup",
        "default_strategies", "hedge_delay", "playground", "scale_distribution",
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SUBMODULES))
def test_submodules_declare_their_exports(name):
    module = getattr(sy, name)
    exported = module.__all__
    assert isinstance(exported, (list, tuple)) and exported
    assert len(set(exported)) == len(exported), "a name is listed twice"
    assert set(exported) == SUBMODULES[name]
    for member in exported:
        getattr(module, member)  # resolves, a lazily imported one (widgets.Playground) too
    # every public object the module defines itself is exported
    defined = {
        member
        for member, value in vars(module).items()
        if not member.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }
    assert defined <= set(exported)
    if name == "strategies":
        assert all(callable(getattr(module, member)) for member in exported)


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
