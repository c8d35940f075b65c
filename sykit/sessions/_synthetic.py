"""Synthetic coding-agent sessions, fitted to a real agent's LLM calls.

The trace is ``datasets/agentic/openhands_sweverified_claude35_calls.csv``: every LLM call the
OpenHands CodeActAgent (claude-3-5-sonnet-20241022) made on 50 SWE-bench Verified tasks. A router
for agent traffic is judged on what such traffic looks like: how many calls a task takes, how the
context grows, which tools the agent called, how often a tool failed and how long the agent
paused between calls. :func:`synthetic_sessions` makes any number of sessions with those shapes.

**Resampled, not parametric.** A session copies the tool sequence of one traced conversation
(which tool each call chose, and whether the tool result it was shown was an error) and draws its
numbers anew: the first prompt's size from the traced first prompts; each later turn's context
growth and pause, jointly, from the traced calls that came after the same tool kind with the same
error flag; each answer's length from the traced answers that called the same tool. Why:

- growth depends on the tool: a directory listing adds a median ~11k tokens, a ``str_replace``
  ~700, a search ~260. One fitted curve would blur that, and 50 tasks are too few to fit a
  parametric tail per tool;
- real tool sequences carry the structure routers read (explore, write a reproduction script,
  run it, edit, run again, answer in text, finish); a chain of independent draws would lose it
  and would not keep the number of calls per conversation;
- each headline figure of the trace (calls per conversation, prompt sizes, growth, error share,
  pauses, the tool mix) is then reproduced by construction, up to sampling noise.

The cost: there are only as many distinct tool sequences as traced conversations (62); sizes,
pauses, answer lengths and message texts differ per session.

**Conversations, not tasks.** On 11 tasks the evaluation harness restarted the agent with a
fresh history (system prompt and task again): 12 restarts, 2 to 73 minutes after the previous
call (all but one after 47 minutes or more). A session is one
conversation whose context grows, so a restart starts a new one: 62 conversations (median 18
calls; 22 per task when a task's restarts are counted together). The 12 restart pauses are harness
time, not pauses between turns, and are counted in :attr:`AgentTrace.restarts`, not resampled.

**Sub-agents.** ``subagents=k`` gives each session of at least ``2k + 1`` turns (``N``) a family
doing the same work plus what delegation adds to it. The work: ``k`` sub-agents make the
session's first ``N // 2`` calls (consecutive parts, in parallel), the parent the rest. What
delegation adds, each part named, and each default set from this trace (the OpenHands Index,
which has only a cost per task, checks the result; it cannot tell the parts apart):

1. *Briefing* (``briefing_tokens``, default 300). The parent's turn 0 delegates, writing each
   sub-agent its task. A sub-agent's context opens with its own system prompt and the task (the
   size of the session's first prompt, as a fresh conversation in the trace opens) plus the
   parent's instructions; the instructions also stay in the parent's history. 300 tokens: the
   length of the prose the traced agent wrote for a reader, its ``finish`` messages (median 327)
   and its answers without a tool call (median 279).
2. *Report.* A sub-agent ends with one turn more than its calls: it reads its last tool result
   and answers with its report. sykit adds that answer's tokens to the parent's next prompt at
   run time (the answer length the model serves; the traced final answers are ~300 tokens), so
   the report has no knob of its own: one would count it twice.
3. *Re-discovery* (``rediscovery``, default 0.84). A report is not a context: before it goes
   on, the parent re-makes the delegated calls that read the code (file views, searches,
   listings), each with probability ``rediscovery``, each adding the growth it added in the
   sub-agent. 0.84: on the 11 tasks whose agent the harness restarted with a fresh history, the
   restarted conversation re-made 84 % of the growth the first conversation's views, searches
   and listings had added before its first code edit (pooled; 95 % of those calls; per task,
   median 98 %). The parent delegates at turn 0, before it has read anything, so the sub-agents
   have none of its context to re-discover, and sub-agents running in parallel cannot wait for
   each other's findings.
4. *Caching.* Each context is its own session to the prompt cache: a sub-agent's first call
   writes its whole opening and reads nothing, and a re-made read is written again in the
   parent's cache. (sykit's cache is per session; a provider may serve a fresh context's system
   prompt from another context's entry, as on 8 of the trace's 62 first calls, 1,348 tokens: a
   small overstatement per sub-agent.)

The family shares the session's draws (calls, growth, pauses, tools, answer lengths); its own
(which reads are re-made, the report turns' traced lengths) are keyed by seed, session and call,
so a ``subagents=0`` session is exactly the one a run without the option draws, and which reads
are re-made does not depend on ``k`` or ``n``. Run at list prices with the prompt cache
(``benchmarks/subagent_cost_ratio.py``), a family costs 1.21-1.29 times its session for 1-4
sub-agents: mostly the re-made reads (0.87-0.95 times without them).

**Pauses include the next call's latency.** The trace's ``gap_s`` is the time from one call's log
entry to the next: tool execution, the agent's own work and the next call's latency. sykit adds
the simulated latency after ``Turn.gap_s``, so sessions run with these pauses are slower than the
traced agent by about one call latency per turn.
"""

from __future__ import annotations

import functools
import json
import math
import warnings
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.files import read_table
from sykit._base.rng import uniforms
from sykit._world.dists import Empirical
from sykit._world.models import Request
from sykit._world.sessions import Session, Turn

__all__ = ["AgentTrace", "Step", "Transition", "fit_openhands", "synthetic_sessions"]

OPENHANDS_CALLS = "agentic/openhands_sweverified_claude35_calls.csv"
_COLUMNS = (
    "instance_id",
    "turn",
    "gap_s",
    "n_messages",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "tool",
    "tool_sub",
    "prev_obs_error",
)

#: The tokens of the parent's instructions to each sub-agent, on top of the task: the length of
#: the prose the traced agent wrote for a reader (``finish`` messages: median 327 tokens; text
#: answers: median 279).
BRIEFING_TOKENS = 300
#: The share of the delegated reads the parent re-makes after the reports: what the traced
#: restarts re-made of the first conversation's reads before the first code edit (growth, pooled).
REDISCOVERY = 0.84
#: The tool kinds whose calls only read the code, which a context that did not see them re-makes.
REDISCOVERED_KINDS = ("view", "search", "list")


@dataclass(frozen=True)
class Step:
    """One traced call: the tool its answer called (``tool``, and ``kind``: the editor command
    or the class of bash command; ``"finish"``; ``"none"`` for an answer without a tool call)
    and whether the tool result its prompt ended with was an error."""

    tool: str
    kind: str
    after_error: bool


@dataclass(frozen=True)
class Transition:
    """What one traced call added after the previous one: prompt tokens, and the pause."""

    tokens: int
    gap_s: float


@dataclass(frozen=True)
class AgentTrace:
    """The tables :func:`synthetic_sessions` draws from, fitted from a per-call trace.

    ``conversations`` are the traced tool sequences; ``first_prompt_tokens`` the sizes of their
    first prompts; ``transitions[(kind, error)]`` the (growth, pause) pairs of the calls that came
    after a call of that tool kind whose result was (or was not) an error;
    ``completion_tokens[kind]`` the lengths of the answers that called that kind;
    ``max_output_tokens`` the output cap the agent sent (the longest answer cut for length; None
    when none was); ``tasks`` and ``restarts`` count the traced tasks and harness restarts."""

    source: str
    conversations: tuple[tuple[Step, ...], ...]
    first_prompt_tokens: tuple[int, ...]
    transitions: Mapping[tuple[str, bool], tuple[Transition, ...]]
    completion_tokens: Mapping[str, tuple[int, ...]]
    max_output_tokens: int | None
    tasks: int
    restarts: int

    def __post_init__(self) -> None:
        if not self.conversations or not self.first_prompt_tokens:
            raise ArgumentError(f"{self.source}: the trace holds no conversation")
        for c, steps in enumerate(self.conversations):
            if not steps:
                raise ArgumentError(f"{self.source}: conversation {c} has no calls")
            for k, step in enumerate(steps):
                if step.kind not in self.completion_tokens:
                    raise ArgumentError(
                        f"{self.source}: conversation {c} call {k} calls {step.kind!r}, which "
                        "has no answer lengths"
                    )
                if k and (steps[k - 1].kind, step.after_error) not in self.transitions:
                    raise ArgumentError(
                        f"{self.source}: conversation {c} call {k} follows "
                        f"{steps[k - 1].kind!r} (error {step.after_error}), which has no "
                        "traced transitions"
                    )

    def output_tokens(self) -> Empirical:
        """Every traced answer length, for a simulated model's ``output_tokens`` (sykit's host
        decides answer lengths from the profile, not from the request)."""
        return Empirical(n for pool in self.completion_tokens.values() for n in pool)


@functools.cache
def fit_openhands() -> AgentTrace:
    """The tables fitted from the shipped OpenHands trace (computed once per process)."""
    return _fit(read_table(OPENHANDS_CALLS), OPENHANDS_CALLS)


def _fit(calls: pd.DataFrame, source: str) -> AgentTrace:
    """Cut the per-call rows into conversations and pool what followed each tool kind."""
    missing = [c for c in _COLUMNS if c not in calls.columns]
    if missing:
        raise ArgumentError(f"{source}: missing columns {missing}")
    conversations: list[tuple[Step, ...]] = []
    first_prompts: list[int] = []
    transitions: dict[tuple[str, bool], list[Transition]] = defaultdict(list)
    completions: dict[str, list[int]] = defaultdict(list)
    restarts = 0
    for _, task in calls.groupby("instance_id", sort=False):
        steps: list[Step] = []
        previous: Any = None
        for row in task.sort_values("turn").itertuples(index=False):
            kind = row.tool if pd.isna(row.tool_sub) else row.tool_sub
            step = Step(str(row.tool), str(kind), bool(row.prev_obs_error))
            completions[step.kind].append(int(row.completion_tokens))
            if row.n_messages <= 2:  # system prompt and task only: a (re)start
                restarts += bool(steps)
                if steps:
                    conversations.append(tuple(steps))
                steps = []
                first_prompts.append(int(row.prompt_tokens))
            else:
                growth = int(row.prompt_tokens) - int(previous.prompt_tokens)
                if growth < 0 or not math.isfinite(row.gap_s):
                    raise ArgumentError(
                        f"{source}: {row.instance_id} call {row.turn} shrinks the prompt or has "
                        "no gap_s, yet continues the conversation"
                    )
                transitions[steps[-1].kind, step.after_error].append(
                    Transition(growth, float(row.gap_s))
                )
            steps.append(step)
            previous = row
        conversations.append(tuple(steps))
    cut = calls.loc[calls["finish_reason"] == "length", "completion_tokens"]
    return AgentTrace(
        source=source,
        conversations=tuple(conversations),
        first_prompt_tokens=tuple(first_prompts),
        transitions=MappingProxyType({key: tuple(pool) for key, pool in transitions.items()}),
        completion_tokens=MappingProxyType({key: tuple(pool) for key, pool in completions.items()}),
        max_output_tokens=int(cut.max()) if len(cut) else None,
        tasks=int(calls["instance_id"].nunique()),
        restarts=restarts,
    )


def synthetic_sessions(
    n: int,
    *,
    seed: int = 0,
    trace: AgentTrace | None = None,
    id_prefix: str = "task",
    subagents: int = 0,
    briefing_tokens: int = BRIEFING_TOKENS,
    rediscovery: float = REDISCOVERY,
) -> list[Session]:
    """``n`` coding-agent sessions drawn from ``trace`` (the OpenHands fit by default), the same
    ones for the same seed; session ``i`` has id ``f"{id_prefix}-{i}"``.

    Turn ``k`` sends the whole conversation so far in the OpenAI chat format: a system prompt, the
    task, then per earlier call the assistant's message (with its ``tool_calls``) and the tool's
    result (a text with a traceback, a non-zero exit code or ``ERROR:`` when the trace's error
    flag is drawn). Message texts are short stand-ins, so ``input_tokens`` is set from the trace,
    not estimated from them. ``max_output_tokens`` is the agent's output cap, not the answer's
    length: the traced length goes into ``metadata["completion_tokens"]`` (for analysis: the
    simulated answer length comes from the model profile, see :meth:`AgentTrace.output_tokens`,
    and an algorithm that reads it reads the future). ``metadata`` also names the tool whose
    result ends the prompt (``tool``, ``tool_kind``; None on the first turn) and ``tool_error``.
    ``Turn.gap_s`` is the drawn pause in seconds.

    ``subagents=k`` (default 0: none) splits each session of at least ``2k + 1`` turns into a
    parent and ``k`` sub-agents spawned by its turn 0 (ids ``f"{id}/sub{j}"``, listed after their
    parent); shorter sessions stay whole (a ``UserWarning`` when none is long enough). The
    sub-agents make the first half of the session's
    calls, each in a fresh context that opens with the task plus ``briefing_tokens`` of the
    parent's instructions (which stay in the parent's history too), and each ends with a turn
    that answers with its report (sykit adds the answer to the parent's next prompt). The parent
    then re-makes each delegated read (file view, search, listing) with probability
    ``rediscovery``, as a context that has a report but not the files, and makes the rest of the
    calls. The defaults come from the OpenHands trace (300: the traced agent's final messages;
    0.84: what its restarted conversations re-read); docs/sessions.md gives the evidence and the
    check against the OpenHands Index. The session's own draws are those of ``subagents=0``, so
    the two compare like for like; ``briefing_tokens`` and ``rediscovery`` change nothing
    without sub-agents.
    """
    n = check_int(n, "n", low=1, type_error=ArgumentError)
    subagents = check_int(subagents, "subagents", low=0, type_error=ArgumentError)
    briefing_tokens = check_int(
        briefing_tokens,
        "briefing_tokens",
        low=0,
        type_error=ArgumentError,
        expected="an int ≥ 0 (tokens of the parent's instructions to each sub-agent)",
    )
    rediscovery = check_real(
        rediscovery,
        "rediscovery",
        low=0,
        high=1,
        expected="a share from 0 to 1 (of the delegated reads the parent re-makes)",
        type_error=ArgumentError,
    )
    seed = check_int(seed, "seed")
    if not isinstance(id_prefix, str):
        raise ArgumentTypeError(f"id_prefix must be a str, got {type(id_prefix).__name__}")
    if trace is None:
        trace = fit_openhands()
    elif not isinstance(trace, AgentTrace):
        raise ArgumentTypeError(f"trace must be an AgentTrace, got {type(trace).__name__}")
    if not subagents:
        return [_session(trace, seed, i, f"{id_prefix}-{i}") for i in range(n)]
    delegation = _Delegation(subagents, briefing_tokens, rediscovery)
    families = [_family(trace, seed, i, f"{id_prefix}-{i}", delegation) for i in range(n)]
    if all(len(family) == 1 for family in families):
        longest = max(len(family[0].turns) for family in families)
        warnings.warn(
            f"subagents={subagents} split none of the {n} session(s): a session needs at least "
            f"{2 * subagents + 1} turns to be split (the longest drawn has {longest}); they are "
            "returned whole, without sub-agents. Ask for fewer sub-agents or more sessions",
            UserWarning,
            stacklevel=2,
        )
    return [session for family in families for session in family]


def _pick(pool: tuple[Any, ...], u: float) -> Any:
    return pool[min(int(u * len(pool)), len(pool) - 1)]


@dataclass(frozen=True)
class _Drawn:
    """One drawn turn: its step, prompt size, pause, answer length, the tool result that ends
    its prompt (None on the first turn) and its own assistant message (None on the last)."""

    step: Step
    tokens: int
    gap_s: float
    metadata: dict[str, Any]
    result: dict[str, Any] | None
    call: dict[str, Any] | None


def _draw(trace: AgentTrace, seed: int, index: int) -> list[_Drawn]:
    """The turns of session ``index``: every draw a session of this seed and index makes."""
    u = uniforms(seed, "agent-session", index)
    steps = _pick(trace.conversations, u[0])
    tokens = _pick(trace.first_prompt_tokens, u[1])
    drawn = []
    for k, step in enumerate(steps):
        draws = uniforms(seed, "agent-turn", index, k)
        gap = 0.0
        before = steps[k - 1] if k else None
        result = None
        if before is not None:
            moved = _pick(trace.transitions[before.kind, step.after_error], draws[0])
            tokens += moved.tokens
            gap = moved.gap_s
            result = _result(before, step.after_error, k - 1, draws[2])
        metadata = {
            "tool": before.tool if before else None,
            "tool_kind": before.kind if before else None,
            "tool_error": step.after_error,
            "completion_tokens": _pick(trace.completion_tokens[step.kind], draws[1]),
        }
        call = _call(step, k, draws[3]) if k + 1 < len(steps) else None
        drawn.append(_Drawn(step, tokens, gap, metadata, result, call))
    return drawn


def _turn(
    trace: AgentTrace,
    history: list[dict[str, Any]],
    tokens: int,
    metadata: Mapping[str, Any],
    gap_s: float,
) -> Turn:
    request = Request(
        list(history),
        tools=TOOLS,
        input_tokens=tokens,
        max_output_tokens=trace.max_output_tokens,
        metadata=dict(metadata),
    )
    return Turn(request, gap_s=gap_s)


def _session(trace: AgentTrace, seed: int, index: int, sid: str) -> Session:
    history = _opening(_task_text(sid))
    turns = []
    for turn in _draw(trace, seed, index):
        if turn.result is not None:
            history.append(turn.result)
        turns.append(_turn(trace, history, turn.tokens, turn.metadata, turn.gap_s))
        if turn.call is not None:
            history.append(turn.call)
    return Session(turns, id=sid)


def _opening(task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task}]


@dataclass(frozen=True)
class _Delegation:
    """How a family delegates: ``k`` sub-agents, each briefed with ``briefing_tokens``, and the
    share of the delegated reads the parent re-makes (``rediscovery``)."""

    k: int
    briefing_tokens: int
    rediscovery: float


def _family(trace: AgentTrace, seed: int, index: int, sid: str, how: _Delegation) -> list[Session]:
    """Session ``index`` as a parent and ``how.k`` sub-agents (see the module's docstring); whole
    when it has fewer than ``2k + 1`` turns.

    Call ``t`` is drawn turn ``t``'s (``drawn[t].call``); its result, and the growth it adds, are
    those that open drawn turn ``t + 1``. The sub-agents make calls ``0 … m - 1`` (``m = N // 2``),
    the parent calls ``m … N - 1`` after its re-made reads."""
    k = how.k
    drawn = _draw(trace, seed, index)
    if len(drawn) < 2 * k + 1:
        return [_session(trace, seed, index, sid)]
    m = len(drawn) // 2
    parts = [range(m * j // k, m * (j + 1) // k) for j in range(k)]
    first = drawn[0].tokens

    def grown(t: int) -> int:  # what call t's result adds to the prompt
        return drawn[t + 1].tokens - drawn[t].tokens

    children = []
    for j, part in enumerate(parts):
        history = _opening(_delegated_text(sid, j, k))
        tokens = first + how.briefing_tokens
        turns = []
        for t in part:
            if t != part.start:
                result = drawn[t].result
                assert result is not None  # every turn after the first has one
                history.append(result)
                tokens += grown(t - 1)
            metadata = drawn[t].metadata if t != part.start else {**drawn[t].metadata, **_OPENS}
            turns.append(_turn(trace, history, tokens, metadata, drawn[t].gap_s))
            call = drawn[t].call
            assert call is not None  # t < m < N - 1: not the session's last turn
            history.append(call)
        report = drawn[part.stop]  # the report turn reads the last call's result
        assert report.result is not None
        history.append(report.result)
        tokens += grown(part.stop - 1)
        answer = {"completion_tokens": _pick(_report_lengths(trace), _report_draw(seed, index, j))}
        turns.append(_turn(trace, history, tokens, {**report.metadata, **answer}, report.gap_s))
        children.append(Session(turns, id=f"{sid}/sub{j}", parent=sid, parent_turn=0))

    history = _opening(_task_text(sid))
    parent = [_turn(trace, history, first, drawn[0].metadata, drawn[0].gap_s)]
    history.append(_delegate_call(sid, k))
    history += [_delegate_result(j) for j in range(k)]
    tokens = first + k * how.briefing_tokens  # the briefings stay in the parent's history
    ended: dict[str, Any] = {"tool": "delegate", "tool_kind": "delegate", "tool_error": False}
    gap = drawn[m].gap_s  # the pause before the work goes on, as in the whole session
    again = [t for t in range(m) if _rediscovered(drawn[t], seed, index, t, how.rediscovery)]
    for t in [*again, *range(m, len(drawn))]:
        if t > m:  # the parent's own calls go on from call m
            result = drawn[t].result
            assert result is not None
            history.append(result)
            tokens += grown(t - 1)
            ended, gap = _ended(drawn[t]), drawn[t].gap_s
        answer = {"completion_tokens": drawn[t].metadata["completion_tokens"]}
        parent.append(_turn(trace, history, tokens, {**ended, **answer}, gap))
        call = drawn[t].call
        if t < m:  # a re-made read: its result and growth, as in the sub-agent
            assert call is not None
            history.append(call)
            after = drawn[t + 1]
            assert after.result is not None
            history.append(after.result)
            tokens += grown(t)
            ended, gap = _ended(after), after.gap_s
        elif call is not None:
            history.append(call)
    return [Session(parent, id=sid), *children]


#: A sub-agent's first prompt ends with its briefing, not with a tool result.
_OPENS: dict[str, Any] = {"tool": None, "tool_kind": None, "tool_error": False}


def _ended(turn: _Drawn) -> dict[str, Any]:
    """The metadata that names the tool result ending ``turn``'s prompt."""
    return {key: turn.metadata[key] for key in ("tool", "tool_kind", "tool_error")}


def _rediscovered(turn: _Drawn, seed: int, index: int, t: int, share: float) -> bool:
    """Whether the parent re-makes delegated call ``t``: a read, drawn with probability
    ``share`` (keyed by seed, session and call, so the same for any number of sub-agents)."""
    if turn.step.kind not in REDISCOVERED_KINDS or share <= 0:
        return False
    return uniforms(seed, "agent-rediscovery", index, t)[0] < share


def _report_draw(seed: int, index: int, j: int) -> float:
    return uniforms(seed, "agent-report", index, j)[0]


def _report_lengths(trace: AgentTrace) -> tuple[int, ...]:
    """The traced lengths of final answers (``finish`` calls and answers without a tool call),
    for a report turn's ``completion_tokens``; every traced answer when the trace has none."""
    final = tuple(n for kind in ("finish", "none") for n in trace.completion_tokens.get(kind, ()))
    return final or tuple(n for pool in trace.completion_tokens.values() for n in pool)


# -- the messages: short stand-ins in OpenHands' shapes ----------------------------------------

SYSTEM_PROMPT = (
    "You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve "
    "tasks. Use the tools to explore the repository, reproduce the problem, edit the code and "
    "check your fix; call `finish` when you are done."
)
CONTINUE_PROMPT = (
    "Please continue working on the task on whatever approach you think is suitable.\n"
    "If you think you have solved the task, please first send your answer to user through "
    "message and then finish the interaction.\nIMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP."
)
_REPO = "/workspace/project"
_MODULES = ("core.py", "utils.py", "models.py", "io.py", "validation.py", "formats.py")


def _delegated_text(sid: str, j: int, k: int) -> str:
    """The parent's briefing of sub-agent ``j``: the task restated, and its part."""
    return (
        f"You are sub-agent {j + 1} of {k} working on issue {sid} in {_REPO}: a function returns "
        f"the wrong result for one kind of input. Take on part {j + 1} of {k} of the work "
        "(find the code, reproduce the problem, change what it needs) and report what you found "
        "and what you changed."
    )


def _delegate_call(sid: str, k: int) -> dict[str, Any]:
    """The parent's turn 0 answer: one ``delegate`` call per sub-agent, carrying its briefing."""
    calls = [
        {
            "id": f"delegate_{j}",
            "type": "function",
            "function": {
                "name": "delegate",
                "arguments": json.dumps({"part": j + 1, "task": _delegated_text(sid, j, k)}),
            },
        }
        for j in range(k)
    ]
    return {
        "role": "assistant",
        "content": "Let me delegate parts of the work.",
        "tool_calls": calls,
    }


def _delegate_result(j: int) -> dict[str, Any]:
    """Where sub-agent ``j``'s report lands in the parent's history (its tokens are the
    sub-agent's final answer, which sykit adds at run time)."""
    return {
        "role": "tool",
        "tool_call_id": f"delegate_{j}",
        "content": f"Sub-agent {j + 1} finished and reported its findings.",
    }


def _task_text(sid: str) -> str:
    return (
        f"<uploaded_files>\n{_REPO}\n</uploaded_files>\nI've uploaded a python code repository "
        f"in the directory {_REPO}. Consider the following PR description:\n\n<pr_description>\n"
        f"Issue {sid}: a function returns the wrong result for one kind of input.\n"
        "</pr_description>\n\nCan you help me implement the necessary changes to the repository "
        "so that the requirements specified in the <pr_description> are met?"
    )


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


#: The tools the agent offers the model on every call (OpenAI function definitions).
TOOLS = (
    _function(
        "execute_bash",
        "Execute a bash command in the terminal.",
        {"command": {"type": "string"}},
        ["command"],
    ),
    _function(
        "str_replace_editor",
        "View, create and edit files.",
        {
            "command": {
                "type": "string",
                "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
            },
            "path": {"type": "string"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
        },
        ["command", "path"],
    ),
    _function("finish", "Finish the interaction when the task is done.", {}, []),
)

_BASH = {
    "run_script": "python {repo}/reproduce_issue.py",
    "search": "grep -rn 'def ' {path} | head -20",
    "list": "find {repo} -type f -name '*.py' | head -50",
    "shell_edit": "sed -i 's/return value/return result/' {path}",
    "test": "python -m pytest -x {repo}/tests",
    "install_build": "pip install -e {repo}",
    "run_python": "python -c 'import project; print(project.__version__)'",
    "git": "cd {repo} && git diff",
}
_SAYS = {
    "view": "Let me look at this file.",
    "create": "Let me write a script that reproduces the issue.",
    "str_replace": "Let me fix the code.",
    "run_script": "Let me run the script.",
    "search": "Let me search for the relevant code.",
    "list": "Let me explore the repository structure.",
    "none": "I have fixed the issue: the function now handles that kind of input.",
}


def _path(u: float) -> str:
    return f"{_REPO}/src/project/{_pick(_MODULES, u)}"


def _arguments(step: Step, u: float) -> dict[str, Any]:
    path = _path(u)
    if step.tool == "str_replace_editor":
        if step.kind == "create":
            return {
                "command": "create",
                "path": f"{_REPO}/reproduce_issue.py",
                "file_text": "from project import check\nprint(check('x'))\n",
            }
        if step.kind == "str_replace":
            return {
                "command": "str_replace",
                "path": path,
                "old_str": "    return value",
                "new_str": "    return result",
            }
        return {"command": step.kind, "path": path}
    if step.tool == "execute_bash":
        command = _BASH.get(step.kind, "cd {repo} && ls")
        return {"command": command.format(repo=_REPO, path=path)}
    return {}


def _call(step: Step, k: int, u: float) -> dict[str, Any]:
    """The assistant message of call ``k``: a tool call, or text for an answer without one."""
    says = _SAYS.get(step.kind, "Next, let me check this.")
    if step.kind == "none":
        return {"role": "assistant", "content": says}
    call = {
        "id": _call_id(k),
        "type": "function",
        "function": {"name": step.tool, "arguments": json.dumps(_arguments(step, u))},
    }
    return {"role": "assistant", "content": says, "tool_calls": [call]}


def _call_id(k: int) -> str:
    return f"toolu_{k:03d}"


def _result(step: Step, error: bool, k: int, u: float) -> dict[str, Any]:
    """What the agent sends back after call ``k``: its tool's result (an error's text when
    ``error``), or the agent's prompt to go on after an answer without a tool call."""
    if step.kind == "none":
        return {"role": "user", "content": CONTINUE_PROMPT}
    path = _path(u)
    if step.tool == "execute_bash":
        text = _bash_error(step.kind, path) if error else "OK\n[Command finished with exit code 0]"
    elif step.tool == "str_replace_editor":
        text = _editor_error(step.kind, path) if error else _editor_result(step.kind, path)
    else:
        text = f"ERROR:\n{step.tool} failed." if error else ""
    return {"role": "tool", "tool_call_id": _call_id(k), "content": text}


def _bash_error(kind: str, path: str) -> str:
    if kind in ("run_script", "run_python", "test", "install_build"):
        return (
            "Traceback (most recent call last):\n"
            f'  File "{_REPO}/reproduce_issue.py", line 2, in <module>\n'
            "    print(check('x'))\nValueError: invalid literal for check: 'x'\n"
            "[Command finished with exit code 1]"
        )
    return f"grep: {path}: No such file or directory\n[Command finished with exit code 2]"


def _editor_error(kind: str, path: str) -> str:
    if kind == "str_replace":
        return (
            "ERROR:\nNo replacement was performed, old_str `    return value` did not appear "
            f"verbatim in {path}."
        )
    if kind == "create":
        return f"ERROR:\nInvalid `path` parameter: {_REPO}/reproduce_issue.py. File already exists."
    return f"ERROR:\nInvalid `path` parameter: {path}. The path {path} does not exist."


def _editor_result(kind: str, path: str) -> str:
    if kind == "create":
        return f"File created successfully at: {_REPO}/reproduce_issue.py"
    if kind == "str_replace":
        return f"The file {path} has been edited. Review the changes and make sure they are as expected."
    return f"Here's the result of running `cat -n` on {path}:\n     1\tdef check(value):"
