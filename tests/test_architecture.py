"""The package's layering: no import circle in torchlint/, the walk imports no rule and
no verify code, analyses import neither the walk nor rules, and rules share one binding API."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "torchlint"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Every torchlint module -> the torchlint modules it imports anywhere in its body
    (top level, under TYPE_CHECKING, or inside a function)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as a list of modules, or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return []


def test_find_cycle_detects_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_package():
    cycle = find_cycle(import_graph())
    assert not cycle, "import circle: " + " -> ".join(cycle)


def test_the_walk_imports_no_rule_and_no_verify_code():
    imported = import_graph()["torchlint.checker"]
    assert not {m for m in imported if m.startswith(("torchlint.rules", "torchlint.verify"))}, imported


def test_analyses_import_neither_the_walk_nor_rules():
    for name, imported in import_graph().items():
        if name.startswith("torchlint.analysis"):
            bad = {m for m in imported if m.startswith(("torchlint.rules", "torchlint.checker", "torchlint.verify"))}
            assert not bad, f"{name} imports {bad}"


def test_rules_use_the_binding_api_not_their_own_lookups():
    """`ctx.assignments()` is the model's internal table; rules ask `binding_before`,
    `value_before` or `bindings_reaching` so that scoping is decided in one place."""
    for path in (PACKAGE / "rules").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert ".assignments(" not in text and "last_before(" not in text, path.name
