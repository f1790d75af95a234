"""The lifecycle contract's comparator: what a store holds against what it must hold
(:mod:`argus_ir.testing.lifecycle`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from argus_ir.collapse import is_view_entry
from argus_ir.lineage import ARGUS_KEYS, SOURCE_KEY

__all__ = ["Row", "compare", "either", "lineage_of", "missed"]


@dataclass(frozen=True)
class Row:
    """One entry of the store, as the comparator sees it: its id, text and argus lineage."""

    id: str
    text: str
    lineage: Mapping[str, Any]

    @property
    def is_view(self) -> bool:
        return is_view_entry(dict(self.lineage), self.id)

    @property
    def source(self) -> str:
        return str(self.lineage.get(SOURCE_KEY) or self.id)


def lineage_of(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``argus_*`` keys of an entry's metadata (what the comparator checks)."""
    return {k: v for k, v in (metadata or {}).items() if k in ARGUS_KEYS}


def compare(expected: Iterable[Row], actual: Iterable[Row], *, by: str = "id") -> list[str]:
    """What differs between the uninterrupted run's rows and the store's: duplicates, orphan
    views, views of another version than their stored original, entries missing, extra or
    changed. ``by="text"`` keys entries by their text (ids random by design), and leaves the
    lineage keys that hold ids out of the comparison. Empty when the store is right."""
    want, got = list(expected), list(actual)
    problems: list[str] = []
    key = (lambda r: r.id) if by == "id" else (lambda r: r.text)
    for name, rows in (("the store", got), ("the uninterrupted run", want)):
        doubled = [k for k, n in Counter(map(key, rows)).items() if n > 1]
        if doubled:
            problems.append(f"{name} holds {len(doubled)} entries twice: {doubled[:3]}")
    originals = {r.source: r for r in got if not r.is_view}
    orphans = [r.id for r in got if r.is_view and r.source not in originals]
    if orphans and by == "id":
        problems.append(f"{len(orphans)} view(s) whose original is gone: {orphans[:3]}")
    want_by, got_by = {key(r): r for r in want}, {key(r): r for r in got}
    missing = [k for k in want_by if k not in got_by]
    extra = [k for k in got_by if k not in want_by]
    if missing:
        problems.append(f"{len(missing)} entries missing: {missing[:3]}")
    if extra:
        stale = [k for k in extra if got_by[k].is_view]
        problems.append(f"{len(extra)} entries too many ({len(stale)} views): {extra[:3]}")
    ids = ("argus_source_id", "argus_view_name") if by == "text" else ()
    changed = [
        k
        for k in want_by.keys() & got_by.keys()
        if _comparable(want_by[k], ids) != _comparable(got_by[k], ids)
    ]
    if changed:
        problems.append(f"{len(changed)} entries changed: {sorted(changed)[:3]}")
    return problems


def missed(rows: Iterable[Row], want: Mapping[str, str]) -> list[str]:
    """What the store's originals get wrong against ``want``, the documents (id to text) its
    calls must leave (:func:`argus_ir.testing.lifecycle.expected_sources`): the uninterrupted run
    must be right too, since a recipe that never deletes would equal itself."""
    got = {r.source: r.text for r in rows if not r.is_view}
    problems = []
    if set(got) - set(want):
        problems.append(f"documents that should be gone: {sorted(set(got) - set(want))[:3]}")
    if set(want) - set(got):
        problems.append(f"documents missing: {sorted(set(want) - set(got))[:3]}")
    stale = [k for k in want.keys() & got.keys() if want[k] != got[k]]
    if stale:
        problems.append(f"documents in another version: {sorted(stale)[:3]}")
    return problems


def either(
    one: Iterable[Row], other: Iterable[Row], actual: Iterable[Row], *, by: str = "id"
) -> list[str]:
    """:func:`compare` source by source: each document's entries must be those of ``one`` or
    those of ``other``, whole (two writers of two versions: each document ends as the version
    written last, which may differ between documents)."""

    def by_source(rows: Iterable[Row]) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        for row in rows:
            out.setdefault(row.source, []).append(row)
        return out

    a, b, got = by_source(one), by_source(other), by_source(actual)
    problems = []
    for source in sorted(a.keys() | b.keys() | got.keys()):
        mine = got.get(source, [])
        first = compare(a.get(source, []), mine, by=by)
        if first and compare(b.get(source, []), mine, by=by):
            problems.append(f"document {source}: " + "; ".join(first))
    return problems


def _comparable(row: Row, leave_out: Sequence[str]) -> tuple[str, dict[str, Any]]:
    return row.text, {k: v for k, v in row.lineage.items() if k not in leave_out}


# two writers -----------------------------------------------------------------------------------
