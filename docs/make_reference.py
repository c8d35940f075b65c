"""Write docs/reference.md from the docstrings of everything sykit exports, tier by tier.

    python docs/make_reference.py

First the core (``sy.X``: ``sykit/__init__.py``'s ``__all__``), then one section per public
sub-module (``sy.traffic.X``, ``sy.dists.X``, ...), each listing its ``__all__``. A table at the
top says which tier holds what, and another gives the old top-level spellings with their new
homes. The test suite checks that the file is current, so the reference cannot drift from the code.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from pathlib import Path

import sykit as sy

OUT = Path(__file__).with_name("reference.md")

#: The core, by topic: every name of ``sy.__all__`` once.
CORE_SECTIONS = [
    ("Running", ["run", "arun", "compare", "acompare", "sweep", "Result", "Comparison", "Sweep"]),
    ("Grids", ["grid", "Grid"]),
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
            "start",
            "Started",
            "wait_first",
            "ModelStream",
            "Chunk",
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
        ],
    ),
    (
        "Hosts and profiles",
        [
            "SimHost",
            "HttpHost",
            "HttpModel",
            "ModelProfile",
            "Latency",
            "Faults",
            "Capacity",
            "Judge",
            "HostPolicy",
        ],
    ),
    (
        "Errors",
        [
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
            "ArgumentError",
            "ArgumentTypeError",
            "NoTargets",
            "UnknownModel",
            "RequestClosed",
            "SimDeadlock",
            "AlgorithmError",
            "AlgorithmWarning",
        ],
    ),
]

#: The public sub-modules, in the order the reference lists them.
TIERS = [
    "traffic",
    "dists",
    "errors",
    "faults",
    "profiles",
    "strategies",
    "sessions",
    "datasets",
    "learn",
    "testing",
    "failoverbench",
    "widgets",
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


def _first_sentence(module: types.ModuleType) -> str:
    text = " ".join(_doc(module).split("\n\n")[0].split())
    return text.split(". ")[0].rstrip(".")


def _spellings() -> dict[int, str]:
    """Each class or function exported under more than one spelling, by id, with the one its
    entry is under: the one its ``__module__`` names (``sy.ModelError`` for the errors also in
    ``sy.errors``), else the package it comes from, else the first in the reference's order."""
    places: dict[int, list[tuple[str, str]]] = {}
    objects: dict[int, object] = {}
    owners = [(sy, "sy.")] + [(getattr(sy, tier), f"sy.{tier}.") for tier in TIERS]
    for owner, prefix in owners:
        for name in owner.__all__:
            obj = getattr(owner, name)
            if callable(obj):
                objects[id(obj)] = obj
                places.setdefault(id(obj), []).append((owner.__name__, f"{prefix}{name}"))
    chosen: dict[int, str] = {}
    for key, spelt in places.items():
        if len(spelt) < 2:
            continue
        home = getattr(objects[key], "__module__", "")
        exact = [s for m, s in spelt if m == home]
        package = [s for m, s in spelt if home.startswith(m + ".")]
        chosen[key] = (exact or package or [spelt[0][1]])[0]
    return chosen


def _entries(prefix: str, names: list[str], owner: object, canonical: dict[int, str]) -> list[str]:
    lines: list[str] = []
    for name in names:
        obj = getattr(owner, name)
        home = canonical.get(id(obj))
        if home is not None and home != f"{prefix}{name}":
            lines += [f"### `{prefix}{name}`", "", f"The same object as `{home}`.", ""]
        else:
            lines += _entry(name, obj, prefix=prefix)
    return lines


def _tier_table() -> list[str]:
    lines = [
        "| Tier | Spelling | What it holds |",
        "| --- | --- | --- |",
        "| core | `sy.X` | The loop a notebook needs: requests and outcomes, the driver and its "
        "race helpers, hosts and profiles, running and comparing, the errors an algorithm "
        f"catches ({len(sy.__all__)} names). |",
    ]
    for tier in TIERS:
        module = getattr(sy, tier)
        lines.append(
            f"| [`sy.{tier}`](#sy{tier}) | `sy.{tier}.X` | {_first_sentence(module)} "
            f"({len(module.__all__)} names). |"
        )
    return [*lines, ""]


def _moved_table() -> list[str]:
    lines = [
        "Old spellings: these names left the top level. Each still works for one release, as the",
        "same object, with a `DeprecationWarning` naming its new home.",
        "",
        "| Old spelling | New home |",
        "| --- | --- |",
    ]
    for name, tier in sorted(sy._MOVED.items(), key=lambda item: (item[1], item[0].lower())):
        lines.append(f"| `sy.{name}` | `sy.{tier}.{name}` |")
    return [*lines, ""]


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Everything sykit exports (`import sykit as sy`), tier by tier: the core at the top level",
        "(`sy.run`, `sy.Request`, ...), then each public sub-module (`sy.traffic.Poisson`,",
        "`sy.dists.LogNormal`, ...). Generated from the docstrings by `docs/make_reference.py`.",
        "",
        *_tier_table(),
        *_moved_table(),
    ]
    canonical = _spellings()
    listed = [name for _, names in CORE_SECTIONS for name in names]
    if sorted(listed) != sorted(sy.__all__):
        raise SystemExit(
            "CORE_SECTIONS must list every name of sy.__all__ once: "
            f"missing {sorted(set(sy.__all__) - set(listed))}, "
            f"not core {sorted(set(listed) - set(sy.__all__))}"
        )
    public = {n for n, v in vars(sy).items() if isinstance(v, types.ModuleType) and n[0] != "_"}
    if set(TIERS) != public:
        raise SystemExit(f"TIERS must list every public sub-module: {sorted(public)}")
    for title, names in CORE_SECTIONS:
        lines += [f"## Core: {title}", ""]
        lines += _entries("sy.", names, sy, canonical)
    for tier in TIERS:
        module = getattr(sy, tier)
        lines += [f"## `sy.{tier}`", "", _doc(module), ""]
        lines += _entries(f"sy.{tier}.", list(module.__all__), module, canonical)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT}\n")
