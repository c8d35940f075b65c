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


def _walk(node: ast.AST, *, lazy: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under ``node`` that runs, with whether it runs only inside a function; the bodies
    of ``if TYPE_CHECKING:`` are left out (their ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other, lazy
                yield from _walk(other, lazy=lazy)
            continue
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield child, lazy
        yield from _walk(child, lazy=inner)


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> list[Import]:
    """The sykit modules ``module`` imports (``from x import y`` counts y when y is a module)."""
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    found: list[Import] = []
    for node, lazy in _walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                targets.append(submodule if submodule in MODULES else source)
        for target in dict.fromkeys(targets):
            if target in MODULES and target != module:
                found.append(Import(target, node.lineno, lazy))  # type: ignore[attr-defined]
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
    for node, _ in _walk(tree):
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
            inner = {alias.name for alias in node.names} if module[-2:] == ["_run", "engines"] else set()
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
