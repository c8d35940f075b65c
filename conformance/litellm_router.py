"""Record what LiteLLM's real Router does against sykit's FakeProvider, scenario by scenario.

For every scenario of ``SCENARIOS`` it starts a FakeProvider serving a primary model ``a`` (or,
in the group scenarios, the deployments ``a1``, ``a2`` of the group ``a``), its fallback ``b`` and
a third model ``c`` (the target of ``context_window_fallbacks`` and
``content_policy_fallbacks``), builds a ``litellm.Router`` pointing at it with ``num_retries=2``
and ``fallbacks=[{"a": ["b"]}]``, sends the scenario's requests with ``router.acompletion`` and
reads back, from the provider's own record, every attempt each request made: ``(model, status,
seconds since the request's first attempt)``. The result goes to ``litellm_router_golden.json``
next to this file, with the LiteLLM version, and ``tests/test_litellm_conformance.py`` compares
``sy.strategies.litellm_like`` with it.

Run it with a Python that has LiteLLM installed (``pip install -e '.[conformance]'``)::

    python conformance/litellm_router.py            # writes conformance/litellm_router_golden.json
    python conformance/litellm_router.py --only 503 --out /tmp/golden.json
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import

import litellm

import sykit as sy
from sykit.testing import FakeModel, FakeProvider

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "litellm_router_golden.json"

USAGE_POLICY = "Invalid prompt: your prompt was flagged as potentially violating our usage policy."

# Each scenario: the primary's fault (a FakeModel), the Router settings on top of the common ones,
# and when its requests are sent (seconds after the scenario starts). The fallbacks answer.
SCENARIOS: dict[str, dict[str, Any]] = {
    "429-retry-after-0.5": {
        "a": FakeModel(fault="fail-429", retry_after_s=0.5),
        "what": "429 with Retry-After: 0.5 on every attempt",
    },
    "429-retry-after-1": {
        "a": FakeModel(fault="fail-429", retry_after_s=1.0),
        "what": "429 with Retry-After: 1 on every attempt",
    },
    # Retry-After in its other spellings (the FakeModel's retry_after_as, retry_after_ms), and
    # one longer than cooldown_time
    "429-retry-after-date": {
        "a": FakeModel(fault="fail-429", retry_after_s=4.0, retry_after_as="date"),
        "router": {"num_retries": 1},
        "what": "429 with Retry-After an HTTP-date 4 s after the response's Date header on every "
        "attempt, num_retries=1",
    },
    "429-retry-after-ms-and-seconds": {
        "a": FakeModel(fault="fail-429", retry_after_s=1.0, retry_after_ms=3000.0),
        "router": {"num_retries": 1},
        "what": "429 with retry-after-ms: 3000 and Retry-After: 1 on every attempt, num_retries=1",
    },
    "429-retry-after-ms-only": {
        "a": FakeModel(fault="fail-429", retry_after_s=None, retry_after_ms=3000.0),
        "router": {"num_retries": 1},
        "what": "429 with retry-after-ms: 3000 and no Retry-After on every attempt, num_retries=1",
    },
    "429-retry-after-90-cooldown": {
        "a": FakeModel(fault="fail-429", retry_after_s=90.0),
        "router": {"allowed_fails": 0, "cooldown_time": 2, "num_retries": 0},
        "arrivals": [0.0, 3.0],
        "what": "429 with Retry-After: 90 every time, allowed_fails=0, cooldown_time=2, "
        "num_retries=0, requests at 0 and 3 s",
    },
    "503": {"a": FakeModel(fault="fail-503"), "what": "503 on every attempt"},
    "400-capability": {
        "a": FakeModel(fault=sy.faults.ErrorFault.capability(1.0)),
        "what": "400: the model does not support image input",
    },
    "401": {"a": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)), "what": "401 invalid_api_key"},
    "404": {"a": FakeModel(fault=sy.faults.ErrorFault(404, 1.0)), "what": "404 model_not_found"},
    "422": {"a": FakeModel(fault=sy.faults.ErrorFault(422, 1.0)), "what": "422 unprocessable"},
    "non-chat-200": {
        "a": FakeModel(fault="not-chat"),
        "what": "200 whose JSON body is not a chat completion",
    },
    "malformed-200": {"a": FakeModel(fault="malformed-json"), "what": "200 with truncated JSON"},
    "context-window-400": {
        "a": FakeModel(fault=sy.faults.ErrorFault.context_window(1.0)),
        "router": {"context_window_fallbacks": [{"a": ["c"]}]},
        "what": "400 context_length_exceeded, with context_window_fallbacks a -> c",
    },
    "content-policy-400": {
        "a": FakeModel(fault=sy.faults.ErrorFault.policy(1.0)),
        "router": {"content_policy_fallbacks": [{"a": ["c"]}]},
        "what": "400 content_policy_violation in the FakeProvider's wording ('Your request was "
        "rejected as a result of our safety system.'), with content_policy_fallbacks a -> c",
    },
    "content-policy-400-usage-wording": {
        "a": FakeModel(fault=sy.faults.ErrorFault.policy(1.0, message=USAGE_POLICY)),
        "router": {"content_policy_fallbacks": [{"a": ["c"]}]},
        "what": "400 content_policy_violation worded as LiteLLM recognises it ('Invalid prompt' "
        "... 'violating our usage policy'), with content_policy_fallbacks a -> c",
    },
    "503-twice-then-ok": {
        "a": FakeModel(fault="fail-503-x2"),
        "what": "503 on the first two attempts, then answers",
    },
    "allowed-fails-3": {
        "a": FakeModel(fault="fail-503"),
        "router": {"allowed_fails": 3, "cooldown_time": 5, "num_retries": 0},
        "arrivals": [0.4 * i for i in range(18)],
        "what": "503 every time, allowed_fails=3, cooldown_time=5, num_retries=0, "
        "a request every 0.4 s for 7 s",
    },
    # Groups of several deployments: "deployments" replaces the primary "a" by the group "a" of
    # those deployments, each a FakeModel and the litellm_params it adds (such as "order").
    "group-429-sibling": {
        "deployments": {
            "a1": (FakeModel(fault="fail-429", retry_after_s=1.0), {}),
            "a2": (FakeModel(), {}),
        },
        "arrivals": [2.0 * i for i in range(6)],
        "what": "group a = a1 (429 with Retry-After: 1 every time) + a2 (healthy), a request "
        "every 2 s (longer than a1's cooldown)",
    },
    "group-503-sibling": {
        "deployments": {"a1": (FakeModel(fault="fail-503"), {}), "a2": (FakeModel(), {})},
        "arrivals": [0.5 * i for i in range(8)],
        "what": "group a = a1 (503 every time) + a2 (healthy), a request every 0.5 s",
    },
    "group-allowed-fails-1": {
        "deployments": {"a1": (FakeModel(fault="fail-503"), {}), "a2": (FakeModel(), {})},
        "router": {"allowed_fails": 1, "cooldown_time": 5, "num_retries": 0},
        "arrivals": [0.4 * i for i in range(18)],
        "what": "group a = a1 (503 every time) + a2 (healthy), allowed_fails=1, "
        "cooldown_time=5, num_retries=0, a request every 0.4 s for 7 s",
    },
    "order-503": {
        "deployments": {
            "a1": (FakeModel(fault="fail-503"), {"order": 1}),
            "a2": (FakeModel(), {"order": 2}),
        },
        "what": "group a = a1 (order 1, 503 every time) + a2 (order 2, healthy)",
    },
    "order-both-503": {
        "deployments": {
            "a1": (FakeModel(fault="fail-503"), {"order": 1}),
            "a2": (FakeModel(fault="fail-503"), {"order": 2}),
        },
        "what": "group a = a1 (order 1) + a2 (order 2), both 503 every time",
    },
    "order-400": {
        "deployments": {
            "a1": (FakeModel(fault=sy.faults.ErrorFault.capability(1.0)), {"order": 1}),
            "a2": (FakeModel(), {"order": 2}),
        },
        "what": "group a = a1 (order 1, 400: no image input) + a2 (order 2, healthy)",
    },
    "order-429": {
        "deployments": {
            "a1": (FakeModel(fault="fail-429", retry_after_s=1.0), {"order": 1}),
            "a2": (FakeModel(), {"order": 2}),
        },
        "arrivals": [0.0, 0.5, 2.0],
        "what": "group a = a1 (order 1, 429 with Retry-After: 1 every time) + a2 (order 2, "
        "healthy), requests at 0, 0.5 and 2 s",
    },
    "order-allowed-fails-1": {
        "deployments": {
            "a1": (FakeModel(fault="fail-503"), {"order": 1}),
            "a2": (FakeModel(), {"order": 2}),
        },
        "router": {"allowed_fails": 1, "cooldown_time": 5, "num_retries": 0},
        "arrivals": [0.5 * i for i in range(14)],
        "what": "group a = a1 (order 1, 503 every time) + a2 (order 2, healthy), allowed_fails=1, "
        "cooldown_time=5, num_retries=0, a request every 0.5 s for 6.5 s",
    },
    # A deployment's own cooldown_time (litellm_params), before the Router's and Retry-After
    "cooldown-time-deployment": {
        "deployments": {
            "a1": (FakeModel(fault="fail-503"), {"order": 1, "cooldown_time": 1}),
            "a2": (FakeModel(), {"order": 2}),
        },
        "router": {"allowed_fails": 0, "cooldown_time": 5, "num_retries": 0},
        "arrivals": [0.4 * i for i in range(8)],
        "what": "group a = a1 (order 1, cooldown_time=1, 503 every time) + a2 (order 2, "
        "healthy), allowed_fails=0, cooldown_time=5, num_retries=0, a request every 0.4 s",
    },
    "cooldown-time-deployment-429": {
        "deployments": {
            "a1": (
                FakeModel(fault="fail-429", retry_after_s=3.0),
                {"order": 1, "cooldown_time": 1},
            ),
            "a2": (FakeModel(), {"order": 2}),
        },
        "router": {"allowed_fails": 0, "cooldown_time": 5, "num_retries": 0},
        "arrivals": [0.4 * i for i in range(8)],
        "what": "group a = a1 (order 1, cooldown_time=1, 429 with Retry-After: 3 every time) + "
        "a2 (order 2, healthy), allowed_fails=0, cooldown_time=5, num_retries=0, a request "
        "every 0.4 s",
    },
    # max_fallbacks limits how deep fallbacks of fallbacks go, not how many groups one list
    # names: "b" and "c" fail too here (a FakeModel under their names replaces the healthy one).
    "max-fallbacks-1-list": {
        "a": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)),
        "b": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)),
        "c": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)),
        "router": {"fallbacks": [{"a": ["b", "c"]}], "max_fallbacks": 1, "num_retries": 0},
        "what": "a, b and c answer 401; fallbacks a -> [b, c], max_fallbacks=1",
    },
    "max-fallbacks-1-chain": {
        "a": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)),
        "b": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)),
        "c": FakeModel(fault=sy.faults.ErrorFault(401, 1.0)),
        "router": {"fallbacks": [{"a": ["b"]}, {"b": ["c"]}], "max_fallbacks": 1, "num_retries": 0},
        "what": "a, b and c answer 401; fallbacks a -> b -> c, max_fallbacks=1",
    },
    # Streamed requests (acompletion(..., stream=True), read to the end): "stream" in a scenario.
    "stream-ok": {"a": FakeModel(), "stream": True, "what": "a healthy stream"},
    "stream-503": {"a": FakeModel(fault="fail-503"), "stream": True, "what": "503 every time"},
    "stream-cut": {
        "a": FakeModel(fault="cut-stream", fault_after_tokens=4),
        "stream": True,
        "what": "the stream is cut after 4 of 16 tokens",
    },
    "stream-malformed-first-chunk": {
        "a": FakeModel(fault="malformed-chunk", fault_after_tokens=0),
        "stream": True,
        "what": "the stream's first content chunk is not JSON",
    },
    "stream-malformed-after-content": {
        "a": FakeModel(fault="malformed-chunk", fault_after_tokens=4),
        "stream": True,
        "what": "a chunk that is not JSON after 4 good tokens",
    },
    "stream-malformed-allowed-fails-0": {
        "a": FakeModel(fault="malformed-chunk", fault_after_tokens=0),
        "stream": True,
        "router": {"allowed_fails": 0, "cooldown_time": 5},
        "arrivals": [0.0, 1.0, 6.0],
        "what": "the first content chunk is not JSON every time, allowed_fails=0, "
        "cooldown_time=5, requests at 0, 1 and 6 s",
    },
    "stream-cut-allowed-fails-0": {
        "a": FakeModel(fault="cut-stream", fault_after_tokens=4),
        "stream": True,
        "router": {"allowed_fails": 0, "cooldown_time": 5},
        "arrivals": [0.0, 1.0, 6.0],
        "what": "the stream is cut after 4 tokens every time, allowed_fails=0, cooldown_time=5, "
        "requests at 0, 1 and 6 s",
    },
    # Load-aware routing strategies: deployments of unequal speed or with rpm limits, requests one
    # after the other (latency, usage) or overlapping (least-busy). "minute_aligned" starts the
    # scenario early in a wall-clock minute, since usage-based-routing-v2 counts per minute.
    "latency-slow-fast": {
        "deployments": {"a1": (FakeModel(ttft_s=0.3), {}), "a2": (FakeModel(ttft_s=0.02), {})},
        "router": {"routing_strategy": "latency-based-routing"},
        "arrivals": [1.0 * i for i in range(6)],
        "what": "latency-based-routing, group a = a1 (first token after 0.3 s) + a2 (after "
        "0.02 s), a request every 1 s",
    },
    "latency-buffer": {
        "deployments": {"a1": (FakeModel(ttft_s=0.3), {}), "a2": (FakeModel(ttft_s=0.02), {})},
        "router": {
            "routing_strategy": "latency-based-routing",
            "routing_strategy_args": {"lowest_latency_buffer": 50},
        },
        "arrivals": [1.0 * i for i in range(10)],
        "what": "latency-based-routing with lowest_latency_buffer=50, group a = a1 (0.3 s) + "
        "a2 (0.02 s), a request every 1 s",
    },
    "latency-timeout": {
        "deployments": {"a1": (FakeModel(ttft_s=3.0), {}), "a2": (FakeModel(ttft_s=0.02), {})},
        "router": {"routing_strategy": "latency-based-routing", "timeout": 0.5, "num_retries": 0},
        "arrivals": [1.0 * i for i in range(5)],
        "what": "latency-based-routing, group a = a1 (first token after 3 s) + a2 (0.02 s), "
        "timeout=0.5, num_retries=0, a request every 1 s",
    },
    "latency-503-once": {
        "deployments": {
            "a1": (FakeModel(ttft_s=0.3), {}),
            "a2": (FakeModel(ttft_s=0.1), {}),
            "a3": (FakeModel(ttft_s=0.02, outages=[(4.5, 5.5)]), {}),
        },
        "router": {"routing_strategy": "latency-based-routing", "num_retries": 1},
        "arrivals": [1.0 * i for i in range(12)],
        "what": "latency-based-routing, group a = a1 (0.3 s) + a2 (0.1 s) + a3 (0.02 s, 503 "
        "from 4.5 to 5.5 s), num_retries=1, a request every 1 s",
    },
    "latency-buffer-0.5": {
        "deployments": {
            "a1": (FakeModel(ttft_s=0.1), {}),
            "a2": (FakeModel(ttft_s=0.1), {}),
            "a3": (FakeModel(ttft_s=0.5), {}),
        },
        "router": {
            "routing_strategy": "latency-based-routing",
            "routing_strategy_args": {"lowest_latency_buffer": 0.5},
        },
        "arrivals": [1.0 * i for i in range(12)],
        "what": "latency-based-routing with lowest_latency_buffer=0.5, group a = a1 (0.1 s) + "
        "a2 (0.1 s) + a3 (0.5 s), a request every 1 s",
    },
    "least-busy-overlapping": {
        "deployments": {"a1": (FakeModel(ttft_s=1.0), {}), "a2": (FakeModel(ttft_s=1.0), {})},
        "router": {"routing_strategy": "least-busy"},
        "arrivals": [0.0, 0.2, 0.4, 0.6, 2.0],
        "what": "least-busy, group a = a1 + a2 (1 s each), requests at 0, 0.2, 0.4, 0.6 and 2 s",
    },
    "least-busy-slow-fast": {
        "deployments": {"a1": (FakeModel(ttft_s=3.0), {}), "a2": (FakeModel(ttft_s=0.1), {})},
        "router": {"routing_strategy": "least-busy"},
        "arrivals": [0.25 * i for i in range(8)],
        "what": "least-busy, group a = a1 (3 s) + a2 (0.1 s), a request every 0.25 s",
    },
    "usage-rpm-limits": {
        "deployments": {"a1": (FakeModel(), {"rpm": 2}), "a2": (FakeModel(), {"rpm": 3})},
        "router": {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
        "arrivals": [0.5 * i for i in range(5)],
        "minute_aligned": True,
        "what": "usage-based-routing-v2, group a = a1 (rpm 2) + a2 (rpm 3), num_retries=0, a "
        "request every 0.5 s",
    },
    "usage-lowest-tpm": {
        "deployments": {
            "a1": (FakeModel(output_tokens=64), {}),
            "a2": (FakeModel(output_tokens=16), {}),
        },
        "router": {"routing_strategy": "usage-based-routing-v2"},
        "arrivals": [0.5 * i for i in range(6)],
        "minute_aligned": True,
        "what": "usage-based-routing-v2, group a = a1 (64 output tokens) + a2 (16), a request "
        "every 0.5 s",
    },
    "usage-rpm-2": {
        "deployments": {"a1": (FakeModel(), {"rpm": 2}), "a2": (FakeModel(), {"rpm": 2})},
        "router": {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
        "arrivals": [0.2 * i for i in range(8)],
        "minute_aligned": True,
        "what": "usage-based-routing-v2, group a = a1 + a2 (rpm 2 each), num_retries=0, a "
        "request every 0.2 s",
    },
    "usage-no-limits": {
        "deployments": {
            "a1": (FakeModel(ttft_s=0.5), {}),
            "a2": (FakeModel(ttft_s=0.5), {}),
            "a3": (FakeModel(ttft_s=0.5), {}),
        },
        "router": {"routing_strategy": "usage-based-routing-v2"},
        "arrivals": [0.2 * i for i in range(12)],
        "minute_aligned": True,
        "what": "usage-based-routing-v2, group a = a1 + a2 + a3 (0.5 s each, no limits), a "
        "request every 0.2 s",
    },
    # cost-based-routing: the deployments' per-token prices in litellm_params (input plus output;
    # none, or 0, counts as LiteLLM's unmapped 5.0 each, as a1..a3 are not in its cost map).
    "cost-cheap-expensive": {
        "deployments": {
            "a1": (FakeModel(), {"input_cost_per_token": 1e-5, "output_cost_per_token": 3e-5}),
            "a2": (FakeModel(), {"input_cost_per_token": 1e-7, "output_cost_per_token": 4e-7}),
        },
        "router": {"routing_strategy": "cost-based-routing"},
        "arrivals": [0.5 * i for i in range(6)],
        "what": "cost-based-routing, group a = a1 (expensive) + a2 (cheap), a request every 0.5 s",
    },
    "cost-cheap-503-cooldown": {
        "deployments": {
            "a1": (FakeModel(), {"input_cost_per_token": 1e-5, "output_cost_per_token": 3e-5}),
            "a2": (
                FakeModel(outages=[(0.9, 1.5)]),
                {"input_cost_per_token": 1e-7, "output_cost_per_token": 4e-7},
            ),
        },
        "router": {
            "routing_strategy": "cost-based-routing",
            "allowed_fails": 0,
            "cooldown_time": 2,
            "num_retries": 1,
        },
        "arrivals": [0.0, 1.0, 2.0, 4.0, 5.0],
        "what": "cost-based-routing, group a = a1 (expensive) + a2 (cheap, 503 from 0.9 to 1.5 s), "
        "allowed_fails=0, cooldown_time=2, num_retries=1, requests at 0, 1, 2, 4 and 5 s",
    },
    "cost-rpm-limit": {
        "deployments": {
            "a1": (FakeModel(), {"input_cost_per_token": 1e-5, "output_cost_per_token": 3e-5}),
            "a2": (
                FakeModel(),
                {"input_cost_per_token": 1e-7, "output_cost_per_token": 4e-7, "rpm": 2},
            ),
        },
        "router": {"routing_strategy": "cost-based-routing", "num_retries": 0},
        "arrivals": [0.5 * i for i in range(5)],
        "minute_aligned": True,
        "what": "cost-based-routing, group a = a1 (expensive) + a2 (cheap, rpm 2), num_retries=0, "
        "a request every 0.5 s",
    },
    "cost-zero-is-unknown": {
        "deployments": {
            "a1": (FakeModel(), {}),
            "a2": (FakeModel(), {"input_cost_per_token": 0, "output_cost_per_token": 0}),
        },
        "router": {"routing_strategy": "cost-based-routing"},
        "arrivals": [0.5 * i for i in range(4)],
        "what": "cost-based-routing, group a = a1 (no price) + a2 (prices 0), a request every "
        "0.5 s",
    },
}


def deployments(spec: dict[str, Any]) -> list[tuple[str, str, Any, dict[str, Any]]]:
    """(group, deployment, FakeModel, extra litellm_params) for every deployment of a scenario."""
    primary = spec.get("deployments") or {"a": (spec["a"], {})}
    rows = [("a", name, fake, extra) for name, (fake, extra) in primary.items()]
    return rows + [(name, name, spec.get(name, FakeModel()), {}) for name in ("b", "c")]


def model_list(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario's model_list without the provider's address (added by ``with_base``)."""
    return [
        {"model_name": group, "litellm_params": {"model": f"openai/{name}", **extra}}
        for group, name, _, extra in deployments(spec)
    ]


def with_base(entries: list[dict[str, Any]], base_url: str) -> list[dict[str, Any]]:
    return [
        {**e, "litellm_params": {**e["litellm_params"], "api_base": base_url, "api_key": "x"}}
        for e in entries
    ]


async def send(router: Any, index: int, at: float, t0: float, stream: bool) -> str:
    await asyncio.sleep(max(0.0, t0 + at - time.monotonic()))
    messages = [{"role": "user", "content": f"request {index}"}]
    try:
        response = await router.acompletion(model="a", messages=messages, stream=stream)
        if stream:  # read to the end; the model is the one the last chunk names
            model = None
            async for chunk in response:
                model = getattr(chunk, "model", None) or model
            return f"ok: {model}" if model else "ok"
    except Exception as error:  # the request failed: record the class, not the text
        return f"error: {type(error).__name__}"
    return f"ok: {response.model}" if getattr(response, "model", None) else "ok"


def request_index(body: Any) -> int | None:
    try:
        content = body["messages"][-1]["content"]
        return int(str(content).split()[-1])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


async def run_scenario(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    models = {name: fake for _, name, fake, _ in deployments(spec)}
    entries = model_list(spec)
    arrivals = spec.get("arrivals", [0.0])
    settings = {"num_retries": 2, "fallbacks": [{"a": ["b"]}], **spec.get("router", {})}
    if spec.get("minute_aligned"):  # usage is counted per wall-clock minute: start early in one
        second = time.time() % 60.0
        if second > 40.0:
            await asyncio.sleep(60.5 - second)
    with FakeProvider(models) as fake:
        router = litellm.Router(model_list=with_base(entries, fake.base_url), **settings)
        t0 = time.monotonic()
        stream = bool(spec.get("stream"))
        outcomes = await asyncio.gather(
            *(send(router, i, at, t0, stream) for i, at in enumerate(arrivals))
        )
        fake.wait_idle()
        served = fake.requests
        # A Router registers its strategy's logger in LiteLLM's global callback lists, which take
        # one logger of a kind: the next scenario's Router would never be told of its calls.
        router.retire()
    per_request: dict[int, list[Any]] = {i: [] for i in range(len(arrivals))}
    for record in served:
        index = request_index(record.body)
        if index is not None:
            per_request[index].append(record)
    first_start = min((r.started_at for r in served), default=0.0)
    requests = []
    for index, records in per_request.items():
        records.sort(key=lambda r: r.started_at)
        start = records[0].started_at if records else None
        requests.append(
            {
                "sent_at": arrivals[index],
                "first_attempt_at": None if start is None else round(start - first_start, 3),
                "outcome": outcomes[index],
                "attempts": [[r.model, r.status, round(r.started_at - start, 3)] for r in records],
            }
        )
    return {
        "what": spec["what"],
        "stream": bool(spec.get("stream")),
        "router": {k: v for k, v in settings.items()},
        "model_list": entries,
        "requests": requests,
    }


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=GOLDEN)
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="add the scenarios run to those already in --out, leaving the others as recorded",
    )
    args = parser.parse_args(argv)
    litellm.suppress_debug_info = True
    names = args.only or list(SCENARIOS)
    started = time.monotonic()
    scenarios = {}
    for name in names:
        began = time.monotonic()
        scenarios[name] = await run_scenario(name, SCENARIOS[name])
        print(f"{name}: {time.monotonic() - began:.1f} s", file=sys.stderr)
        for request in scenarios[name]["requests"]:
            print("   ", request["outcome"], request["attempts"], file=sys.stderr)
    if args.merge and args.out.exists():
        kept = json.loads(args.out.read_text())["scenarios"]
        scenarios = {**kept, **scenarios}
    golden = {
        "litellm_version": importlib.metadata.version("litellm"),
        "python": sys.version.split()[0],
        "scenarios": scenarios,
    }
    args.out.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"{len(names)} scenarios in {time.monotonic() - started:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
