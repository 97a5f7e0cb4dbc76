"""The package's shape: floors by what a module knows, no import cycles, a light command line, readable modules.

Every import between our modules is an edge, wherever it stands (a function-level import counts: it runs as
surely as one at the top, only later). Each module sits on a floor (``FLOORS``, the table of ``sim/__init__.py``
and the README) and imports only from floors below it or its own. Only the edge (``sim.api``, ``sim.cli``,
``sim.__main__``) may import inside a function, and only downward: it keeps ``csim --help`` light.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import sim

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "policies")
#: No module of ours over this many lines, the engine included: past it, a reader cannot hold what it says.
MAX_LINES = 600
#: Each package prefix and its floor (the longest prefix wins). ``sim`` itself (its version lookup) is floor 0.
FLOORS = {
    "sim": 0,
    "sim.core": 1,
    "policies": 2,
    "sim.formats": 2,
    "sim.scenarios": 2,
    "sim.replay": 3,
    "sim.calibration": 4,
    "sim.sweep": 5,
    "sim.api": 6,
    "sim.report": 7,
    "sim.cli": 8,
    "sim.__main__": 8,
}
#: Modules that may import lazily (inside a function), downward only.
EDGE = ("sim.api", "sim.cli", "sim.__main__")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def floor_of(module: str) -> int:
    best = max((p for p in FLOORS if module == p or module.startswith(p + ".")), key=len)
    return FLOORS[best]


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def imports_of(path: Path, name: str, known: set[str]) -> list[tuple[str, bool, int]]:
    """``(module, inside a function, line)`` for every import of one of ``known`` in the module ``name`` at
    ``path``; ``if TYPE_CHECKING:`` blocks never run, so they are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[str, bool, int]] = []

    def walk(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            deeper = inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((a.name, deeper, child.lineno) for a in child.names if a.name in known)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*up, base]).strip(".")
                names = [f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in known]
                out.extend((t, deeper, child.lineno) for t in (names or ([base] if base in known else [])))
            walk(child, deeper)

    walk(tree, False)
    return [x for x in out if x[0] != name]


def _graph() -> dict[str, list[tuple[str, bool, int]]]:
    mods = _modules()
    return {name: imports_of(path, name, set(mods)) for name, path in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def test_no_import_cycles_counting_function_level_imports() -> None:
    graph = {name: {t for t, _, _ in edges} for name, edges in _graph().items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_every_module_imports_only_from_its_floor_or_below() -> None:
    upward = [
        f"{name}:{line} imports {target} (floor {floor_of(name)} -> {floor_of(target)})"
        for name, edges in sorted(_graph().items())
        for target, _, line in edges
        if floor_of(target) > floor_of(name) and floor_of(name) != 0
    ]
    assert not upward, "imports from a higher floor:\n" + "\n".join(upward)


def test_only_the_edge_imports_inside_functions() -> None:
    lazy = [
        f"{name}:{line} imports {target} inside a function"
        for name, edges in sorted(_graph().items())
        for target, inside, line in edges
        if inside and not _in(name, EDGE) and name != "sim"
    ]
    assert not lazy, "function-level imports outside sim.api and sim.cli (move them to the top):\n" + "\n".join(lazy)


def test_the_layout_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from pkg import b\n")
    b.write_text("def f():\n    import pkg.a\nif TYPE_CHECKING:\n    import pkg.c\n")
    known = {"pkg.a", "pkg.b", "pkg.c"}
    assert imports_of(a, "pkg.a", known) == [("pkg.b", False, 1)]
    assert imports_of(b, "pkg.b", known) == [("pkg.a", True, 2)]  # a function-level import is an edge
    assert _cycles({"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert floor_of("sim.replay.engine") == 3 and floor_of("sim.core.view") == 1 and floor_of("sim.cli.main") == 8


@pytest.mark.parametrize("where", ["sim/__init__.py", "README.md"])
def test_the_floors_table_is_written_where_readers_look(where: str) -> None:
    text = (ROOT / where).read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    for prefix, floor in FLOORS.items():
        if prefix in ("sim", "sim.__main__"):
            continue
        folder = prefix.replace(".", "/") + ("/" if prefix not in ("sim.api",) else ".py")
        assert any(row.startswith(f"| {floor} |") and f"`{folder}" in row for row in rows), (
            f"{where}: no floors-table row '| {floor} | `{folder}...'"
        )
    assert sim.__doc__ is not None and "floor" in sim.__doc__


def test_the_command_line_starts_without_the_heavy_libraries() -> None:
    code = (
        "import sys\n"
        "from sim.cli.main import build_parser\n"
        "build_parser()\n"
        "from policies import POLICIES\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'pyarrow', 'matplotlib', 'dask', 'nbclient') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    long = [
        f"{name} ({n} lines)"
        for name, path in sorted(_modules().items())
        if (n := path.read_text(encoding="utf-8").count("\n")) > MAX_LINES
    ]
    assert not long, f"over {MAX_LINES} lines: " + ", ".join(long)
