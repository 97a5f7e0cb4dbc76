"""The package's shape: no import cycles, a light command line, and modules of a readable size."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sim", "policies")
#: Past this many lines a module's opening docstring must say why it is one module.
LONG = 500


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _module_level_imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of ours imported when ``name`` is imported: top-level statements only (imports inside functions
    run later, and ``if TYPE_CHECKING:`` blocks never)."""
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(sub, ast.Import):
                targets = [a.name for a in sub.names]
            elif isinstance(sub, ast.ImportFrom):
                base = sub.module or ""
                if sub.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - sub.level + 1] + [base]).strip(".")
                targets = [f"{base}.{a.name}" for a in sub.names] + [base]
            else:
                continue
            out.update(t for t in targets if t in known)
    out.discard(name)
    return out


def test_no_import_cycles() -> None:
    mods = _modules()
    graph = {name: _module_level_imports(path, name, set(mods)) for name, path in mods.items()}
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
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from pkg import b\n")
    b.write_text("import pkg.a\nif TYPE_CHECKING:\n    import pkg.c\n")
    assert _module_level_imports(a, "pkg.a", {"pkg.a", "pkg.b", "pkg.c"}) == {"pkg.b"}
    assert _module_level_imports(b, "pkg.b", {"pkg.a", "pkg.b", "pkg.c"}) == {"pkg.a"}


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


def test_long_modules_say_why_they_are_one_module() -> None:
    unexplained = []
    for name, path in sorted(_modules().items()):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "One module because" not in "\n".join(doc.splitlines()[:8]):  # at the top, where a reader looks
            unexplained.append(f"{name} ({text.count(chr(10))} lines)")
    assert not unexplained, "over 500 lines without 'One module because ...' atop the docstring: " + ", ".join(
        unexplained
    )
