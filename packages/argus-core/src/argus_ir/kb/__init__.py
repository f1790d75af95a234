"""Knowledge bases the remedies draw support passages from.

- :mod:`~argus_ir.kb.reference`: :class:`Passage`, the :class:`KnowledgeBase` protocol and the
  in-memory :class:`ReferenceKB` (the shipped Wikipedia leads, or any passages file);
- :mod:`~argus_ir.kb.disk`: a dump-scale KB on disk (``argus kb build``), opened memory-mapped;
- :mod:`~argus_ir.kb.dumps`: streaming readers of Wikipedia, Wikidata and DBpedia dumps;
- :mod:`~argus_ir.kb.places` (GeoNames) and :mod:`~argus_ir.kb.biomed` (HPO): offline sources;
- :mod:`~argus_ir.kb.composite`: several sources routed by the mention's NER label;
- :mod:`~argus_ir.kb.shipped`: the shipped KBs by name and the defaults;
- :mod:`~argus_ir.kb.search`: any framework store as the KB; :mod:`~argus_ir.kb.llm`: a served
  LLM's one-line knowledge for mentions no source knows.
"""

from argus_ir.kb.composite import CompositeKB
from argus_ir.kb.reference import (
    DEFAULT_K_AUG,
    LOOKUP_CACHE_SIZE,
    KnowledgeBase,
    Passage,
    ReferenceKB,
    ask,
    read_card,
)
from argus_ir.kb.shipped import (
    DEFAULT_KB,
    DEFAULT_KB_MATCH,
    KB_MATCHES,
    KB_NAMES,
    match_titles,
    shipped_kb,
    shipped_kb_fingerprint,
)

__all__ = [
    "DEFAULT_KB",
    "DEFAULT_KB_MATCH",
    "DEFAULT_K_AUG",
    "KB_MATCHES",
    "KB_NAMES",
    "LOOKUP_CACHE_SIZE",
    "CompositeKB",
    "KnowledgeBase",
    "Passage",
    "ReferenceKB",
    "ask",
    "match_titles",
    "read_card",
    "shipped_kb",
    "shipped_kb_fingerprint",
]
