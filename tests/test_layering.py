"""How sykit's modules depend on one another, read from their source (no import is run).

(a) No import cycles. An import counts whether it runs when the module loads or when a function
runs (a function-level import only defers the cycle); an import under ``if TYPE_CHECKING:`` does
not count, as it never runs. The one circle allowed is the plotting accessor's, as xarray has it:
``Result.plot`` / ``Comparison.plot`` import ``sykit._viz`` inside the accessor, and ``sykit._viz``
names ``Result`` and ``Comparison`` for type checkers only.

(b) Only the engines (``sykit/_run/engines/``) know which engine runs: no other module compares an
engine's name or refers to an engine's classes.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sykit"
ENGINES = PACKAGE / "_run" / "engines"

#: The plotting accessor's circle (see the module docstring): these modules may import one another,
#: provided ``sykit._results.result`` imports ``sykit._viz`` only inside functions.
ACCESSOR = "sykit._results.result"
ACCESSOR_TARGET = "sykit._viz"

ENGINE_NAMES = frozenset({"kernel", "asyncio"})
ENGINE_CLASSES = frozenset(
    {
        "KernelBackend",
        "AsyncioBackend",
        "KernelEngine",
        "AsyncioEngine",
        "Kernel",
        "KTask",
        "NeedsAsyncio",
        "VirtualTimeLoop",
    }
)
#: The engines' own modules: above the package only the package and its contract are imported.
ENGINE_MODULES = frozenset({"kernel", "aio", "loop"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = _sources()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    lazy: bool  # inside a function: runs when the function does
    typed: bool = False  # under ``if TYPE_CHECKING:``: never runs


def _walk(
    node: ast.AST, *, lazy: bool = False, typed: bool = False, typing_blocks: bool = False
) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every node under ``node`` with whether it runs only inside a function and whether it sits
    under ``if TYPE_CHECKING:``; those bodies are left out unless ``typing_blocks`` (their ``else``
    runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            if typing_blocks:
                for other in child.body:
                    yield other, lazy, True
                    yield from _walk(other, lazy=lazy, typed=True, typing_blocks=True)
            for other in child.orelse:
                yield other, lazy, typed
                yield from _walk(other, lazy=lazy, typed=typed, typing_blocks=typing_blocks)
            continue
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield child, lazy, typed
        yield from _walk(child, lazy=inner, typed=typed, typing_blocks=typing_blocks)


def _resolve(module: str, node: ast.ImportFrom, modules: dict[str, Path]) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    is_package = modules[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(
    module: str, modules: dict[str, Path] | None = None, *, typing_blocks: bool = False
) -> list[Import]:
    """The sykit modules ``module`` imports (``from x import y`` counts y when y is a module);
    with ``typing_blocks``, the imports under ``if TYPE_CHECKING:`` too (marked ``typed``)."""
    modules = MODULES if modules is None else modules
    tree = ast.parse(modules[module].read_text(), filename=str(modules[module]))
    found: list[Import] = []
    for node, lazy, typed in _walk(tree, typing_blocks=typing_blocks):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node, modules)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                targets.append(submodule if submodule in modules else source)
        for target in dict.fromkeys(targets):
            if target in modules and target != module:
                found.append(Import(target, node.lineno, lazy, typed))  # type: ignore[attr-defined]
    return found


def import_graph() -> dict[str, dict[str, list[Import]]]:
    graph: dict[str, dict[str, list[Import]]] = {}
    for module in MODULES:
        edges: dict[str, list[Import]] = {}
        for imp in imports_of(module):
            edges.setdefault(imp.target, []).append(imp)
        graph[module] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, list[Import]]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:
        nonlocal counter
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(components)


def _cycle_in(component: list[str], graph: dict[str, dict[str, list[Import]]]) -> list[str]:
    """One circle through the component's first module, for the failure message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node]):
            if child == start:
                return [*paths[node], start]
            if child in members and child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    return component


def _describe(path: list[str], graph: dict[str, dict[str, list[Import]]]) -> str:
    hops = []
    for a, b in itertools.pairwise(path):
        imp = graph[a][b][0]
        hops.append(f"{a} -> {b} (line {imp.line}{', in a function' if imp.lazy else ''})")
    return "; ".join(hops)


def _is_accessor_circle(component: list[str], graph: dict[str, dict[str, list[Import]]]) -> bool:
    members = set(component)
    viz = {m for m in members if m == ACCESSOR_TARGET or m.startswith(ACCESSOR_TARGET + ".")}
    if members != viz | {ACCESSOR}:
        return False
    return all(imp.lazy for target in viz for imp in graph[ACCESSOR].get(target, []))


def test_no_import_cycles_but_the_plot_accessors():
    graph = import_graph()
    cycles = [c for c in strongly_connected(graph) if not _is_accessor_circle(c, graph)]
    assert not cycles, "import cycles:\n" + "\n".join(
        f"  {', '.join(c)}\n    e.g. {_describe(_cycle_in(c, graph), graph)}" for c in cycles
    )


def test_the_plot_accessor_imports_plotting_lazily_and_plotting_types_results_only():
    graph = import_graph()
    eager = [
        f"{ACCESSOR} line {imp.line}"
        for target, imps in graph[ACCESSOR].items()
        if target.startswith(ACCESSOR_TARGET)
        for imp in imps
        if not imp.lazy
    ]
    assert not eager, f"import sykit._viz inside the accessor, not at module level: {eager}"
    # what the accessor loads: the plotting package and the modules it imports
    loaded, queue = {ACCESSOR_TARGET}, [ACCESSOR_TARGET]
    while queue:
        for target in graph[queue.pop()]:
            if target.startswith(ACCESSOR_TARGET) and target not in loaded:
                loaded.add(target)
                queue.append(target)
    typed = [
        f"{module} line {imp.line}"
        for module in sorted(loaded)
        for imp in graph[module].get(ACCESSOR, [])
    ]
    assert not typed, (
        f"what the accessor loads may import sykit._results.result for types only: {typed}"
    )


def test_the_graph_sees_imports_of_every_kind():
    """The reader itself: relative, absolute and function-level imports count; TYPE_CHECKING ones
    do not."""
    strategies = {imp.target: imp for imp in imports_of("sykit.strategies")}
    assert (
        "sykit.strategies._litellm" in strategies
        and not strategies["sykit.strategies._litellm"].lazy
    )
    results = {imp.target: imp for imp in imports_of("sykit._results.result")}
    assert results["sykit._viz"].lazy
    accessors = {imp.target for imp in imports_of("sykit._viz.accessors")}
    assert "sykit._results.result" not in accessors  # typed under TYPE_CHECKING only
    assert "sykit.strategies" in {imp.target for imp in imports_of("sykit")}


# -- (b) only the engines know which engine runs ---------------------------------------------------


def _string_constants(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {v for elt in node.elts for v in _string_constants(elt)}
    return set()


def engine_branches(source: str, where: str) -> list[str]:
    """Where ``source`` compares against an engine's name or refers to an engine's class."""
    tree = ast.parse(source, filename=where)
    found = []
    for node, _, _ in _walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            names = set().union(*map(_string_constants, [node.left, *node.comparators]))
            if names & ENGINE_NAMES:
                found.append(f"{where}:{line}: compares with {sorted(names & ENGINE_NAMES)}")
        elif isinstance(node, ast.MatchValue):
            names = _string_constants(node.value) & ENGINE_NAMES
            if names:
                found.append(f"{where}:{line}: matches {sorted(names)}")
        elif isinstance(node, ast.Name) and node.id in ENGINE_CLASSES:
            found.append(f"{where}:{line}: refers to {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in ENGINE_CLASSES:
            found.append(f"{where}:{line}: refers to .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            names = {alias.name for alias in node.names} & ENGINE_CLASSES
            if names:
                found.append(f"{where}:{line}: imports {sorted(names)}")
            module = (node.module or "").split(".")
            inner = (
                {alias.name for alias in node.names}
                if module[-2:] == ["_run", "engines"]
                else set()
            )
            if module[:-1][-2:] == ["_run", "engines"] and module[-1] in ENGINE_MODULES:
                found.append(f"{where}:{line}: imports the engine module {node.module}")
            elif inner & ENGINE_MODULES:
                found.append(f"{where}:{line}: imports the engine modules {sorted(inner)}")
    return found


def test_only_the_engines_branch_on_which_engine_runs():
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if ENGINES not in p.parents]
    found = [
        hit
        for path in outside
        for hit in engine_branches(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    ]
    assert not found, "engine-specific code outside sykit/_run/engines/:\n" + "\n".join(
        f"  {hit}" for hit in found
    )


def test_the_engines_package_chooses_the_fast_path_and_the_bulk_evaluator():
    """The plan hands the engines package its run; the fast path, the bulk evaluator and the choice
    between them are imported inside that package alone (the plan imports only the choice)."""
    graph = import_graph()
    inside = "sykit._run.engines."
    chosen = ("sykit._run.engines.bulk", "sykit._run.engines.fastpath")
    found = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if (target.startswith(chosen) and not module.startswith(inside))
        or (target == "sykit._run.engines.choice" and module != "sykit._run.plan")
    ]
    assert not found, "\n".join(found)
    assert "sykit._run.engines.choice" in graph["sykit._run.plan"]


@pytest.mark.parametrize(
    ("source", "hits"),
    [
        ("if backend.name == 'kernel': pass", 1),
        ("ok = isinstance(b, AsyncioBackend)", 1),
        ("ok = type(b) is sched.KernelBackend", 1),
        ("from sykit._run.engines import Kernel", 1),
        ("if engine in ('kernel', 'asyncio'): pass", 1),
        ("match engine:\n    case 'asyncio': pass\n", 1),
        ("if TYPE_CHECKING:\n    from ._kernel import Kernel\n", 0),
        ("from sykit._run.engines.kernel import sleep", 1),
        ("from sykit._run.engines import aio", 1),
        ("from sykit._run.engines.base import Engine", 0),
        ("from sykit._run.engines import Engine, simulate", 0),
        ("anyio.run(main, backend='asyncio')", 0),
        ("if mode == 'fast': pass", 0),
    ],
)
def test_the_engine_check_sees_what_it_should(source, hits):
    found = engine_branches(source, "probe.py")
    assert len(found) == hits, found


# -- (c) the packages: one way down ----------------------------------------------------------------
#
# Each top-level module or package of sykit is one room. A room imports only the rooms listed for
# it here (imports inside functions count; imports for type checkers only do not, and may point
# anywhere). The one exception is the plot accessor's circle above: ``_results`` reaches ``_viz``
# inside the accessor. Lowest first; a package's docstring says the same.
MAY_IMPORT: dict[str, set[str]] = {
    "_base": set(),
    "_world": {"_base"},
    "_hosts": {"_base", "_world"},
    "datasets": {"_base", "_world"},
    "_results": {"_base", "_world"},  # and _viz in the plot accessor
    "_viz": {"_base", "_world", "_results"},
    "_run": {"_base", "_world", "_hosts", "_results", "datasets"},
    "testing": {"_base", "_world", "_hosts"},
    "sessions": {"_base", "_world", "_results", "_run", "_viz"},
    "failoverbench": {"_base", "_world", "_hosts", "_results", "_run", "testing"},
    "strategies": {"_base", "_world", "_run", "sessions"},
    "_grid": {"_base", "_world", "_hosts", "_results", "_run", "_viz", "strategies"},
    "_fitting": {"_base", "_world", "_hosts", "_run", "_grid", "strategies"},
    "profiles": {"_base", "_world", "_fitting"},
    "_playground": {"_base", "_world", "_hosts", "_results", "_viz", "_grid", "strategies"},
    "learn": {
        "_base",
        "_world",
        "_hosts",
        "_results",
        "_run",
        "_grid",
        "datasets",
        "profiles",
        "strategies",
    },
    "widgets": {"_playground"},
    "faults": {"_world", "failoverbench", "profiles"},
    "_cli": {
        "_base",
        "_world",
        "_hosts",
        "_results",
        "_run",
        "_grid",
        "_viz",
        "datasets",
        "learn",
        "profiles",
        "strategies",
    },
    "__main__": {"_cli"},
    # the public tiers: each re-exports names from the rooms below
    "dists": {"_world"},
    "errors": {"_base", "_world", "_results", "_run"},
    "traffic": {"_world", "_viz", "datasets"},
}
#: The top-level ``sykit/__init__.py`` gathers the public names: it may import any room.
TOP = "__init__"
#: Bars on the shape of the house.
MAX_TOP_MODULES = 15
MAX_LEVELS = 12
MAX_EDGES = 150


def room_of(module: str) -> str:
    """The room a module sits in: its top-level module or package under ``sykit``."""
    parts = module.split(".")
    return TOP if len(parts) == 1 else parts[1]


@dataclass
class Layout:
    """The package graph: rooms, the imports between them, and each room's level."""

    rooms: list[str]
    top_modules: list[str]
    runtime: dict[tuple[str, str], list[tuple[str, Import]]]
    typed: dict[tuple[str, str], list[tuple[str, Import]]]
    levels: dict[str, int]
    cycles: list[list[str]]

    @property
    def edges(self) -> set[tuple[str, str]]:
        """Every pair of rooms with an import between them, of any kind."""
        return set(self.runtime) | set(self.typed)

    def upward(self) -> list[tuple[str, str, str]]:
        """Edges from a lower level to a higher one (or within one level), with their kind."""
        found = []
        for (a, b), imps in sorted({**self.typed, **self.runtime}.items()):
            if self.levels[b] >= self.levels[a] and not any(a in c and b in c for c in self.cycles):
                kinds = {"type-only" if i.typed else "accessor" for _, i in imps}
                found.append((a, b, "/".join(sorted(kinds))))
        return found


def _is_accessor_edge(module: str, imp: Import) -> bool:
    return (
        module == ACCESSOR
        and imp.lazy
        and (imp.target == ACCESSOR_TARGET or imp.target.startswith(ACCESSOR_TARGET + "."))
    )


def package_layout(package: Path = PACKAGE) -> Layout:
    """Read the package graph of the sykit package at ``package`` (no import is run)."""
    modules = {
        ".".join(
            [p for p in path.relative_to(package.parent).with_suffix("").parts if p != "__init__"]
        ): path
        for path in sorted(package.rglob("*.py"))
    }
    runtime: dict[tuple[str, str], list[tuple[str, Import]]] = {}
    typed: dict[tuple[str, str], list[tuple[str, Import]]] = {}
    for module in modules:
        for imp in imports_of(module, modules, typing_blocks=True):
            a, b = room_of(module), room_of(imp.target)
            if a == b:
                continue
            kind = typed if imp.typed or _is_accessor_edge(module, imp) else runtime
            kind.setdefault((a, b), []).append((module, imp))
    rooms = sorted({room_of(m) for m in modules})
    graph = {r: {b: [] for (a, b) in runtime if a == r} for r in rooms}
    cycles = strongly_connected(graph)  # type: ignore[arg-type]
    # a circle of rooms counts as one floor, so a tangled house can be measured too
    floor = {r: r for r in rooms} | {r: c[0] for c in cycles for r in c}
    below = {
        f: {floor[b] for r in rooms if floor[r] == f for b in graph[r]} - {f}
        for f in floor.values()
    }
    memo: dict[str, int] = {}

    def level(f: str) -> int:
        if f not in memo:
            memo[f] = 1 + max((level(b) for b in below[f]), default=0)
        return memo[f]

    levels = {r: level(floor[r]) for r in rooms}
    top_modules = sorted(p.name for p in package.glob("*.py") if p.name != "__init__.py")
    return Layout(rooms, top_modules, runtime, typed, levels, cycles)


def figures(layout: Layout) -> str:
    """The figures the layout's bars are about, as text."""
    lines = [
        f"rooms: {len(layout.rooms)} ({len(layout.top_modules)} top-level modules beside the "
        f"packages: {', '.join(layout.top_modules)})",
        f"levels: {max(layout.levels.values())}"
        + "".join(f"; circle of rooms (one level): {', '.join(c)}" for c in layout.cycles),
        f"import edges between rooms: {len(layout.edges)} ({len(layout.runtime)} that run, "
        f"{len(set(layout.typed) - set(layout.runtime))} for type checkers or the plot accessor "
        "only)",
    ]
    for lv in sorted(set(layout.levels.values())):
        rooms = [r for r in layout.rooms if layout.levels[r] == lv]
        lines.append(f"  level {lv:2}: {', '.join(rooms)}")
    upward = layout.upward()
    lines.append(f"edges that do not run downward: {len(upward)}")
    lines += [f"  {a} -> {b} ({kind})" for a, b, kind in upward]
    return "\n".join(lines)


LAYOUT = package_layout()


def test_every_room_has_its_rules():
    unknown = sorted(set(LAYOUT.rooms) - set(MAY_IMPORT) - {TOP})
    assert not unknown, f"rooms without a line in MAY_IMPORT (say what they may import): {unknown}"


def test_each_room_imports_only_the_rooms_below_it():
    broken = [
        f"{module} imports {imp.target} (line {imp.line}): {a} may import only "
        f"{sorted(MAY_IMPORT[a])}"
        for (a, b), imps in sorted(LAYOUT.runtime.items())
        if a != TOP and b not in MAY_IMPORT.get(a, set())
        for module, imp in imps[:1]
    ]
    assert not broken, "\n".join(broken)


def test_the_rules_themselves_run_one_way():
    graph = {room: {b: [] for b in MAY_IMPORT[room]} for room in MAY_IMPORT}
    assert not strongly_connected(graph)  # type: ignore[arg-type]


def test_each_package_says_what_it_may_import():
    """A package's docstring names the rooms it may import, as MAY_IMPORT does."""
    wrong = []
    for room in sorted(MAY_IMPORT):
        init = PACKAGE / room / "__init__.py"
        if not init.exists():
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        said = doc.partition("May import:")[2]
        assert said, f"sykit/{room}/__init__.py: the docstring says nothing of what it may import"
        named = set(re.findall(r"sykit\.(\w+)", said)) - {"__init__"}
        if room == "_results":
            named.discard(ACCESSOR_TARGET.split(".")[1])  # the plot accessor, named as such
        if named and named != MAY_IMPORT[room]:
            wrong.append(f"{room}: docstring {sorted(named)}, rules {sorted(MAY_IMPORT[room])}")
    assert not wrong, "\n".join(wrong)


def test_the_house_keeps_its_bars():
    assert not LAYOUT.cycles, figures(LAYOUT)
    assert len(LAYOUT.top_modules) <= MAX_TOP_MODULES, figures(LAYOUT)
    assert max(LAYOUT.levels.values()) <= MAX_LEVELS, figures(LAYOUT)
    assert len(LAYOUT.edges) <= MAX_EDGES, figures(LAYOUT)
    assert all(kind in {"type-only", "accessor"} for *_, kind in LAYOUT.upward()), figures(LAYOUT)


def test_the_package_graph_sees_what_it_should(tmp_path):
    """A made-up package: a room cycle across modules, a type-only edge up, a lazy accessor."""
    root = tmp_path / "sykit"
    for rel, text in {
        "__init__.py": "from sykit import a\n",
        "a/__init__.py": "",
        "a/x.py": "from sykit.b.y import f\n",
        "b/__init__.py": "",
        "b/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sykit.c import z\n",
        "c.py": "from sykit.a import x\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    layout = package_layout(root)
    assert layout.levels == {"b": 1, "a": 2, "c": 3, TOP: 3}
    assert layout.upward() == [("b", "c", "type-only")]
    assert len(layout.edges) == 4
    (root / "b" / "y.py").write_text("from sykit.c import z\n")
    assert package_layout(root).cycles == [["a", "b", "c"]]


if __name__ == "__main__":  # python tests/test_layering.py [path/to/sykit]: print the figures
    import sys

    print(figures(package_layout(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE)))
