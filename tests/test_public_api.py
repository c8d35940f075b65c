"""The public surface is exactly what sykit/__init__.py exports, and it cannot drift silently.

It comes in tiers: the core loop a notebook needs at the top level (``sy.run``, ``sy.Request``,
...), everything else in named public sub-modules (``sy.traffic.Poisson``, ``sy.dists.LogNormal``,
...). The names that left the top level keep their old spelling for one release, with a warning.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import types
import warnings

import pytest

import sykit as sy

#: The top level: the core loop a notebook needs. A name added here is a change of the core, made
#: on purpose; the core stays small.
CORE = {
    "Request", "Response", "Usage", "Answer", "DecisionRequest", "DecisionResponse", "Boolean",
    "Choice", "Score", "ask_good_enough", "Outcome", "answered", "route_to", "Driver",
    "ModelStream", "Chunk", "SimHost", "HttpHost", "HttpModel", "ModelProfile", "Latency",
    "Faults", "HostPolicy", "Judge", "Capacity", "first", "first_ok", "timeout", "hedge", "start",
    "Started", "wait_first", "run", "arun", "compare", "acompare", "grid", "Grid", "sweep",
    "Sweep", "Result", "Comparison", "SykitError", "ArgumentError", "ArgumentTypeError",
    "ModelError", "CapabilityError", "ContextWindowError", "RateLimitError", "UnavailableError",
    "PolicyError", "InvalidRequestError", "InvalidResponseError", "ModelTimeout", "NoTargets",
    "UnknownModel", "SimDeadlock", "RequestClosed", "AlgorithmError", "AlgorithmWarning",
}  # fmt: skip
MAX_CORE = 60

#: The names that left the top level, with their new homes: ``sy.Poisson`` keeps working for one
#: release, with a DeprecationWarning naming ``sy.traffic.Poisson``.
MOVED = {
    "Poisson": "traffic", "Trace": "traffic", "offered_load": "traffic", "plot_load": "traffic",
    "Constant": "dists", "Empirical": "dists", "Exponential": "dists", "LogNormal": "dists",
    "Uniform": "dists",
    "classify": "errors", "fallback_reason": "errors", "FallbackReason": "errors",
    "RealIOError": "errors", "RecordLimit": "errors", "UngradedWarning": "errors",
    "ErrorFault": "faults", "Flapping": "faults", "RateLimit": "faults",
    "PromptCache": "profiles", "fit_capacity": "profiles", "CapacityFit": "profiles",
    "static": "strategies", "peek_truth": "strategies",
    "Session": "sessions", "Turn": "sessions",
    "GroundTruth": "datasets",
}  # fmt: skip


def _submodules() -> set[str]:
    return {
        name
        for name, value in vars(sy).items()
        if not name.startswith("_") and isinstance(value, types.ModuleType)
    }


def test_all_lists_exactly_the_public_names_sorted():
    """``__all__`` is the core, sorted: every public attribute but the sub-modules (which, as in
    httpx, are attributes and not listed) and the old spellings (served by ``__getattr__``)."""
    public = sorted(
        name for name in vars(sy) if not name.startswith("_") and name not in _submodules()
    )
    assert sy.__all__ == sorted(sy.__all__)
    assert sy.__all__ == public
    assert set(sy.__all__) == CORE
    assert len(sy.__all__) <= MAX_CORE
    assert not set(MOVED) & set(vars(sy)), "an old spelling is still a plain attribute"


def test_public_objects_present_themselves_as_sykit():
    for name in ("SimHost", "Request", "run", "ModelProfile", "first", "ModelError"):
        assert getattr(sy, name).__module__ == "sykit"
    for tier, name in [("traffic", "Poisson"), ("dists", "LogNormal"), ("faults", "ErrorFault")]:
        assert getattr(getattr(sy, tier), name).__module__ == f"sykit.{tier}"


#: The public names of each public submodule: a name added to or dropped from one is a change of
#: the public surface, made here on purpose.
SUBMODULES = {
    "traffic": {"Poisson", "Trace", "offered_load", "plot_load"},
    "dists": {"Constant", "Empirical", "Exponential", "LogNormal", "Uniform"},
    "errors": {
        "AlgorithmError", "AlgorithmWarning", "ArgumentError", "ArgumentTypeError",
        "CapabilityError", "ContextWindowError", "FallbackReason", "InvalidRequestError",
        "InvalidResponseError", "ModelError", "ModelTimeout", "NoTargets", "PolicyError",
        "RateLimitError", "RealIOError", "RecordLimit", "RequestClosed", "RequestHorizon",
        "SimDeadlock", "SwallowedCancellation", "SykitError", "UnavailableError",
        "UngradedWarning", "UnknownModel", "classify", "fallback_reason",
    },
    "faults": {
        "ErrorFault", "Flapping", "RateLimit", "Scenario", "ScenarioOutcome", "catalogue",
        "realistic", "run_catalogue", "with_faults",
    },
    "strategies": {
        "SimulatedScore", "Threshold", "advisor_gate", "affinity", "calibrate", "capability_aware", "cascade",
        "cheapest_good_enough", "custom_classifier", "fallback_chain", "first_success", "hedge",
        "hedge_first_token", "litellm_like", "oracle", "peek_truth", "race", "simulated_score",
        "single", "speculative", "stage_router", "static", "stream_race", "subagent_router",
        "task_classifier", "threshold_router", "weighted_random",
    },
    "datasets": {
        "SIZES", "Dataset", "GroundTruth", "Trace", "azure_trace", "from_frame", "load", "names",
        "synthetic",
    },
    "learn": {
        "DEFAULT_LAMBDAS", "CategoryPrior", "Column", "CostCrossFit", "CrossFit", "Embed",
        "Estimate", "Estimator", "Features", "Knn", "Logistic", "MatrixFactorization", "Router", "TfIdf",
        "cost_router", "cross_fit", "cross_fit_costs", "evaluation_host", "from_scores",
        "prompt_text", "random_apgr", "Transfer", "transfer",
    },
    "testing": {"FAULTS", "FakeModel", "FakeProvider", "ServedRequest"},
    "sessions": {
        "QUADRANTS", "TIERS", "AgentTrace", "CachePrices", "Session", "StageCalibration",
        "TaskOutcomes", "Turn", "calibrate_stage_router", "expected_success",
        "expected_success_rate", "fit_openhands", "grounded_sessions", "load_transcripts",
        "plot_session_cost_success", "plot_session_timeline", "quadrant_counts", "quadrant_of",
        "session_frame", "session_summary", "swebench_pro", "swebench_pro_runs",
        "synthetic_sessions", "openhands_index", "openhands_index_configs", "pair_tasks",
        "quadrant_probabilities", "taubench_airline", "task_frame",
    },
    "profiles": {
        "CapacityFit", "PromptCache", "compare_quantiles", "describe", "fit", "fit_capacity",
        "fit_latency", "from_catalog", "measurements", "names", "search", "with_faults",
    },
    "failoverbench": {
        "HTTP_TIME_SCALE", "Scenario", "ScenarioOutcome", "Tolerance", "catalogue",
        "run_catalogue",
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


def test_the_public_submodules_are_attributes_not_exports():
    assert _submodules() == set(SUBMODULES)
    assert not _submodules() & set(sy.__all__)


def test_every_public_callable_has_a_docstring():
    exported = [(sy, name) for name in sy.__all__] + [
        (getattr(sy, module), name) for module in SUBMODULES for name in SUBMODULES[module]
    ]
    missing = [
        f"{module.__name__}.{name}"
        for module, name in exported
        if callable(getattr(module, name)) and not getattr(module, name).__doc__
    ]
    assert missing == []


def test_the_core_errors_are_the_same_objects_in_sy_errors():
    """One object, two spellings: ``except sy.ModelError`` and ``except sy.errors.ModelError``
    catch the same errors."""
    for name in sy.errors.__all__:
        if name in CORE:
            assert getattr(sy.errors, name) is getattr(sy, name), name
    tree = [getattr(sy.errors, name) for name in sy.errors.__all__]
    classes = [c for c in tree if isinstance(c, type) and issubclass(c, BaseException)]
    assert all(issubclass(c, (sy.SykitError, UserWarning)) for c in classes)
    assert {c.__name__ for c in classes} >= {"RealIOError", "RecordLimit", "UngradedWarning"}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_an_old_spelling_warns_and_gives_the_same_object(name):
    home = MOVED[name]
    new = getattr(getattr(sy, home), name)
    with pytest.warns(
        DeprecationWarning, match=rf"sy\.{name} moved to sy\.{home}\.{name}\b"
    ) as caught:
        old = getattr(sy, name)
    assert old is new
    assert len(caught) == 1
    assert "removed in the next release" in str(caught[0].message)
    assert caught[0].filename == __file__, "the warning points at the caller's line"
    assert name not in sy.__all__ and name in getattr(sy, home).__all__


def test_from_sykit_import_an_old_spelling_warns_too():
    with pytest.warns(
        DeprecationWarning, match=r"sy\.Poisson moved to sy\.traffic\.Poisson"
    ) as caught:
        from sykit import Poisson
    assert Poisson is sy.traffic.Poisson
    assert len(caught) == 1 and caught[0].filename == __file__
    with pytest.raises(AttributeError, match="no attribute 'Poison'"):
        sy.Poison  # noqa: B018
    with pytest.raises(ImportError):
        from sykit import Poison  # noqa: F401


def test_the_old_spellings_are_every_name_that_left_the_top_level():
    assert sy._MOVED == MOVED
    assert not set(MOVED) & CORE
    # every name a sub-module now holds that once was at the top level has its old spelling
    for name, home in MOVED.items():
        assert name in SUBMODULES[home]


def test_the_moved_objects_pickle_without_their_old_spelling():
    """A pickle names the class by its ``__module__``: a moved class must not point at ``sykit``,
    or unpickling one (in a grid's worker processes, say) would go through the old spelling."""
    values = [
        sy.traffic.Poisson(2.0),
        sy.dists.LogNormal(0.5, p95=1.0),
        sy.faults.ErrorFault(401, 0.1),
        sy.faults.Flapping(up_s=1, down_s=1),
        sy.faults.RateLimit(requests_per_min=60),
        sy.profiles.PromptCache(read_price=0.1),
        sy.errors.FallbackReason.POLICY,
        sy.ModelProfile(cache=sy.profiles.PromptCache(read_price=0.1)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for value in values:
            assert pickle.loads(pickle.dumps(value)) == value
        for name, home in MOVED.items():
            obj = getattr(getattr(sy, home), name)
            assert getattr(obj, "__module__", "") != "sykit", name
            assert pickle.loads(pickle.dumps(obj)) is obj, name  # by reference, as cloudpickle


def test_importing_sykit_warns_of_nothing():
    code = "import warnings; warnings.filterwarnings('error', 'sy[.].* moved'); import sykit"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fault_presets_and_the_catalogue_have_their_own_homes():
    assert "faults" not in sy.__all__ and "failoverbench" not in sy.__all__
    assert sy.Faults.realistic(rate_limit=0.1) == sy.Faults.realistic().replace(rate_limit=0.1)
    assert sy.Faults.realistic().reset == 0.002
    profiles = {"a": sy.ModelProfile(), "b": sy.ModelProfile(price_out=2.0)}
    faulty = sy.profiles.with_faults(profiles, sy.Faults.realistic())
    assert {p.faults for p in faulty.values()} == {sy.Faults.realistic()}
    # sy.faults holds the pieces of fault configuration beside sy.Faults
    flaky = sy.Faults(
        errors=[sy.faults.ErrorFault(401, 0.01)], flapping=sy.faults.Flapping(up_s=9, down_s=1)
    )
    assert flaky.errors[0].status == 401 and flaky.flapping.is_down(9.5)
    # the presets' and the catalogue's former spellings there keep working
    assert sy.faults.realistic() == sy.Faults.realistic()
    assert sy.faults.with_faults(profiles, sy.Faults()) == profiles
    assert sy.faults.run_catalogue is sy.failoverbench.run_catalogue
    assert sy.faults.catalogue is sy.failoverbench.catalogue


def test_import_sykit_leaves_the_parts_a_notebook_may_never_use_unloaded():
    """The fault catalogue and its HTTP harness, the HTTP client, the learned routers, the
    widgets and the plots load when first used (each costs import time for every notebook)."""
    code = (
        "import sys, sykit as sy\n"
        "lazy = ['sykit.failoverbench', 'sykit.testing', 'sykit.learn', 'sykit.widgets',\n"
        "        'httpx', 'sykit._viz.cost_quality', 'sykit._viz.latency_cdf',\n"
        "        'sykit.sessions._plots', 'sklearn', 'matplotlib']\n"
        "loaded = [m for m in lazy if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "assert sy.faults.catalogue is sy.failoverbench.catalogue\n"
        "assert sy.learn.Knn and sy.sessions.plot_session_timeline.__module__ == 'sykit.sessions'\n"
        "assert sy._viz.plot_cost_quality.__name__ == 'plot_cost_quality'\n"
        "from sykit.sessions import plot_session_cost_success\n"
        "from sykit._viz import strategy_colors, ComparisonPlots\n"
        "sy.HttpHost(base_url='http://127.0.0.1:9', models=['m'])\n"
        "assert 'httpx' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
