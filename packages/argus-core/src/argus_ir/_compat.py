"""Old module paths of argus_ir, kept importable after the move into subpackages.

Before 0.2 every module lived in one flat folder. Each name in :data:`MOVED` now lives elsewhere;
importing the old name gives the new module itself (the same object, so its functions, classes
and attributes are the same ones) with a :class:`DeprecationWarning` naming the new path. The old
paths will be removed in a later release. ``docs/design.md`` lists them too.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED", "install"]

# old module path -> new module path
MOVED: dict[str, str] = {
    "argus_ir.entities": "argus_ir.audit.entities",
    "argus_ir.loaders": "argus_ir.audit.loaders",
    "argus_ir.rps": "argus_ir.audit.rps",
    "argus_ir.sample": "argus_ir.audit.sample",
    "argus_ir.shared_data": "argus_ir.audit.shared_data",
    "argus_ir.report": "argus_ir.audit.report",
    "argus_ir.cache": "argus_ir.encoder.cache",
    "argus_ir.grounding": "argus_ir.text.grounding",
    "argus_ir.mentions": "argus_ir.text.mentions",
    "argus_ir.kb_disk": "argus_ir.kb.disk",
    "argus_ir.kb_dumps": "argus_ir.kb.dumps",
    "argus_ir.places": "argus_ir.kb.places",
    "argus_ir.biomed": "argus_ir.kb.biomed",
    "argus_ir.llm_kb": "argus_ir.kb.llm",
    "argus_ir.search_kb": "argus_ir.kb.search",
    "argus_ir.synthesis": "argus_ir.remedy.synthesis",
    "argus_ir.targeting": "argus_ir.remedy.targeting",
    "argus_ir.stream": "argus_ir.runners.stream",
    "argus_ir.ray_data": "argus_ir.runners.ray_data",
    "argus_ir.integration": "argus_ir.runners.integration",
    "argus_ir.evaluate": "argus_ir.eval",
    "argus_ir.explain": "argus_ir.eval.explain",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and hands out the module at its new path."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there (the old path will be removed)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module at the new path is already executed."""


def install() -> None:
    """Put the finder last on ``sys.meta_path`` (once): real modules are always found first."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
