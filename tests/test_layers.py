"""The package's layers: every import runs down the layer order, and no module imports itself back.

Data flows one way (README, "Layout"): ads come in (``ads``, ``feed``), become a pool snapshot
(``pool``), a cycle negotiates it (``cycle``, asking ``evaluation``'s protocol, answered by
``fastpath``), and what it decided is published (``publish``) and charged (``accountant``). The
ClassAd language (``classad``) is at the bottom; the daemon (``service``) and the command line at
the top. The test reads the source with ``ast``, so it also sees imports inside functions and
under ``TYPE_CHECKING``: a lazy import is still a dependency, and so is a type-only one for the
layer order. A type-only import runs nothing, so it cannot close an import cycle: the cycle check
leaves it out (the daemon's HTTP routes name the ``Daemon`` class they are handed).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "negotiatord"

# Lowest first. A part may import from its own layer's other parts only where noted below, and
# from any lower layer; never from a higher one.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("classad", "logs", "storage"),
    ("cedar",),
    ("settings", "ads"),
    ("pool",),
    ("evaluation", "accountant"),
    ("fastpath", "cycle"),
    ("schedds",),
    ("feed",),
    ("publish", "runtime"),
    ("replay",),
    ("service",),
    ("commands",),
    ("cli",),
    ("__main__",),
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("negotiatord", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _type_only(tree: ast.Module) -> set[ast.AST]:
    """The import statements under ``if TYPE_CHECKING:``."""
    return {
        node for block in ast.walk(tree)
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for statement in block.body for node in ast.walk(statement)
    }


def _imports(module: str, path: Path, *, type_only: bool = True) -> Iterator[str]:
    """The negotiatord modules ``module`` imports, resolved to submodules where one is named;
    with ``type_only`` False, those under ``TYPE_CHECKING`` are left out."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    skipped = set() if type_only else _type_only(tree)
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [(base, alias.name) for alias in node.names]
        else:
            continue
        for base, name in targets:
            if not base.startswith("negotiatord"):
                continue
            submodule = f"{base}.{name}" if name else None
            if submodule in MODULES:
                yield submodule
                base_is_ancestor = module == base or module.startswith(base + ".")
                if base != "negotiatord" and not base_is_ancestor:
                    yield base
            elif base in MODULES and base != "negotiatord":
                yield base


def _part(module: str) -> str:
    """The subpackage (or top-level module) of ``negotiatord`` that ``module`` belongs to."""
    return module.split(".")[1] if "." in module else ""


GRAPH = {module: set(_imports(module, path)) - {module} for module, path in MODULES.items()}
RUNNING_GRAPH = {module: set(_imports(module, path, type_only=False)) - {module}
                 for module, path in MODULES.items()}


def test_every_part_has_a_layer() -> None:
    parts = {_part(module) for module in MODULES if module != "negotiatord"}
    assert parts <= set(RANK), f"parts with no layer: {sorted(parts - set(RANK))}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "negotiatord"))
def test_imports_run_down_the_layers(module: str) -> None:
    upward = sorted(
        target for target in GRAPH[module]
        if _part(target) != _part(module) and RANK[_part(target)] >= RANK[_part(module)]
    )
    assert not upward, f"{module} imports from its own or a higher layer: {upward}"


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the graph's cycles, each as the set of modules in it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return components


def test_no_module_imports_itself_back() -> None:
    assert _strongly_connected(RUNNING_GRAPH) == []


def test_the_cycle_does_not_choose_its_evaluator() -> None:
    """The cycle asks the ``evaluation`` protocol; its caller hands it the fast path."""
    cycle_imports = {target for module in MODULES if _part(module) == "cycle" for target in GRAPH[module]}
    assert not {target for target in cycle_imports if _part(target) == "fastpath"}


def test_the_cycle_touches_no_process_wide_switch() -> None:
    """No ``gc`` (or other interpreter switch) in the cycle: the caller owns the process."""
    for module, path in MODULES.items():
        if module == "negotiatord" or _part(module) != "cycle":
            continue
        names = {alias.name for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
        modules = {node.module for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.ImportFrom)}
        assert not ({"gc", "sys", "signal"} & (names | modules)), module


def test_the_graph_finds_a_planted_cycle() -> None:
    """The cycle finder is itself checked: a three-module loop and a self-contained chain."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _strongly_connected(graph) == [["a", "b", "c"]]
