"""The failoverbench catalogue and ``sy.faults`` used wrongly or oddly: a selection that would
silently cover other scenarios than asked, a router that never meets a scenario's fault, a
tolerance or a check of the wrong kind. Each is a clear error or a failed row, never a pass."""

from __future__ import annotations

import dataclasses

import pytest

import sykit as sy

SCENARIOS = sy.failoverbench.catalogue()


# -- choosing scenarios ---------------------------------------------------------------------------


def test_an_empty_selection_is_an_error_not_an_empty_report():
    with pytest.raises(sy.ArgumentError, match=r"ids is empty.*ids=None"):
        sy.failoverbench.run_catalogue(ids=[])


def test_ids_given_as_an_iterator_run_every_scenario_it_names():
    report = sy.failoverbench.run_catalogue(ids=iter(["S03", "S01"]))
    assert report["id"].tolist() == ["S03", "S01"]


def test_a_bare_string_of_ids_is_a_type_error_naming_ids():
    with pytest.raises(sy.ArgumentTypeError, match=r"ids must be a list of scenario ids.*'S01'"):
        sy.failoverbench.run_catalogue(ids="S01")


def test_ids_that_are_not_strings_are_a_type_error():
    with pytest.raises(sy.ArgumentTypeError, match=r"ids must hold scenario ids \(str\)"):
        sy.failoverbench.run_catalogue(ids=[["S01"]])


@pytest.mark.parametrize(("typo", "meant"), [("s01", "S01"), ("S1", "S01"), ("S7", "S07")])
def test_a_misspelt_id_suggests_the_scenario(typo, meant):
    with pytest.raises(sy.ArgumentError, match=rf"\['{typo}'\] \(did you mean '{meant}'\?\)"):
        sy.failoverbench.run_catalogue(ids=["S02", typo])


def test_a_repeated_id_is_an_error_not_a_silently_shorter_report():
    with pytest.raises(sy.ArgumentError, match=r"ids names \['S01'\] more than once"):
        sy.failoverbench.run_catalogue(ids=["S01", "S03", "S01"])


def test_a_set_of_ids_runs_in_catalogue_order():
    report = sy.failoverbench.run_catalogue(ids={"S16", "S03", "S01"})
    assert report["id"].tolist() == ["S01", "S03", "S16"]


def test_a_bad_time_scale_is_refused_in_simulation_too():
    with pytest.raises(sy.ArgumentTypeError, match="time_scale"):
        sy.failoverbench.run_catalogue(ids=["S01"], time_scale="fast")


# -- a router that never meets the fault does not pass ---------------------------------------------


async def secondary_only(request, driver):
    """Never touches the faulty primary: it handles no fault at all."""
    return sy.answered("secondary", await driver.call_model(request, ["secondary"]))


@pytest.mark.parametrize("scenario_id", ["S06", "S07", "S16"])
def test_a_router_that_never_tries_the_primary_fails(scenario_id):
    outcome = SCENARIOS[scenario_id].run(secondary_only)
    assert not outcome.passed
    assert any("primary" in problem for problem in outcome.problems)


def test_no_scenario_passes_a_router_that_ignores_the_primary():
    report = sy.failoverbench.run_catalogue(sy.strategies.single("secondary"))
    assert not report["passed"].any()


def test_the_reference_routers_still_pass_the_tightened_checks():
    report = sy.failoverbench.run_catalogue(ids=["S06", "S07", "S16"])
    assert report["passed"].all(), report["problems"].tolist()


# -- tolerances and checks -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"scale": 0}, sy.ArgumentError, "scale"),
        ({"scale": -1.0}, sy.ArgumentError, "scale"),
        ({"abs_s": -0.01}, sy.ArgumentError, "abs_s"),
        ({"rel": float("nan")}, sy.ArgumentError, "rel"),
        ({"abs_s": "10ms"}, sy.ArgumentTypeError, "abs_s"),
    ],
)
def test_a_tolerance_that_would_misjudge_every_time_is_refused(kwargs, error, name):
    with pytest.raises(error, match=name):
        sy.failoverbench.Tolerance(**kwargs)


def test_run_http_refuses_a_tolerance_of_the_wrong_type_before_serving():
    with pytest.raises(
        sy.ArgumentTypeError, match=r"tolerance must be a sy.failoverbench.Tolerance"
    ):
        SCENARIOS["S01"].run_http(tolerance=0.01)


@pytest.mark.parametrize("returned", [None, "too slow", [1]])
def test_a_check_that_returns_no_list_of_problems_is_named(returned):
    scenario = dataclasses.replace(SCENARIOS["S01"], id="mine", check=lambda result: returned)
    with pytest.raises(sy.ArgumentTypeError, match=r"mine: check must return a list of problems"):
        scenario.run()


def test_a_scenario_without_a_callable_check_is_refused_when_built():
    with pytest.raises(sy.ArgumentTypeError, match=r"mine: check must be a function"):
        dataclasses.replace(SCENARIOS["S01"], id="mine", check=["no problems"])


# -- sy.faults ----------------------------------------------------------------------------------------


def test_dir_of_sy_faults_lists_the_catalogue_names_it_loads_lazily():
    assert set(sy.faults.__all__) <= set(dir(sy.faults))
