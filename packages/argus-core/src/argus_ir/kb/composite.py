"""Several knowledge sources as one KB, asked in an order chosen by the mention's NER label.

:class:`CompositeKB` is how the shipped ``wikipedia+places`` KB routes a place mention to the
gazetteer and every other mention to Wikipedia (:mod:`argus_ir.kb.shipped` builds it); users can
compose their own sources the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from argus_ir.errors import ArgusInputError
from argus_ir.kb.cues import (
    NEVER_PLACE_LABELS,
    cited,
    ends_phrase,
    written_as_person,
    written_as_place,
)
from argus_ir.kb.forms import (
    alias_agrees,
    case_agrees,
    defined_as,
    is_acronym,
    is_person_passage,
    label_agrees,
    name_words,
    namesake_prone,
    same_name,
    spells,
)
from argus_ir.kb.reference import DEFAULT_K_AUG, Passage, ReferenceKB, ask
from argus_ir.kb.venues import cut_name, venue_after
from argus_ir.text.grounding import normalize

__all__ = ["CHECK_DEPTH", "MATCH_KINDS", "CompositeKB", "match_kind"]

CHECK_DEPTH = 5
"""How many BM25 answers ``match="checked"`` reads for one whose title names the mention."""
MATCH_KINDS = ("title", "alias", "gazetteer", "place-in-name", "checked-bm25", "bm25", "llm")
"""How a view's passage was matched to its mention (lineage ``argus_kb_match``,
:func:`match_kind`)."""

logger = logging.getLogger(__name__)
_GLUED = re.compile(r"\w\.[a-z]{2}")
"""Two sentences a crawl glued into one span ("Mexico.he United States", "World War I.he"): a
mention over a sentence break names nothing."""


class CompositeKB:
    """Several knowledge sources, asked in an order chosen by the mention's NER label.

    Args:
        sources: ``name -> source`` (a :class:`~argus_ir.kb.ReferenceKB`, a :class:`Gazetteer` or
            anything with the :class:`~argus_ir.kb.KnowledgeBase` methods plus ``knows``).
        routes: ``NER label -> source names`` in the order to ask them.
        fallback: The route of every label not in ``routes`` (default: the first source alone).
        fuzzy: Whether a form no source knows exactly may get the BM25 KB's word matches
            (``False``: only exact names answer; see :data:`KB_MATCHES`). Ignored when
            ``match`` is given.
        cues: ``source name -> test(surface, label, context)``: a source a label's route
            leaves out is still asked, after the route's exact names, when its test says the
            text uses the mention as that source's kind (the shipped KB: :func:`cued_place` for
            the gazetteer).
        last: Sources asked for every label after the route's and the cues' exact names, before
            any word match (:func:`argus_ir.kb.llm.with_llm_knowledge`: the LLM).
        match: ``"bm25"`` (``fuzzy=True``), ``"title"`` (``fuzzy=False``) or ``"checked"``: only
            answers about the mentioned entity (see :meth:`lookup`).

    A lookup walks the route twice: first for a source that knows the form exactly (a passage
    titled with it, a place of that name; then a cued source) and answers from it (without
    ``fuzzy``: with that one passage alone); else (with ``fuzzy``) it takes the first source
    on the route whose own lookup returns anything (the BM25 KB's word matches). A route of one
    source and no cue is that source's lookup, unchanged. ``hits`` counts the answers per source.
    ``match="checked"`` answers only what it can vouch for (:meth:`_checked`).
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
        match: str | None = None,
    ) -> None:
        if match is None:
            match = "bm25" if fuzzy else "title"
        if match not in ("bm25", "title", "checked"):
            raise ArgusInputError(f"match must be 'bm25', 'title' or 'checked', got {match!r}")
        fuzzy = match == "bm25"
        self.match = match
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
        if match == "checked":  # the cards of the other two keep their fingerprints
            card["match"] = match
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
        if self.match == "checked":
            return self._checked(surface, k, label, context, route + cued, last)
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

    def _checked(
        self,
        surface: str,
        k: int,
        label: str | None,
        context: str | None,
        route: tuple[str, ...],
        last: tuple[str, ...],
    ) -> list[tuple[Passage, float]]:
        """``match="checked"``: an answer only where it is about the mentioned entity.

        1. A source that knows the form exactly (a passage titled with it, a place of that name,
           an alias; a mention over a title line and the text by either line), when the passage
           agrees with the mention (:meth:`_vouched`); a single given name is never handed to the
           LLM (``last``) nor described in any other way;
        2. else a place inside or right after a venue's name (a source's ``within``: the
           gazetteer's :meth:`~argus_ir.kb.places.Gazetteer.within`);
        3. else the BM25 answers among the first :data:`CHECK_DEPTH` whose title is the
           mention's name (:func:`~argus_ir.kb.forms.same_name`) or, for an acronym, the title
           it abbreviates, written out in the text (:func:`~argus_ir.kb.forms.spells`);
        4. else nothing.

        A mention the tagger cut short of its name ("St James's" of "St James's Theatre":
        :func:`~argus_ir.kb.venues.cut_name`) gets only the place the whole name holds (step 2,
        which also reads a name the text goes on with: "Helensvale railway station"). Nothing
        at all for a span glued over a sentence break ("Mexico.he United States"), an author
        cited in a reference or an abbreviation before a number ("(Lawton, 1969)", "Fig. 2":
        :func:`~argus_ir.kb.cues.cited`). An acronym the text defines
        ("Churg-Strauss syndrome (CSS)") is asked by the words it stands for
        (:func:`~argus_ir.kb.forms.defined_as`); failing those, by its own exact names whose
        titles are made of those words ("Federal Democratic Republic of Ethiopia (FDRE)" →
        Ethiopia), never by its letters alone (CSS, the style sheets).
        """
        if cited(surface, context) or _GLUED.search(surface):
            return []
        if cut_name(surface, context):  # only the place the whole name holds
            return self._venue_place(surface, context, label)
        phrase = defined_as(surface, context)
        if phrase is not None:  # "Churg-Strauss syndrome (CSS)": asked by what it stands for
            hits = self._checked(phrase, k, label, context, route, last)
            if hits:
                return hits
        namesake = namesake_prone(surface)
        # a mention spanning a title line and the text ("Raphael\nRaffaello Sanzio") by its lines
        forms = [surface, *(line.strip() for line in surface.splitlines() if line.strip())]
        for form in dict.fromkeys(forms) if "\n" in surface else (surface,):
            for name in route + (() if namesake else last):
                source = self.sources[name]
                if not _knows(source, form):
                    continue
                hits = ask(source, form, k, label=label, context=context)[:1]
                if hits and isinstance(source, ReferenceKB):
                    hits = [h for h in hits if self._vouched(h[0], form, label, context, namesake)]
                if phrase is not None:  # only a name of what the text spells out
                    hits = [h for h in hits if _within(h[0].title, phrase)]
                if hits:
                    self.hits[name] += 1
                    return hits
        if namesake or phrase is not None:
            return []
        hits = self._venue_place(surface, context, label)
        if hits:
            return hits
        for name in route:
            source = self.sources[name]
            if not isinstance(source, ReferenceKB):
                continue
            hits = ask(source, surface, max(k, CHECK_DEPTH), label=label, context=context)
            hits = [
                h
                for h in hits
                if (same_name(surface, h[0].title) or spells(surface, h[0].title, context or ""))
                and self._vouched(h[0], surface, label, context, namesake)
            ]
            if hits:
                self.hits[name] += 1
                return hits[:k]
        return []

    def _venue_place(
        self, surface: str, context: str | None, label: str | None
    ) -> list[tuple[Passage, float]]:
        """The place inside or right after a venue's name (a source's ``within``), the name
        being the mention or, where the text goes on with a venue word, the whole name it starts
        (:func:`~argus_ir.kb.venues.venue_after`: "Helensvale" of "Helensvale railway station"),
        unless the label is never a place's (:data:`~argus_ir.kb.cues.NEVER_PLACE_LABELS`: the
        "Spanish" of "the Spanish national art museum")."""
        hits = self._within(surface, context, label)
        if hits or label in NEVER_PLACE_LABELS:
            return hits
        whole = venue_after(surface, context)  # read only when the mention itself holds none
        return self._within(whole, context, label) if whole is not None else []

    def _within(
        self, form: str, context: str | None, label: str | None
    ) -> list[tuple[Passage, float]]:
        """The first source's ``within`` answer for a name, counted in :attr:`hits`."""
        for name, source in self.sources.items():
            within = getattr(source, "within", None)
            hits = within(form, context, label=label) if within is not None else []
            if hits:
                self.hits[name] += 1
                return hits[:1]
        return []

    @staticmethod
    def _vouched(
        passage: Passage, form: str, label: str | None, context: str | None, namesake: bool
    ) -> bool:
        """Whether a passage known by the mention's name may describe it: its kind agrees with
        the label (:func:`~argus_ir.kb.forms.label_agrees`); an acronym ("ART") is not a word's
        title ("Art"); a single given name takes a person only when tagged ``PERSON``, and
        anything else only when written as a place ("in Sofia") or tagged as one and not written
        as a person ("The train to Paris", not "with Sofia": :func:`written_as_person`); a passage
        titled otherwise than the form (a redirect, an alias) is not a broader or neighbouring
        article (:func:`~argus_ir.kb.forms.alias_agrees`); a one-word mention, unless tagged
        ``PERSON`` ("Einstein said" is a verb's subject) or an acronym ("NATO allies", "RNA
        polymerase" still name NATO and RNA), ends its phrase where the text writes it
        (:func:`~argus_ir.kb.cues.ends_phrase`: not "Hedgehog signals", "Western diet"); a form
        with the title's letters writes them in its case ("UreA" is not Urea:
        :func:`~argus_ir.kb.forms.case_agrees`)."""
        if not label_agrees(label, passage.description) or not case_agrees(form, passage.title):
            return False
        if normalize(form) != normalize(passage.title) and not alias_agrees(form, passage.title):
            return False
        if (
            label != "PERSON"
            and " " not in form.strip()
            and not is_acronym(form)
            and not ends_phrase(form, context)
        ):
            return False  # "Hedgehog signals", "Western diet": a word of a longer term
        if (
            is_acronym(form)
            and not is_acronym(passage.title)
            and name_words(form) == name_words(passage.title)
        ):
            return False  # "ART" is not Art, "DRAG" not Drag (physics)
        if namesake:
            if label == "PERSON":
                return is_person_passage(passage.description)
            if is_person_passage(passage.description):
                return False
            if written_as_place(form, context):
                return True
            return label in ("GPE", "LOC") and not written_as_person(form, context)
        return True


def match_kind(kb: Any, surface: str, passage: Passage) -> str:
    """How ``passage`` was matched to the mention ``surface`` (:data:`MATCH_KINDS`): by its
    exact ``"title"``; an ``"alias"`` (an exact name of a source that is not the title, such as
    an HPO synonym); a ``"gazetteer"`` place of that name; a ``"place-in-name"`` (a venue
    described by its place); an ``"llm"``'s line; a BM25 answer whose title is the mention's
    name or the words an acronym abbreviates (``"checked-bm25"``) or any other BM25 answer
    (``"bm25"``)."""
    from argus_ir.kb.places import ID_PREFIX, INSIDE_SUFFIX
    from argus_ir.remedy.view import GENERATED_PREFIX

    if passage.id.startswith(GENERATED_PREFIX):
        return "llm"
    if passage.id.startswith(ID_PREFIX):
        return "place-in-name" if passage.id.endswith(INSIDE_SUFFIX) else "gazetteer"
    forms = [surface, *surface.splitlines()] if "\n" in surface else [surface]
    if any(normalize(passage.title) == normalize(form) for form in forms):
        return "title"
    sources = getattr(kb, "sources", None)
    for source in sources.values() if isinstance(sources, Mapping) else (kb,):
        if isinstance(source, ReferenceKB):
            aliased = source.aliased(surface)
            if aliased is not None and aliased.id == passage.id:
                return "alias"
    if same_name(surface, passage.title) or spells(surface, passage.title):
        return "checked-bm25"
    if isinstance(sources, Mapping):
        for source in sources.values():
            if not isinstance(source, ReferenceKB) and source.passage(passage.id) is not None:
                return "alias" if _knows(source, surface) else "bm25"
    return "bm25"


def _within(title: str, phrase: str) -> bool:
    """Whether every word of a title is one of the phrase's ("Northern Cyprus" of "Turkish
    Republic of Northern Cyprus")."""
    return set(name_words(title)) <= set(name_words(phrase))


def _knows(source: Any, surface: str) -> bool:
    if isinstance(source, ReferenceKB):
        return source.known(surface) is not None
    knows = getattr(source, "knows", None)
    return bool(knows(surface)) if knows is not None else False
