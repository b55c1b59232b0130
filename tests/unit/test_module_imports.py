"""Where ragjudge imports its own modules (issue 46 item 4): at the top of a module, so that who
uses whom is read from the first lines; inside a function only the modules of ours that load a
heavy library at their top (pandas, pyarrow, MLflow), so that ``ragjudge --help`` and
``import ragjudge`` stay light."""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path

from helpers import HEAVY_OF

PACKAGE = Path(__file__).resolve().parents[2] / "ragjudge"
HEAVY = ("pandas", "pyarrow", "litellm", "mlflow", "ray", "matplotlib", "xllamacpp")
# ours imported inside functions because they load a heavy library: helpers.HEAVY_OF (each is checked
# to load it: tests/test_startup.py)
LAZY_OURS = tuple(HEAVY_OF)


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _io_home(name: str) -> str:
    from ragjudge.io import _HOME

    return _HOME.get(name, name)


def _parse(text: str) -> ast.Module:
    """``ast.parse``, once more where CPython 3.11 before 3.11.8 raised "AST constructor recursion depth
    mismatch": it kept one AST recursion counter for the whole interpreter, so a parse in another
    thread at the same moment (one an earlier test left running) threw it off (gh-106905; the CI
    machine's Python is 3.11.7). A parse that fails five times in a row is raised."""
    for attempt in range(5):
        try:
            return ast.parse(text)
        except SystemError:
            if attempt == 4:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def own_imports_in_functions() -> list[tuple[str, int, str]]:
    """(file, line, module) of every import of a ragjudge module inside a function, relative
    imports resolved; ``from ragjudge import io`` names ``ragjudge.io``, ``from ragjudge.io import
    read_table`` the module ``read_table`` comes from, ``ragjudge.io.readers``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for function in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                        base = ".".join([*parts, *([base] if base else [])])
                    if base == "ragjudge":
                        names = [f"ragjudge.{alias.name}" for alias in node.names]
                    elif base == "ragjudge.io":  # a name of the package: the module it comes from (``io._HOME``)
                        names = [f"ragjudge.io.{_io_home(alias.name)}" for alias in node.names]
                    else:
                        names = [base]
                else:
                    continue
                found += [(str(path.relative_to(PACKAGE.parent)), node.lineno, name) for name in names
                          if name == "ragjudge" or name.startswith("ragjudge.")]
    return found


def test_own_modules_are_imported_in_functions_only_where_they_load_a_heavy_library():
    found = own_imports_in_functions()
    assert any(name.startswith("ragjudge.io") for _, _, name in found)  # the scan sees the lazy imports there are
    # __main__ imports the command line inside console: a Ctrl-C during that import is one line and exit 130, not a traceback
    stray = [f"{where}:{line} imports {name}" for where, line, name in found
             if not name.startswith(LAZY_OURS) and (where, name) != ("ragjudge/__main__.py", "ragjudge.cli")]
    assert stray == [], "import these at the module's top:\n" + "\n".join(stray)


def test_the_scan_finds_an_import_inside_a_function(tmp_path, monkeypatch):
    package = tmp_path / "ragjudge"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "late.py").write_text("def f():\n    from . import gate\n    from ragjudge.io import read_table\n    import ragjudge.options\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert [(line, name) for _, line, name in own_imports_in_functions()] == [(2, "ragjudge.gate"), (3, "ragjudge.io.readers"), (4, "ragjudge.options")]


