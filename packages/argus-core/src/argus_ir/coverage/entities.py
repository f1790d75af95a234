"""The entities that define the strata: mention surface forms normalised (case, spaces, stray
brackets) and filtered to those that can name a topic, dropping statistics such as "p<0.05" and
the section headings of structured abstracts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _norm(name: str) -> str:
    """Case-folded, single spaces, and no bracket left open or unopened at either end
    (NER cuts "CD4(+) cells" to "CD4(" and "(Wnt) signalling" to "(Wnt")."""
    form = " ".join(name.split()).casefold()
    while form and form[-1] in _PAIRS:
        form = form[:-1].rstrip()
    while form and form[0] in _PAIRS.values():
        form = form[1:].lstrip()
    for opening, closing in _PAIRS.items():
        if form.startswith(opening) and closing not in form:
            form = form[1:].lstrip()
        if form.endswith(closing) and opening not in form:
            form = form[:-1].rstrip()
    return form


HEADING_WORDS = frozenset(
    [
        "abstract",
        "aim",
        "aims",
        "background",
        "conclusion",
        "conclusions",
        "context",
        "design",
        "findings",
        "importance",
        "introduction",
        "method",
        "methods",
        "objective",
        "objectives",
        "purpose",
        "rationale",
        "results",
        "setting",
    ]
)
"""Section headings of structured abstracts; NER often tags them ("BACKGROUND Patients ...")."""

_STATISTIC = re.compile(r"[=<>≤≥±%]")


def is_name(surface: str) -> bool:
    """Whether a normalised surface form can name a topic, rather than a statistic or a heading.

    Kept: two letters or more, letters at least a third of the non-space characters ("il-18",
    "ifn", "saccharomyces"). Dropped: comparisons and percentages ("p<0.05", "n=17", "95%"),
    mostly numbers or punctuation ("iii:09/3.33", "c."), and forms that start with a section
    heading of a structured abstract (:data:`HEADING_WORDS`).
    """
    if _STATISTIC.search(surface):
        return False
    chars = [c for c in surface if not c.isspace()]
    letters = sum(c.isalpha() for c in chars)
    if letters < 2 or 3 * letters < len(chars):
        return False
    return surface.split()[0] not in HEADING_WORDS


def entities_of(
    mentions: Sequence[Sequence[Any]], keep: Callable[[str], bool] | None = is_name
) -> list[list[str]]:
    """Distinct normalised surface forms (case-folded, single spaces, stray brackets trimmed) per
    text, in order.

    Args:
        mentions: The mentions of each text (anything with ``.text``).
        keep: Which forms count as entities (default :func:`is_name`; ``None`` keeps all).
    """
    out = []
    for ms in mentions:
        forms = (_norm(m.text) for m in ms)
        out.append(list(dict.fromkeys(f for f in forms if f and (keep is None or keep(f)))))
    return out
