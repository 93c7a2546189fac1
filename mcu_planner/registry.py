"""One registry mechanism for the pluggable parts (planners, lowerings, check
targets): a module registers its entries on import with `registry.add`, and
`registry.load()` imports the modules that hold them.  A module that is listed
but missing is an error, like any other import error."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, modules: Callable[[], list[str]]):
        """`modules` names the modules to import, in the order their entries
        should be listed."""
        self.kind = kind
        self.entries: dict[str, T] = {}
        self._modules = modules
        self._loaded = False

    def add(self, name: str, entry: T) -> T:
        self.entries[name] = entry
        return entry

    def load(self) -> dict[str, T]:
        """Every entry, after importing the modules that register them (once)."""
        if not self._loaded:
            for module in self._modules():
                importlib.import_module(module)
            self._loaded = True
        return self.entries


def package_modules(package: str, path: list[str]) -> Callable[[], list[str]]:
    """Every module of a package, for a registry whose entries may live in any
    of them (alphabetical order)."""
    return lambda: [f"{package}.{info.name}" for info in pkgutil.iter_modules(path)]
