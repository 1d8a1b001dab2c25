"""pandas and numpy imported on first use, not when a module is imported.

Every Django process imports the models, the URLconf and a command's module
before it does anything; with pandas and numpy imported at the top of those
modules, ``manage.py help`` took 2 s, most of it loading pandas (SPEC §7).
Modules write ``from scoring.lazy import np, pd`` and use ``pd.DataFrame`` as
before: the first attribute read imports the library, and every later read
is a plain attribute lookup (the value is kept on the stand-in).

Annotations such as ``def f(table: pd.DataFrame)`` need
``from __future__ import annotations`` in the module, so that defining the
function reads nothing.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module ``name`` and imports it on the first attribute read.

    Raises what ``importlib.import_module(name)`` raises, at that first read.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        # Only called for attributes not yet kept on the stand-in.
        if attribute.startswith("__"):
            raise AttributeError(attribute)  # copy, pickle and inspect probe dunders: don't import for them
        value = getattr(self.module(), attribute)
        setattr(self, attribute, value)
        return value

    def module(self) -> ModuleType:
        """The real module (imported now if it was not yet)."""
        return importlib.import_module(self._name)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


pd: Any = LazyModule("pandas")
np: Any = LazyModule("numpy")
