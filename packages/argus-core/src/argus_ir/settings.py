"""Every :class:`~argus_ir.pipeline.Argus` setting, its default and its description, for the adapters.

The LangChain, Haystack and LlamaIndex steps expose the same settings as ``Argus`` under their
framework's conventions; they read names, defaults and (LlamaIndex) field descriptions from here,
so a default changes in one place. :class:`argus_ir.testing.AdapterContract` checks each adapter.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from argus_ir.pipeline import Argus

__all__ = ["argus_settings", "setting_docs"]


def argus_settings() -> dict[str, Any]:
    """Every :class:`Argus` setting and its default, in field order.

    The framework adapters expose these as their own fields and take the defaults from here, so a
    default changes in one place; :class:`argus_ir.testing.AdapterContract` checks each adapter
    against it.
    """
    return {f.name: f.default for f in fields(Argus) if f.init}


def setting_docs() -> dict[str, str]:
    """Each :class:`Argus` setting's description, from the class docstring (one line each).

    For adapters whose fields carry a description (LlamaIndex's pydantic ``Field``), so that the
    text cannot drift from the core's.
    """
    docs: dict[str, str] = {}
    name = None
    body = (Argus.__doc__ or "").split("Attributes:", 1)[-1]
    for line in body.splitlines():
        stripped = line.strip()
        if line.startswith(" " * 8) and not line.startswith(" " * 9) and ":" in stripped:
            name, text = stripped.split(":", 1)
            docs[name] = text.strip()
        elif name is not None and stripped and line.startswith(" " * 12):
            docs[name] += " " + stripped

    def plain(text: str) -> str:  # ``x`` -> x, :data:`~a.b.C` -> C
        text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([\w]+)`", r"\1", text.replace("``", ""))
        return " ".join(text.split())

    return {key: plain(value) for key, value in docs.items()}
