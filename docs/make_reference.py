"""Write docs/reference.md from the docstrings of everything sykit exports.

    python docs/make_reference.py

The test suite checks that the file is current, so the reference cannot drift from the code.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from pathlib import Path

import sykit as sy

OUT = Path(__file__).with_name("reference.md")

SECTIONS = [
    ("Running", ["run", "arun", "compare", "acompare", "sweep", "Result", "Comparison", "Sweep"]),
    ("Grids", ["grid", "Grid"]),
    ("Agent sessions", ["Session", "Turn"]),
    (
        "Writing algorithms",
        [
            "Request",
            "Response",
            "Usage",
            "Driver",
            "Outcome",
            "route_to",
            "answered",
            "first",
            "first_ok",
            "timeout",
            "hedge",
        ],
    ),
    (
        "Decisions",
        [
            "DecisionRequest",
            "DecisionResponse",
            "Boolean",
            "Choice",
            "Score",
            "Answer",
            "ask_good_enough",
            "GroundTruth",
        ],
    ),
    (
        "Hosts and profiles",
        [
            "SimHost",
            "HttpHost",
            "ModelProfile",
            "Latency",
            "Faults",
            "Flapping",
            "RateLimit",
            "Judge",
            "HostPolicy",
            "Poisson",
        ],
    ),
    ("Distributions", ["Constant", "LogNormal", "Uniform", "Exponential", "Empirical"]),
    (
        "Errors and classification",
        [
            "classify",
            "fallback_reason",
            "FallbackReason",
            "SykitError",
            "ModelError",
            "ContextWindowError",
            "CapabilityError",
            "PolicyError",
            "InvalidRequestError",
            "RateLimitError",
            "UnavailableError",
            "ModelTimeout",
            "InvalidResponseError",
            "NoTargets",
            "UnknownModel",
            "RequestClosed",
            "SimDeadlock",
            "RealIOError",
        ],
    ),
]


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""


def _doc(obj: object) -> str:
    return inspect.cleandoc(inspect.getdoc(obj) or "(no docstring)")


def _entry(name: str, obj: object, prefix: str = "sy.") -> list[str]:
    if not callable(obj):
        value = repr(obj)
        value = value if len(value) <= 300 else value[:297] + "..."
        return [f"### `{prefix}{name}`", "", "*constant*", "", f"`{value}`", ""]
    kind = "class" if inspect.isclass(obj) else "function"
    lines = [
        f"### `{prefix}{name}{_signature(obj)}`",
        "",
        f"*{kind}*",
        "",
        _doc(obj),
        "",
    ]
    if inspect.isclass(obj):
        for member_name, member in vars(obj).items():
            attribute = isinstance(member, (property, functools.cached_property))
            if member_name.startswith("_") or not (callable(member) or attribute):
                continue
            if isinstance(member, property):
                target = member.fget
            elif isinstance(member, functools.cached_property):
                target = member.func
            else:
                target = member
            doc = inspect.getdoc(target)
            if not doc:
                continue
            sig = "" if attribute else _signature(target)
            lines += [f"- `{member_name}{sig}`: {doc.splitlines()[0]}"]
        lines.append("")
    return lines


def _module(name: str, module: types.ModuleType) -> list[str]:
    lines = [f"## `sy.{name}`", "", _doc(module), ""]
    for member in getattr(module, "__all__", []):
        lines += _entry(member, getattr(module, member), prefix=f"sy.{name}.")
    return lines


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Everything `sykit/__init__.py` exports (`import sykit as sy`). Generated from the",
        "docstrings by `docs/make_reference.py`.",
        "",
    ]
    done: set[str] = set()
    for title, names in SECTIONS:
        present = [n for n in names if n in sy.__all__]
        if not present:
            continue
        lines += [f"## {title}", ""]
        for name in present:
            lines += _entry(name, getattr(sy, name))
            done.add(name)
    modules = [n for n in sy.__all__ if isinstance(getattr(sy, n), types.ModuleType)]
    rest = [n for n in sy.__all__ if n not in done and n not in modules]
    if rest:
        lines += ["## Other", ""]
        for name in rest:
            lines += _entry(name, getattr(sy, name))
    for name in modules:
        lines += _module(name, getattr(sy, name))
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT}\n")
