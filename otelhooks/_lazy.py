"""A package's names imported from their modules on first use (a module ``__getattr__``,
PEP 562): importing the package stays cheap for a short-lived process that needs one name."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``where`` is imported from the module
    it maps to when first asked for, and is a plain attribute of the package after that.

    Example:
        >>> __getattr__ = lazy_names("json", {"dumps": "json"})
        >>> __getattr__("dumps")({"a": 1})
        '{"a": 1}'
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later look-ups are plain attribute reads
        return value

    return __getattr__
