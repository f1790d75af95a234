"""Several knowledge sources as one KB, asked in an order chosen by the mention's NER label.

:class:`CompositeKB` is how the shipped ``wikipedia+places`` KB routes a place mention to the
gazetteer and every other mention to Wikipedia (:mod:`argus_ir.kb.shipped` builds it); users can
compose their own sources the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.kb.reference import DEFAULT_K_AUG, Passage, ReferenceKB, ask

__all__ = ["CompositeKB"]

logger = logging.getLogger(__name__)


class CompositeKB:
    """Several knowledge sources, asked in an order chosen by the mention's NER label.

    Args:
        sources: ``name -> source`` (a :class:`~argus_ir.kb.ReferenceKB`, a :class:`Gazetteer` or
            anything with the :class:`~argus_ir.kb.KnowledgeBase` methods plus ``knows``).
        routes: ``NER label -> source names`` in the order to ask them.
        fallback: The route of every label not in ``routes`` (default: the first source alone).
        fuzzy: Whether a form no source knows exactly may get the BM25 KB's word matches
            (``False``: only exact names answer; see :data:`KB_MATCHES`).
        cues: ``source name -> test(surface, label, context)``: a source a label's route
            leaves out is still asked, after the route's exact names, when its test says the
            text uses the mention as that source's kind (the shipped KB: :func:`cued_place` for
            the gazetteer).
        last: Sources asked for every label after the route's and the cues' exact names, before
            any word match (:func:`argus_ir.kb.llm.with_llm_knowledge`: the LLM).

    A lookup walks the route twice: first for a source that knows the form exactly (a passage
    titled with it, a place of that name; then a cued source) and answers from it (without
    ``fuzzy``: with that one passage alone); else (with ``fuzzy``) it takes the first source
    on the route whose own lookup returns anything (the BM25 KB's word matches). A route of one
    source and no cue is that source's lookup, unchanged. ``hits`` counts the answers per source.
    """

    def __init__(
        self,
        sources: Mapping[str, Any],
        routes: Mapping[str, Sequence[str]],
        fallback: Sequence[str] | None = None,
        *,
        fuzzy: bool = True,
        cues: Mapping[str, Callable[[str, str | None, str | None], bool]] | None = None,
        last: Sequence[str] = (),
    ) -> None:
        if not sources:
            raise ArgusInputError("a composite KB needs at least one source")
        self.sources = dict(sources)
        self.routes = {label: tuple(names) for label, names in routes.items()}
        self.fallback = tuple(fallback) if fallback is not None else (next(iter(self.sources)),)
        for label, names in [*self.routes.items(), ("fallback", self.fallback)]:
            unknown = [n for n in names if n not in self.sources]
            if unknown or not names:
                raise ArgusInputError(
                    f"route {label!r} names {unknown or 'no source'}; sources: {sorted(self.sources)}"
                )
        self.cues = dict(cues or {})
        unknown = sorted(set(self.cues) - set(self.sources))
        if unknown:
            raise ArgusInputError(f"cues name {unknown}; sources: {sorted(self.sources)}")
        self.last = tuple(last)
        unknown = sorted(set(self.last) - set(self.sources))
        if unknown:
            raise ArgusInputError(f"last names {unknown}; sources: {sorted(self.sources)}")
        self.hits: dict[str, int] = dict.fromkeys(self.sources, 0)
        card = {
            "sources": {n: s.fingerprint for n, s in self.sources.items()},
            "routes": {k: list(v) for k, v in sorted(self.routes.items())},
            "fallback": list(self.fallback),
            "fuzzy": fuzzy,
        }
        if self.cues:  # the card of a composite without cues keeps its fingerprint
            card["cues"] = {
                n: getattr(c, "__name__", repr(c)) for n, c in sorted(self.cues.items())
            }
        if self.last:
            card["last"] = list(self.last)
        self.fuzzy = fuzzy
        digest = hashlib.sha256(json.dumps(card, sort_keys=True).encode("utf-8")).hexdigest()
        self.fingerprint = "composite:" + digest[:16]

    def __len__(self) -> int:
        return sum(len(s) for s in self.sources.values())

    def passage(self, passage_id: str) -> Passage | None:
        for source in self.sources.values():
            found = source.passage(passage_id)
            if found is not None:
                return found
        return None

    def source_of(self, passage_id: str) -> str | None:
        """The name of the source that holds a passage id."""
        for name, source in self.sources.items():
            if source.passage(passage_id) is not None:
                return name
        return None

    def knows(self, surface: str) -> bool:
        return any(_knows(s, surface) for s in self.sources.values())

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """The passages of the first source on the label's route that answers (see the class)."""
        route = self.routes.get(label or "", self.fallback)
        cued = tuple(
            name
            for name, cue in self.cues.items()
            if name not in route
            and _knows(self.sources[name], surface)
            and cue(surface, label, context)
        )
        last = tuple(n for n in self.last if n not in route and n not in cued)
        for exact in (True, False) if self.fuzzy else (True,):
            for name in route + cued + last if exact else route:
                source = self.sources[name]
                if exact and not _knows(source, surface):
                    continue
                hits = ask(source, surface, k, label=label, context=context)
                if hits:
                    self.hits[name] += 1
                    # by name only: the one passage known by it (a titled passage comes first)
                    return hits if self.fuzzy else hits[:1]
        return []


def _knows(source: Any, surface: str) -> bool:
    if isinstance(source, ReferenceKB):
        return source.titled(surface) is not None
    knows = getattr(source, "knows", None)
    return bool(knows(surface)) if knows is not None else False
