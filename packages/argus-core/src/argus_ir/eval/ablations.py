"""Which conditions beyond the remedies an evaluation runs: ablations and variants.

:data:`ABLATABLE` lists the settings a condition may change; :func:`parse_ablations` and
:func:`parse_variant` read them from ``argus evaluate``'s ``--ablate`` and ``--variant`` specs, and
:func:`ablation_name` names the condition of one ablated value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus_ir.errors import ArgusInputError

__all__ = ["ABLATABLE", "ablation_name", "parse_ablations", "parse_variant"]


ABLATABLE: dict[str, type] = {
    "tau": float,
    "k_aug": int,
    "context_threshold": float,
    "max_views": int,
    "view_discount": float,
    "targeting": str,
    "kb": str,
    "kb_match": str,
}
"""Settings :func:`evaluate` can vary per condition, with their types (``off`` gives ``None``:
no context check, no view budget). ``kb`` is a shipped KB's name
(:data:`argus_ir.kb.places.KB_NAMES`), a KB folder or a passages file. ``targeting`` is ``probe`` (the diagnoser's predicted RPS at
``tau``) or ``corpus`` (:mod:`argus_ir.remedy.targeting`: an entity is flagged where its own document is
not in the top 10 for the entity's name, measured on the evaluated index)."""

_OFF = ("context_threshold", "max_views")
_FUSION = ("view_discount",)  # query-time settings: the views stay, their folding changes


def _parse_value(key: str, raw: str, spec: str) -> Any:
    parse = ABLATABLE.get(key)
    if parse is None:
        raise ArgusInputError(
            f"{spec!r}: {key!r} is not a setting; choose from {', '.join(ABLATABLE)}"
        )
    if raw == "off" and key in _OFF:
        return None
    from argus_ir.remedy.targeting import TARGETINGS

    if key == "targeting" and raw not in TARGETINGS:
        raise ArgusInputError(f"{spec!r}: targeting is one of {', '.join(TARGETINGS)}, got {raw!r}")
    try:
        return parse(raw)
    except ValueError:
        raise ArgusInputError(f"{spec!r}: {raw!r} is not a valid {key}") from None


def parse_ablations(specs: Sequence[str]) -> dict[str, list[Any]]:
    """``["tau=0.1,0.2", "context_threshold=off,0.15"]`` -> ``{"tau": [0.1, 0.2], ...}``.

    Raises:
        ArgusInputError: A spec without ``=``, an unknown setting or a value of the wrong type
            (the message quotes the spec).
    """
    out: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        if not sep or not values.strip():
            raise ArgusInputError(f"ablation {spec!r}: expected SETTING=V1,V2 (e.g. tau=0.1,0.2)")
        for raw in (v.strip() for v in values.split(",")):
            out.setdefault(key, []).append(_parse_value(key, raw, f"ablation {spec}"))
    return out


def parse_variant(spec: str) -> tuple[str, str, dict[str, Any]]:
    """``"expansion max_views=2 view_discount=0.03"`` -> ``(name, "expansion", overrides)``.

    The name is the remedy followed by its settings as given, e.g.
    ``"expansion max_views=2 view_discount=0.03"``.

    Raises:
        ArgusInputError: An unknown remedy or setting, a value of the wrong type, or a setting
            given twice (the message quotes the spec).
    """
    from argus_ir.remedy import KINDS

    words = spec.split()
    if not words or words[0] not in KINDS:
        raise ArgusInputError(f"variant {spec!r}: start with a remedy, one of {', '.join(KINDS)}")
    overrides: dict[str, Any] = {}
    for word in words[1:]:
        key, sep, raw = word.partition("=")
        if not sep or not raw:
            raise ArgusInputError(f"variant {spec!r}: expected SETTING=VALUE, got {word!r}")
        if key in overrides:
            raise ArgusInputError(f"variant {spec!r}: {key} given twice")
        overrides[key] = _parse_value(key, raw, f"variant {spec}")
    return " ".join(words), words[0], overrides


def ablation_name(kind: str, key: str, value: Any) -> str:
    """The condition name of one ablation variant, e.g. ``"expansion tau=0.1"``."""
    return f"{kind} {key}={'off' if value is None else value}"
