"""The layer rules of docs/architecture.md, checked on the source itself."""

import ast
from collections import defaultdict
from pathlib import Path

import realgap
from realgap.sim.tasks import TASKS

SOURCE = Path(realgap.__file__).parent


def _modules():
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        # The unit a layer rule talks about: a sub-package, or a top-level module.
        unit = parts[0] if parts[0] != "__init__" else "realgap"
        yield path, unit, ast.parse(path.read_text(), str(path))


def _imports(tree):
    """Every ``realgap`` import anywhere in the file, lazy ones (inside functions) too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("realgap"):
            names = [alias.name for alias in node.names]
            if node.module == "realgap":  # `from realgap import runs` imports a module
                for name in names:
                    yield f"realgap.{name}", [], node.lineno
            else:
                yield node.module, names, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("realgap"):
                    yield alias.name, [], node.lineno


def _graph():
    edges = defaultdict(set)
    for path, unit, tree in _modules():
        for module, _, line in _imports(tree):
            parts = module.split(".")
            target = parts[1] if len(parts) > 1 else "realgap"
            if target != unit and target != "realgap":
                edges[unit].add((target, f"{path.relative_to(SOURCE)}:{line}"))
    return edges


def _cycles(edges) -> list[list[str]]:
    graph = {unit: {target for target, _ in targets} for unit, targets in edges.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(unit):
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        on_stack.add(unit)
        for target in graph.get(unit, ()):
            if target not in index:
                visit(target)
                low[unit] = min(low[unit], low[target])
            elif target in on_stack:
                low[unit] = min(low[unit], index[target])
        if low[unit] == index[unit]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == unit:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for unit in list(graph):
        if unit not in index:
            visit(unit)
    return found


def test_no_package_level_import_cycle_lazy_imports_included():
    edges = _graph()
    cycles = _cycles(edges)
    where = {
        tuple(cycle): sorted(
            line for unit in cycle for target, line in edges[unit] if target in cycle
        )
        for cycle in cycles
    }
    assert not cycles, f"import cycles between packages: {where}"


def test_the_cycle_check_can_fail():
    edges = {"a": {("b", "a.py:1")}, "b": {("c", "b.py:1")}, "c": {("a", "c.py:1")}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_the_library_never_imports_the_cli():
    offenders = [line for unit, targets in _graph().items() if unit != "cli"
                 for target, line in targets if target == "cli"]  # fmt: skip
    assert not offenders


def test_the_bottom_modules_import_nothing_of_realgap_above_them():
    edges = _graph()
    bottom = {"errors"}
    assert {target for target, _ in edges.get("errors", ())} == set()
    assert {target for target, _ in edges.get("policy_io", ())} <= bottom
    assert {target for target, _ in edges.get("runs", ())} <= bottom
    assert {target for target, _ in edges.get("speed", ())} <= bottom
    assert {target for target, _ in edges["sim"]} <= {"policy_io", "speed", *bottom}


def test_no_private_name_imported_across_modules():
    private = [
        f"{path.relative_to(SOURCE)}:{line} imports {name} from {module}"
        for path, _, tree in _modules()
        for module, names, line in _imports(tree)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not private


def test_no_task_name_checks_outside_the_tasks():
    """Tasks own their knowledge: nothing compares a task name to decide behaviour."""
    found = []
    for path, _, tree in _modules():
        if path.is_relative_to(SOURCE / "sim" / "tasks"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    if isinstance(operand, ast.Constant) and operand.value in TASKS:
                        found.append(f"{path.relative_to(SOURCE)}:{node.lineno}")
    assert not found
