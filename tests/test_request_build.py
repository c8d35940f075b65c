"""``sy.Request(text)`` is built cheaply: its messages are made when first read, so a list of
100,000 prompts leaves the cyclic garbage collector three objects fewer per request to walk, and
a run that never reads them never makes them. Read, they are what the message form gives."""

from __future__ import annotations

import dataclasses

import pytest

import sykit as sy
from sykit._world.models import GroundTruth, truth_of


def test_a_prompt_request_equals_its_message_form_and_reads_alike():
    plain = sy.Request("What is 41 + 1?", id=7, metadata={"tier": "pro"})
    assert "messages" not in vars(plain)  # made when first read
    spelled = sy.Request(
        [{"role": "user", "content": "What is 41 + 1?"}], id=7, metadata={"tier": "pro"}
    )
    assert plain == spelled and spelled == plain
    assert plain.messages == spelled.messages and plain.input_tokens == spelled.input_tokens
    assert plain.messages[0]["content"] == "What is 41 + 1?" and plain.prompt == "What is 41 + 1?"
    assert plain.messages is plain.messages  # kept once made
    with pytest.raises(TypeError):
        plain.messages[0]["content"] = "changed"  # still read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.messages = ()  # type: ignore[misc]
    assert dataclasses.replace(plain, id=8).messages == plain.messages


def test_a_missing_attribute_is_an_attribute_error_and_truth_reads_alike():
    request = sy.Request("hello")
    with pytest.raises(AttributeError, match="'Request' object has no attribute 'nope'"):
        request.nope  # noqa: B018
    assert getattr(request, "nope", 5) == 5 and not hasattr(request, "_truth")
    assert truth_of(request) is None and truth_of("not a request") is None
    truth = GroundTruth(quality={"m": 1.0})
    assert truth_of(request.with_truth(truth)) is truth
    assert "messages" not in vars(request.with_truth(truth))


@pytest.mark.parametrize("engine", ["bulk", "kernel"])
def test_a_run_never_makes_the_messages_it_does_not_read(engine):
    requests = [sy.Request(f"question {i}") for i in range(20)]
    host = sy.SimHost({"m": sy.ModelProfile(price_in=1, price_out=1, context_window=4)})
    result = sy.run(sy.strategies.single("m"), requests, host=host, seed=0, engine=engine)
    assert len(result.requests) == 20
    assert not any("messages" in vars(r) for r in requests)
    # a request ending with the assistant's message is still refused where prefill is not taken
    prefill = sy.Request([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert prefill._ends_with_assistant() and not requests[0]._ends_with_assistant()


def test_ids_are_given_without_copying_requests_no_algorithm_is_handed(monkeypatch):
    """An id-less request gets the run's id (its position) where its algorithm is handed it; a
    fixed chain on the bulk engine hands it to none, so it copies none."""
    from sykit._world.models import Request

    copies = []
    original = Request._with_id

    def counted(self, request_id):
        copies.append(request_id)
        return original(self, request_id)

    monkeypatch.setattr(Request, "_with_id", counted)
    host = sy.SimHost({"A": sy.ModelProfile(price_in=1, price_out=1)})
    requests = [sy.Request(f"q{i}") for i in range(30)]
    chain = sy.strategies.fallback_chain(["A"])
    result = sy.run(chain, requests, host=host, seed=0, engine="bulk")
    assert copies == [] and result.requests["request_id"].tolist() == list(range(30))

    seen = []

    async def noting(request, driver):
        seen.append((request.id, driver.request_id))
        return await chain(request, driver)

    for engine in ("kernel", "asyncio"):
        seen.clear()
        sy.run(noting, requests, host=host, seed=0, engine=engine)
        assert sorted(seen) == [(i, i) for i in range(30)]
    assert all(r.id is None for r in requests)  # the user's requests are left as they were


def test_a_plain_request_is_one_object_to_the_collector():
    """A request of a prompt string without metadata stores only strings, numbers and empty
    tuples: its attribute dict is not tracked by the cyclic garbage collector, so a list of
    100,000 of them costs the collector 100,000 objects, not 500,000."""
    import gc

    plain = sy.Request("hello", id="a1", input_tokens=5)
    assert not gc.is_tracked(vars(plain))
    assert plain.metadata == {} and "metadata" not in vars(plain)
    with pytest.raises(TypeError):
        plain.metadata["tier"] = "pro"  # type: ignore[index]  # the shared empty one is read-only
    tagged = sy.Request("hello", metadata={"tier": "pro"})
    assert tagged.metadata == {"tier": "pro"} and plain.metadata == {}
    assert dataclasses.replace(plain, metadata={"x": 1}).metadata == {"x": 1}
    assert dataclasses.replace(tagged, metadata=None).metadata == {}
