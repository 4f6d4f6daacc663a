"""Package ``__init__`` modules export their names lazily (``loopwright/core/lazy.py``):
``import loopwright`` loads no loop, tool or provider module, every exported name still
resolves to the object its module defines, and what type checkers read (the
``if TYPE_CHECKING:`` imports) is exactly what the lazy table serves."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import loopwright

SRC = Path(loopwright.__file__).resolve().parent


def _lazy_packages() -> list[str]:
    found = []
    for init in sorted(SRC.rglob("__init__.py")):
        if "lazy_exports(" in init.read_text(encoding="utf-8"):
            parts = init.parent.relative_to(SRC.parent).parts
            found.append(".".join(parts))
    return found


PACKAGES = _lazy_packages()


def _table(package: str) -> tuple[dict[str, str], set[str]]:
    """(name -> module from the lazy table, names imported under TYPE_CHECKING)."""
    tree = ast.parse((SRC.parent / package.replace(".", "/") / "__init__.py").read_text())
    table: dict[str, str] = {}
    checked: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                checked.update(a.name for a in imp.names)
        call = node.value if isinstance(node, ast.Assign) else None
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "lazy_exports":
            for module, names in ast.literal_eval(call.args[1]).items():
                for name in names:
                    table[name] = module
    return table, checked


def test_the_lazy_packages_are_found() -> None:
    assert {"loopwright", "loopwright.core", "loopwright.tools", "loopwright.graph"} <= set(
        PACKAGES
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_to_its_modules_object(package: str) -> None:
    table, checked = _table(package)
    assert table, package
    # type checkers see every lazily served name (the block may also import names
    # used only in annotations); every exported name imported there is served
    assert set(table) <= checked, f"{package}: lazy names missing under TYPE_CHECKING"
    module = importlib.import_module(package)
    exported = set(getattr(module, "__all__", ()))
    assert checked & exported <= set(table), f"{package}: exported names not in the table"
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    for name, source in table.items():
        # an exported name equal to a submodule's would be shadowed by that submodule
        assert name not in submodules, f"{package}.{name} is also a submodule: keep it eager"
        assert getattr(module, name) is getattr(importlib.import_module(source), name)
    for name in getattr(module, "__all__", ()):
        assert hasattr(module, name), f"{package}.__all__ names {name!r}, which is missing"
    assert set(table) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018


def test_import_loopwright_loads_no_loop_tool_or_provider_module() -> None:
    code = (
        "import json, sys; import loopwright; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('loopwright'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert loaded == {"loopwright", "loopwright.core", "loopwright.core.lazy"}, loaded


def test_a_facade_name_used_first_loads_what_it_needs() -> None:
    code = (
        "import loopwright as lw; "
        "print(lw.run(lw.ScriptedModel(['hi']), 'x').answer, lw.tool.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["hi", "loopwright.tools.decorator"]
