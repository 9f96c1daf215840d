"""No two modules of Brain import each other, directly or round a loop, even lazily.

An import inside a function is still an import at run time: a cycle hidden that way (config
and the model providers once imported each other from function bodies) breaks as soon as the
order of first use changes. An import under `if TYPE_CHECKING:` counts too: it hides the same
knot from the interpreter, not from the reader (the client's Session and its cancelling send,
and Brain and its host server, once reached into each other's private parts that way).
`from package import module` counts as an import of that module, not of the package's
`__init__`.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_names(package: Path) -> dict[str, Path]:
    names = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that `name` imports anywhere in its body, for any purpose."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, node.module] if node.module else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(base)
    return (found & known) - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_brain_has_no_import_cycle() -> None:
    names = module_names(ROOT / "brain")
    graph = {name: imports_of(name, path, set(names)) for name, path in names.items()}
    assert sum(len(targets) for targets in graph.values()) > 100  # the walk saw the imports
    assert cycles(graph) == []


def cycles_of(package: Path, files: dict[str, str]) -> list[list[str]]:
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file, text in files.items():
        (package / file).write_text(text)
    names = module_names(package)
    return cycles({name: imports_of(name, path, set(names)) for name, path in names.items()})


def test_a_lazy_cycle_is_found(tmp_path: Path) -> None:
    assert cycles_of(tmp_path / "pkg", {
        "a.py": "from pkg.b import f\n",
        "b.py": "def f():\n    from pkg import a\n",
        "c.py": "from pkg import a\n",
    }) == [["pkg.a", "pkg.b"]]


def test_a_cycle_for_type_checkers_only_is_found(tmp_path: Path) -> None:
    assert cycles_of(tmp_path / "pkg", {
        "a.py": "from pkg.b import f\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
    }) == [["pkg.a", "pkg.b"]]
