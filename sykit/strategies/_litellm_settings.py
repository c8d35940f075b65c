"""LiteLLM's Router as a strategy, :func:`litellm_like`: its settings (groups or LiteLLM's
``model_list``, fallbacks, retries, cooldowns, the routing strategy), checked and read into the
router of :mod:`sykit.strategies._litellm`, and the rules it follows, as documented. Re-exported
from :mod:`sykit.strategies`.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._run.strategy_kit import checked_models
from sykit._world.dists import check_number
from sykit.strategies._litellm import _LiteLLMLike
from sykit.strategies._litellm_routing import ROUTING_STRATEGIES, Limits, routing_args

__all__ = ["litellm_like"]

_LITELLM_MAX_FALLBACKS = 5  # LiteLLM 1.110.2's default
_LITELLM_RETRY_AFTER = ("integer", "any", "ignore")  # the readings retry_after= offers


GroupSpec = Mapping[str, Sequence[str] | str] | Sequence[str] | str
FallbackSpec = Mapping[str, Sequence[str] | str] | Sequence[Any]


def _group_table(
    value: FallbackSpec | None, groups: Mapping[str, Any], what: str
) -> dict[str, tuple[str, ...]]:
    """group -> fallback groups, from a mapping, LiteLLM's list of one-key dicts, or a list of
    groups (each falls back to the next)."""
    if value is None:
        return {}
    table: dict[str, tuple[str, ...]] = {}
    if isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a dict or a list of groups, got a str {value!r}")
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, Sequence) and all(isinstance(v, Mapping) for v in value):
        items = [item for entry in value for item in entry.items()]
    elif isinstance(value, Sequence):
        order = checked_models(list(value), what) if value else []
        items = [(a, [b]) for a, b in itertools.pairwise(order)]
    else:
        raise ArgumentTypeError(f"{what} must be a dict or a list of groups, got {value!r}")
    for group, targets in items:
        names = checked_models(targets, f"{what}[{group!r}]") if targets else []
        for name in [group, *names]:
            if name not in groups:
                raise ArgumentError(f"{what}: unknown group {name!r}; the groups: {list(groups)}")
        table[group] = table.get(group, ()) + tuple(names)
    return table


_LITELLM_WEIGHTS = ("weight", "rpm", "tpm")  # simple-shuffle uses the first one set


def _litellm_order(value: Any, where: str) -> int | None:
    """LiteLLM reads an order written as ``1``, ``1.0`` or ``"1"`` as the same number."""
    if value is None:
        return None
    if isinstance(value, int):  # True too, as in LiteLLM
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value):
        return int(value)
    raise ArgumentError(f"{where}: order must be a whole number, got {value!r}")


Prices = dict[str, dict[str, tuple[float | None, float | None]]]


def _litellm_model_list(
    model_list: Any, by_cost: bool = False
) -> tuple[
    dict[str, tuple[str, ...]],
    dict[str, int],
    dict[str, dict[str, float]],
    dict[str, dict[str, Limits]],
    dict[str, float],
    Prices,
]:
    """groups, orders (model -> order), simple-shuffle weights (group -> model -> weight),
    tpm/rpm limits (group -> model -> Limits), the deployments' own cooldown_time (model ->
    seconds) and, for cost-based-routing (``by_cost``), their declared prices per token (group
    -> model -> (input, output), None where not given or 0) from LiteLLM's ``model_list``."""
    if isinstance(model_list, (str, Mapping)) or not isinstance(model_list, Sequence):
        raise ArgumentTypeError(
            f"model_list must be a list of LiteLLM deployments, got {type(model_list).__name__}"
        )
    if not model_list:
        raise ArgumentError("litellm_like(model_list=) needs at least one deployment")
    groups: dict[str, list[str]] = {}
    orders: dict[str, int] = {}
    params_of: dict[str, list[Mapping[str, Any]]] = {}
    limits: dict[str, dict[str, Limits]] = {}
    cooldowns: dict[str, float] = {}
    prices: Prices = {}
    for i, entry in enumerate(model_list):
        where = f"model_list[{i}]"
        if not isinstance(entry, Mapping):
            raise ArgumentTypeError(f"{where} must be a dict, got {entry!r}")
        group = entry.get("model_name")
        if not isinstance(group, str) or not group:
            raise ArgumentError(f"{where} needs a 'model_name' (the group's public name)")
        params = entry.get("litellm_params")
        if not isinstance(params, Mapping) or not isinstance(params.get("model"), str):
            raise ArgumentError(
                f"{where} ({group!r}) needs 'litellm_params' with a 'model', such as "
                "{'model': 'openai/gpt-4o'}"
            )
        deployment = entry.get("deployment")
        if deployment is None:
            deployment = params["model"].split("/", 1)[-1]  # minus the provider/ prefix
        if not isinstance(deployment, str) or not deployment:
            raise ArgumentError(f"{where}: the deployment name must be a non-empty str")
        if deployment in groups.get(group, ()):
            raise ArgumentError(
                f"{where}: group {group!r} names the deployment {deployment!r} twice; give each "
                "a 'deployment' key with the host's model name to tell them apart"
            )
        info = entry.get("model_info")
        order = params.get("order")
        if order is None and isinstance(info, Mapping):
            order = info.get("order")
        order = _litellm_order(order, where)
        if order is not None:
            if orders.get(deployment, order) != order:
                raise ArgumentError(f"{where}: {deployment!r} has two orders")
            orders[deployment] = order
        cooldown = _litellm_cooldown_time(params, info)
        if cooldown is not None:
            if cooldowns.get(deployment, cooldown) != cooldown:
                raise ArgumentError(f"{where}: {deployment!r} has two cooldown_time values")
            cooldowns[deployment] = cooldown
        groups.setdefault(group, []).append(deployment)
        params_of.setdefault(group, []).append(params)
        limit = _litellm_limits(params, info, where, by_cost)
        if limit is not None:
            limits.setdefault(group, {})[deployment] = limit
        if by_cost:
            prices.setdefault(group, {})[deployment] = _litellm_prices(params, info, where)
    weights: dict[str, dict[str, float]] = {}
    for group, deployments in groups.items():
        for key in _LITELLM_WEIGHTS:
            values = []
            for deployment, params in zip(deployments, params_of[group], strict=True):
                value = params.get(key)
                if value is not None:
                    value = check_number(value, f"{group!r} {deployment!r} {key}", low=0.0)
                values.append(0.0 if value is None else float(value))
            if max(values) > 0:
                weights[group] = dict(zip(deployments, values, strict=True))
                break
    return {g: tuple(d) for g, d in groups.items()}, orders, weights, limits, cooldowns, prices


def _litellm_prices(
    params: Mapping[str, Any], info: Any, where: str
) -> tuple[float | None, float | None]:
    """A deployment's ``input_cost_per_token`` and ``output_cost_per_token`` from
    ``litellm_params``, as cost-based-routing reads them (LiteLLM passes over a 0, as over a
    missing one). A ``base_model`` is refused: LiteLLM would price that name from its model
    cost map, which sykit does not have."""
    for source in (info, params):
        if isinstance(source, Mapping) and source.get("base_model"):
            raise ArgumentError(
                f"{where}: cost-based-routing in litellm_like does not model base_model (LiteLLM "
                "prices it from its model cost map): give input_cost_per_token and "
                "output_cost_per_token in litellm_params, or the host's ModelProfile prices"
            )
    out: list[float | None] = []
    for key in ("input_cost_per_token", "output_cost_per_token"):
        value = params.get(key)
        if value is not None:
            value = check_number(value, f"{where} {key}")
        out.append(float(value) if value else None)
    return out[0], out[1]


def _litellm_cooldown_time(params: Mapping[str, Any], info: Any) -> float | None:
    """A deployment's own ``cooldown_time`` as LiteLLM 1.110.2 reads it
    (``cooldown_handlers._first_present``): ``model_info``'s, else ``litellm_params``'s; only a
    number counts (a bool or a string is passed over, so the Router's applies), and a negative
    one is then passed over where the cooldown is set (None: none of its own)."""
    for source in (info, params):
        if not isinstance(source, Mapping):
            continue
        value = source.get("cooldown_time")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if math.isnan(value):
                raise ArgumentError(f"cooldown_time must be a number, got {value!r}")
            return float(value)
    return None


def _litellm_limits(
    params: Mapping[str, Any], info: Any, where: str, by_cost: bool = False
) -> Limits | None:
    """A deployment's tpm and rpm, as the load-aware strategies read them: from
    ``litellm_params``, else ``model_info`` (None when it sets neither). cost-based-routing
    reads them with ``or``, so a 0 there is passed over too, and means no limit."""
    values: dict[str, float] = {}
    for key in ("tpm", "rpm"):
        value = params.get(key)
        if (not value if by_cost else value is None) and isinstance(info, Mapping):
            value = info.get(key)
        if value is not None:
            number = float(check_number(value, f"{where} {key}", low=0.0))
            if number or not by_cost:
                values[key] = number
    return Limits(**values) if values else None


def litellm_like(
    models_or_groups: GroupSpec | None = None,
    *,
    model_list: Sequence[Mapping[str, Any]] | None = None,
    routing_strategy: str = "simple-shuffle",
    routing_strategy_args: Mapping[str, Any] | None = None,
    num_retries: int = 2,
    fallbacks: FallbackSpec | None = None,
    context_window_fallbacks: FallbackSpec | None = None,
    content_policy_fallbacks: FallbackSpec | None = None,
    allowed_fails: int | None = None,
    cooldown_time: float = 5.0,
    retry_after: str = "integer",
    max_fallbacks: int = _LITELLM_MAX_FALLBACKS,
    stream: bool = False,
    cooldown_s: float | None = None,
    window_s: float | None = None,
) -> Any:
    """LiteLLM's Router (litellm 1.110.2) as a strategy, with LiteLLM's own setting names.

    ``models_or_groups`` is a list of model names (each a group of one deployment) or a dict
    ``group -> [model, ...]`` (deployments picked at random among the healthy ones). Requests go to
    the first group. ``fallbacks`` maps a group to the groups it falls back to, in order (a list of
    groups means each falls back to the next; LiteLLM's ``[{"a": ["b"]}]`` works too); None means
    the groups in the order given, ``{}`` none. ``context_window_fallbacks`` and
    ``content_policy_fallbacks`` take the same forms and are used for those errors only.

    ``model_list=`` takes LiteLLM's own configuration instead: one entry per deployment,
    ``{"model_name": group, "litellm_params": {"model": "openai/east", "order": 1, ...}}``. The
    deployment is the host's model named by ``litellm_params["model"]`` minus its provider prefix
    (the part up to the first ``/``: ``"openai/east"`` is ``east``, ``"east"`` stays ``east``); an
    entry's ``"deployment"`` key, when given, names the host's model instead (for a name with a
    ``/`` of its own). Requests go to the first ``model_name``; ``fallbacks=None`` means none, as in
    LiteLLM. Other ``litellm_params`` (``api_base``, keys, ...) are ignored.

        sy.strategies.litellm_like(
            model_list=[
                {"model_name": "gpt-4o", "litellm_params": {"model": "openai/east", "order": 1}},
                {"model_name": "gpt-4o", "litellm_params": {"model": "openai/west", "order": 2}},
                {"model_name": "mini", "litellm_params": {"model": "openai/mini"}},
            ],
            fallbacks=[{"gpt-4o": ["mini"]}],
        )

        sy.strategies.litellm_like(["small", "large"])              # small, then large
        sy.strategies.litellm_like(
            {"gpt": ["gpt-a", "gpt-b"], "claude": ["claude"]},
            fallbacks={"gpt": ["claude"]}, allowed_fails=3, cooldown_time=10,
        )

    ``cooldown_s`` is the former name of ``cooldown_time``; ``window_s`` is no longer used (the
    failure count's window is ``cooldown_time``, as in LiteLLM).

    The rules, as measured on LiteLLM 1.110.2 against sykit's FakeProvider and read in its source:

    * **Retries** (``num_retries=2``: 3 attempts in all) for 408, 429, 5xx, timeouts, transport
      failures and 2xx bodies that are not a chat completion (LiteLLM's InternalServerError). After
      *every* failed attempt, the last one included, it waits ``0.5·2ⁿ`` s (capped at 8 s) plus
      ``0.75·U`` s of jitter, so a target that always fails is left for its fallback after a fourth
      wait (a 503 every time: at about 3.6–5.9 s instead of at once). Other 4xx are not retried.
    * **Retry-After** replaces the backoff (the jitter stays: ``Retry-After + 0.75·U`` s) when
      LiteLLM reads it as a number in (0, 60] (``retry_after="integer"``). It reads the
      ``Retry-After`` header alone, never ``retry-after-ms`` (a 429 with ``retry-after-ms: 3000``
      and ``Retry-After: 1`` waits 1 s; with ``retry-after-ms`` alone, the backoff), and reads it
      with ``int()``: a whole number of seconds, so ``Retry-After: 0.5`` gets the backoff, or an
      HTTP-date, measured against its own clock when the answer came and truncated toward zero
      (a date 4 s after the response's ``Date``, which truncates the sending time to whole
      seconds, is 3.something s away on arrival: 3 s plus the jitter). ``"any"`` reads it as
      sykit's own retries do (fractions, ``retry-after-ms`` first, a date against the response's
      ``Date``), ``"ignore"`` never uses it. No wait at all when another deployment of the group
      is healthy: the retry goes there.
    * **Fallbacks** catch every error class (a 400 such as "does not support image input", 401,
      404, 422, ...): the group's ``fallbacks`` are tried in order, each with its own retries, and
      their own fallbacks in turn, at most ``max_fallbacks`` (5) deep: the limit is on depth, so
      every group of one list is tried (``{"a": ["b", "c"]}`` with ``max_fallbacks=1`` tries b
      and c; ``a -> b -> c`` stops after b). A context-window error uses
      ``context_window_fallbacks`` and a content-policy error ``content_policy_fallbacks`` when
      they name the group, the ordinary fallbacks otherwise. Which errors those are is decided as
      LiteLLM decides for an OpenAI-compatible server: by the error message's wording alone
      ("This model's maximum context length is ...", "prompt is too long", ...; "Invalid prompt"
      with "violating our usage policy", "request was rejected as a result of the safety
      system"), not by the error's code, so OpenAI's "Your request was rejected as a result of
      *our* safety system." goes to the ordinary fallbacks, as it does in LiteLLM. The message
      comes before the status there: an error answer that speaks of a rate limit is its 429
      (retried, cooled), and one that speaks of the context window or a content policy its 400
      (not retried), whatever status the server sent.
    * **Cooldown** for statuses 429, 401, 402, 404, 408 and 5xx (a timeout counts as 408, a
      transport failure or unusable 2xx as 500). Every failed attempt counts, retries included.
      With ``allowed_fails`` a deployment cools once its failures *exceed* it (the 4th failure
      with ``allowed_fails=3``), for ``cooldown_time`` (5 s); the count's window is fixed,
      expiring ``cooldown_time`` after its first failure. Without ``allowed_fails``, only a group
      of several deployments cools one down: on a 429, or on more than 50 % failures over at least
      5 requests in the current minute. A group of one deployment and no fallbacks is never cooled.
      A cooldown lasts the error's Retry-After, read as for the wait but with no 60 s limit
      (``Retry-After: 90`` cools the deployment for 90 s, ``Retry-After: 0`` for none), else
      ``cooldown_time``. A deployment's own ``cooldown_time`` (``model_info``, else
      ``litellm_params``; a number ≥ 0, anything else passed over as LiteLLM passes it over)
      comes before both: with ``cooldown_time: 1`` it cools for 1 s after a 429 with
      ``Retry-After: 3`` under a Router ``cooldown_time=5``. The ``allowed_fails`` window stays
      the Router's ``cooldown_time``.
    * A cooled deployment is skipped: a retry under way for a group with no healthy deployment goes
      straight to the fallbacks, and a new request for it fails over with no call made.
    * **Picking a deployment** (``routing_strategy="simple-shuffle"``, the default): at random
      among the group's healthy deployments, the one that just failed included, in proportion to
      ``litellm_params["weight"]`` when a deployment of the group sets one, else ``rpm``, else
      ``tpm`` (a deployment without it then gets none), uniformly when none is set.
    * **Load-aware picking**, among the same healthy deployments, from what this router has seen
      of its own calls in the run (as LiteLLM counts them in its router):

      - ``"least-busy"``: the deployment with the fewest of this router's calls in flight (from
        the call's start to its answer or error; a stream to its end); a tie goes to the one
        listed first. No random draw.
      - ``"latency-based-routing"``: the lowest mean over the last ``max_latency_list_size``
        (10) answers of seconds per output token (the seconds, for an answer without tokens);
        a streamed request uses the mean seconds to the first token where the deployment has
        some (or their ``ttft_percentile``). A timeout adds a 1000 s sample; other errors add
        nothing. A deployment not yet seen counts as 0, so it is tried next, and once the group
        has a record that 0 stays as its first sample. Deployments within
        ``lowest_latency_buffer`` × the lowest (``routing_strategy_args``; 0 by default) are
        picked among at random; so are ties.
      - ``"usage-based-routing-v2"``: the lowest tokens answered this minute (input plus
        output, counted when the answer ends), a tie at random, among the deployments whose
        tokens plus the request's ``input_tokens`` stay within their ``tpm`` and whose calls
        started this minute plus one stay *below* their ``rpm`` (so ``rpm=3`` lets two calls a
        minute through, and ``rpm=1`` or ``2`` one). ``tpm``/``rpm`` come from
        ``litellm_params`` or ``model_info``. When none is left, no call is made (a
        ``skipped`` row per deployment) and the request goes to the fallbacks, LiteLLM's "No
        deployments available". Latency-based routing applies the same limits, counting
        answered calls per minute.

      - ``"cost-based-routing"``: the lowest price per token, input plus output: each from
        ``litellm_params`` (``input_cost_per_token``, ``output_cost_per_token``; a 0 is passed
        over, as LiteLLM passes it over), else from the host's ModelProfile (``price_in``,
        ``price_out`` / 1e6, in place of LiteLLM's model cost map; a profile with both prices 0
        counts as unpriced), else 5.0, LiteLLM's price for a model it does not know. Among the
        deployments whose answered calls this minute plus one stay within their ``rpm`` and
        whose tokens plus ``input_tokens`` within their ``tpm`` (both counted when an answer
        lands; a 0 limit is none); none left: the fallbacks, as above. A tie goes to the
        deployment that answered first in the group (LiteLLM's record order), else the one
        listed first. No random draw. ``base_model`` is refused (LiteLLM would price it from
        its cost map).

      A minute is the run's (``int(t // 60)``), a wall-clock one in LiteLLM. Unknown names are
      refused with the list of supported ones.
    * **order** (``litellm_params["order"]``, or ``model_info["order"]``): only the healthy
      deployments of the lowest order are picked (those without an order only when no healthy
      one has one), so a cooled order-1 deployment hands its retries to order 2 at once. When a
      request fails at one order, with its retries spent or on an error that is not retried (a
      400 too), the group's next higher order is tried, with its own retries, before any
      fallback group. Retries at an order do not wait while another deployment of the group,
      of any order, is healthy.
    * **Streaming** (``stream=True``, LiteLLM's ``acompletion(..., stream=True)``; every attempt
      is a :meth:`Driver.stream_model` read to its end): an error before the stream opens (an
      error status, a reset, a timeout) is handled as above; a 200 stream that breaks before any
      content (a malformed first chunk) goes to the fallbacks at once, without a retry
      (LiteLLM's mid-stream fallback); a stream that breaks after content had come (a cut
      stream) ends the request with that error: no retry, no fallback, as LiteLLM raises it to
      its caller (its continuation of a cut stream is off by default and not modelled).
      Neither kind of broken stream counts toward a cooldown.

    It owns its retry loop rather than extending ``HostPolicy``, because LiteLLM decides each
    retry from state the host's loop does not have: whether a sibling deployment is healthy (then
    no wait), which deployment to pick next, the group's cooldowns counting every failed attempt,
    a wait after the last retry, LiteLLM's own reading of Retry-After with jitter. Every attempt is
    ``driver.call_model(request, [model], max_retries=0)`` (or ``stream_model``), which overrides the host's ``HostPolicy.max_retries`` for that one call, so
    it behaves the same on any host (no need to build one with ``max_retries=0``, and nothing to
    refuse). The host's ``timeout_s`` still bounds each attempt. It needs ``recover_errors=True``
    (the default) to see its calls' errors. Jitter and deployment picks are keyed draws
    (``uniforms(driver.seed, "litellm_like", request id, n)``), so a run is the same for a seed.

    Not modelled: LiteLLM's ``usage-based-routing`` (v1), its cost map (cost-based-routing
    reads the host's prices instead) and the expiry of its record after ~10 min, rpm/tpm
    limits under simple-shuffle (there ``rpm`` only weighs the shuffle), usage-based-routing-v2's
    check at the call's start that refuses a deployment whose rpm another pick filled since (a
    race between concurrent picks, which a pick and its call at one instant never meet),
    LiteLLM's own token count of the messages (``input_tokens`` is sykit's), a deployment's own
    ``allowed_fails`` or ``allowed_fails_policy`` (``model_info``), retry policies per error class,
    retries on other 4xx when a group has several deployments, a stream that an HttpHost sees
    break after its 200 but before any content without a malformed chunk (LiteLLM falls back at
    once; here it is an ``unavailable`` attempt, retried), the continuation of a cut stream
    on a fallback (``enable_mid_stream_fallback_continuation``, off by default), and providers
    other than OpenAI-compatible ones (whose errors LiteLLM maps by other rules).
    ``conformance/`` in the repository records the real Router's behaviour and checks this one
    against it.

    Groups of one deployment without ``allowed_fails`` (no deployment can cool), with
    ``simple-shuffle``, no streams, and no group falling back to several, run on the bulk engine
    (see ``docs/engines.md``); other settings on the event engines. The frames are the same.

    In the ``attempts`` frame every attempt is its own call (``retry_index`` 0, ``retried``
    False). The attempt after which it moves to a fallback group carries the ``fallback_reason``
    (when its error is of a listed kind: a timeout or a 401, which LiteLLM falls back on too,
    leaves it empty), and the request's ``n_fallbacks`` counts the fallback groups tried (a move
    to a higher order within a group is not counted). A request that finds every deployment of a
    group cooling gets a ``skipped`` row per deployment (``error_kind`` ``cooldown``), as the
    host's candidate loop writes for a cooling candidate.
    """
    orders: dict[str, int] = {}
    weights: dict[str, dict[str, float]] = {}
    limits: dict[str, dict[str, Limits]] = {}
    cooldowns: dict[str, float] = {}
    prices: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    if not isinstance(routing_strategy, str) or routing_strategy not in ROUTING_STRATEGIES:
        raise ArgumentError(
            f"unknown routing_strategy {routing_strategy!r:.60}; litellm_like supports "
            f"{list(ROUTING_STRATEGIES)} (LiteLLM's usage-based-routing is not modelled)"
        )
    args = routing_args(routing_strategy, routing_strategy_args)
    if model_list is not None:
        if models_or_groups is not None:
            raise ArgumentError(
                "litellm_like() takes either groups or model_list=, not both: put every "
                "deployment in model_list"
            )
        groups, orders, weights, limits, cooldowns, prices = _litellm_model_list(
            model_list, by_cost=routing_strategy == "cost-based-routing"
        )
    elif models_or_groups is None:
        raise ArgumentError("litellm_like() needs the models, the groups or model_list=")
    elif isinstance(models_or_groups, Mapping):
        groups = {}
        for group, deployments in models_or_groups.items():
            if not isinstance(group, str) or not group:
                raise ArgumentError(f"group names must be non-empty strings, got {group!r}")
            groups[group] = tuple(checked_models(deployments, f"litellm_like() group {group!r}"))
        if not groups:
            raise ArgumentError("litellm_like() needs at least one group")
    else:
        groups = {m: (m,) for m in checked_models(models_or_groups, "litellm_like()")}
    if cooldown_s is not None or window_s is not None:
        warnings.warn(
            "litellm_like(cooldown_s=, window_s=) are the former settings: use cooldown_time= "
            "(window_s is no longer used)",
            DeprecationWarning,
            stacklevel=2,
        )
        if cooldown_s is not None:
            cooldown_time = cooldown_s
    for name, number in (("num_retries", num_retries), ("max_fallbacks", max_fallbacks)):
        check_int(number, name, low=0, type_error=ArgumentError)
    if num_retries > 10:
        raise ArgumentError(f"num_retries must be at most 10, got {num_retries}")
    if allowed_fails is not None:
        allowed_fails = check_int(
            allowed_fails,
            "allowed_fails",
            low=0,
            expected="None or an int ≥ 0",
            type_error=ArgumentError,
        )
    cooldown_time = check_number(cooldown_time, "cooldown_time")
    if retry_after not in _LITELLM_RETRY_AFTER:
        raise ArgumentError(
            f"retry_after must be one of {list(_LITELLM_RETRY_AFTER)}, got {retry_after!r}"
        )
    if not isinstance(stream, bool):
        raise ArgumentTypeError(f"stream must be True or False, got {stream!r:.40}")
    if fallbacks is None and model_list is None:
        fallbacks = list(groups)  # each group falls back to the next one given
    regular = _group_table(fallbacks, groups, "fallbacks")
    name = (
        "litellm_like("
        + ">".join(g if groups[g] == (g,) else f"{g}[{','.join(groups[g])}]" for g in groups)
        + ")"
    )
    return _LiteLLMLike(
        groups,
        regular,
        _group_table(context_window_fallbacks, groups, "context_window_fallbacks"),
        _group_table(content_policy_fallbacks, groups, "content_policy_fallbacks"),
        num_retries=num_retries,
        allowed_fails=allowed_fails,
        cooldown_time=float(cooldown_time),
        retry_after=retry_after,
        max_fallbacks=max_fallbacks,
        name=name,
        stream=stream,
        orders=orders,
        weights=weights,
        routing_strategy=routing_strategy,
        routing_args=args,
        limits=limits,
        cooldowns=cooldowns,
        prices=prices,
    )
