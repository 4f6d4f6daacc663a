"""Lazy exports for package ``__init__`` modules (PEP 562).

A package lists what it re-exports and from which module; a name is imported the first
time it is looked up (``from loopwright.tools import tool`` or ``loopwright.tools.tool``),
then cached in the package so later lookups cost nothing. So ``import loopwright`` loads
the facade alone (``python -X importtime``: about 150 ms of imports before, 12 ms
after) and a program pays only for the parts it uses. Type checkers read the names from
the package's ``if TYPE_CHECKING:`` imports; ``tests/test_lazy_exports.py`` checks that
every lazily served name is there and resolves to the object its module defines.

A re-exported name must not be the name of a submodule of the same package: importing
the submodule would set the package attribute to the module and the lookup would never
reach the hook. Such names stay eager imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, modules: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose ``modules`` maps each defining
    module to the names the package re-exports from it."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
