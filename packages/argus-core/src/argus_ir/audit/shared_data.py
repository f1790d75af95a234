"""Loaders for the offline research data: a Wikipedia KB joined to three knowledge graphs.

The caller passes the data root, a folder laid out as::

    kb/wiki_vital10k_en.jsonl            title, text (lead paragraph), wikidata_description, topic
    kb/codex_type_extracts.jsonl         qid, title, text (CoDEx type entities)
    kg/fb15k237/{train,valid,test}.txt   head <TAB> relation <TAB> tail (Freebase MIDs)
    kg/fb15k237/entity2wikidata.json     MID -> label, wikidata_id, wikipedia URL, ...
    kg/trex/P*.jsonl                     sub_label, obj_label (file name = Wikidata property)
    kg/codex/codex-{s,m}/{train,valid,test}.txt   QID <TAB> property <TAB> QID
    kg/codex/types.json                  QID -> label, wiki URL (CoDEx type entities)

Every KB entity is an audit candidate. Its id is the article title; its label, the surface form grounded
in the paragraph, drops a trailing disambiguator ("Kiwi (bird)" -> "Kiwi"), as Wikidata labels do, so
~360 more entities ground in their own text instead of getting the full title prepended.
The KGs only add edges between KB titles. How each KG is joined, and why:

* **FB15k-237** MIDs map to KB titles by the *Wikipedia URL* in ``entity2wikidata.json`` (URL-decoded,
  underscores to spaces), never by label: nearly all MIDs that match only by label are homonyms (the
  film "Shanghai" is not the city) and would plant false edges.
* **Freebase schema hubs.** Relations that link people to a gender, marriages to their type of union
  and money amounts to a currency turn "Male", "Marriage" and "United States dollar" into hubs of
  hundreds of meaningless related-entity queries. Every relation whose name contains one of
  :data:`FB15K237_DROPPED_RELATIONS` is left out, and :func:`load_shared` also applies a degree cap
  (``max_degree=100`` by default) to the union graph: an entity with more neighbours loses all its
  edges (it stays a neutral candidate). On the full union that strips 40 hubs (large countries,
  "English language", "United Nations", "Actor", Olympic sports) and about 6k of 16k edges; pass
  ``max_degree=None`` to keep them.
* **T-REx** facts join by exact label to a KB title; a label with no exact match joins when exactly one
  KB title equals it after case-folding.
* **CoDEx** QIDs resolve through the Wikidata id and Wikipedia URL of ``entity2wikidata.json``, then
  through the Wikipedia URLs in ``codex/types.json``, then through the titles of
  ``codex_type_extracts.jsonl`` (whose titles are lower-case, so the first letter is capitalised as
  Wikipedia titles are) - in each case only when the title is in the KB.

Edges are undirected and merged across sources; ``LoadReport.sources`` counts, per source, the kept
graph edges it supports (an edge found in two sources counts for both).
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from argus_ir.audit.entities import AuditData
from argus_ir.audit.loaders import RawEdge, RawEntity, build_audit_data
from argus_ir.errors import ArgusInputError
from argus_ir.io import iter_jsonl

__all__ = [
    "FB15K237_DROPPED_RELATIONS",
    "KB_FILE",
    "SOURCES",
    "codex_edges",
    "fb15k237_edges",
    "load_shared",
    "load_wiki_kb",
    "surface_form",
    "trex_edges",
]

KB_FILE = "kb/wiki_vital10k_en.jsonl"
"""The reference KB, relative to the data root."""

SOURCES = ("fb15k237", "trex", "codex")
"""Knowledge graphs :func:`load_shared` can join."""

FB15K237_DROPPED_RELATIONS = (
    "/people/person/gender",
    "/people/marriage/type_of_union",
    "/people/marriage_union_type/",
    "currency",
)
"""Substrings of FB15k-237 relation names left out as Freebase schema links (gender, union type,
currency of a money amount)."""

_SPLITS = ("train", "valid", "test")
_DISAMBIGUATOR = re.compile(r"\s+\([^()]*\)\s*$")


def _require(path: Path) -> Path:
    if not path.exists():
        raise ArgusInputError(f"{path}: not found; is the data root the folder with kb/ and kg/?")
    return path


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    return iter_jsonl(_require(path))


def _title_from_url(url: str | None) -> str | None:
    """``https://en.wikipedia.org/wiki/King%27s_College_London`` -> ``King's College London``."""
    if not url or "/wiki/" not in url:
        return None
    return urllib.parse.unquote(url.split("/wiki/", 1)[1]).replace("_", " ")


def surface_form(title: str) -> str:
    """A Wikipedia title without its trailing disambiguator, as a Wikidata label would read.

    Args:
        title: A Wikipedia article title.

    Returns:
        The title with one trailing parenthesised part removed (unless nothing would be left).

    Example:
        >>> surface_form("Kiwi (bird)")
        'Kiwi'
        >>> surface_form("Symphony No. 9 (Beethoven)")
        'Symphony No. 9'
    """
    return _DISAMBIGUATOR.sub("", title).strip() or title


def load_wiki_kb(root: str | os.PathLike[str]) -> list[RawEntity]:
    """Read the Wikipedia lead-paragraph KB as entity records.

    Args:
        root: The data root (the folder holding ``kb/`` and ``kg/``).

    Returns:
        One :class:`~argus_ir.audit.loaders.RawEntity` per KB row, in file order: ``id`` is the article title,
        ``label`` the title without its disambiguator (:func:`surface_form`), ``text`` the lead
        paragraph, ``description`` the Wikidata description.

    Raises:
        ArgusInputError: If the file is missing, a line is not JSON or a row has no title.

    Example:
        >>> kb = load_wiki_kb("data")  # doctest: +SKIP
        >>> kb[0].id, kb[0].text[:30]  # doctest: +SKIP
    """
    path = Path(root) / KB_FILE
    out = []
    for n, row in _read_jsonl(path):
        title = row.get("title")
        if not isinstance(title, str) or not title.strip():
            raise ArgusInputError(f"{path}:{n}: row has no title")
        where = f"{KB_FILE}:{n}"
        desc = row.get("wikidata_description") or ""
        out.append(RawEntity(title, surface_form(title), row.get("text"), desc, where))
    return out


def _fb_title_maps(root: Path, titles: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """MID -> KB title and Wikidata QID -> KB title, both through the Wikipedia URL."""
    path = _require(root / "kg" / "fb15k237" / "entity2wikidata.json")
    with open(path, encoding="utf-8") as fh:
        table = json.load(fh)
    mid_to_title: dict[str, str] = {}
    qid_to_title: dict[str, str] = {}
    for mid, info in table.items():
        title = _title_from_url(info.get("wikipedia"))
        if title in titles:
            mid_to_title[mid] = title
            if info.get("wikidata_id"):
                qid_to_title[info["wikidata_id"]] = title
    return mid_to_title, qid_to_title


def fb15k237_edges(
    root: str | os.PathLike[str],
    titles: Iterable[str],
    *,
    dropped_relations: Sequence[str] = FB15K237_DROPPED_RELATIONS,
) -> list[RawEdge]:
    """FB15k-237 triples whose two ends map to KB titles through their Wikipedia URL.

    Args:
        root: The data root.
        titles: KB titles (entity ids) an end must map to.
        dropped_relations: Relations containing any of these substrings are left out.

    Returns:
        One :class:`~argus_ir.audit.loaders.RawEdge` per joined triple (titles as ids, the Freebase relation
        in ``relation``); repeated pairs are merged later by the graph builder.

    Raises:
        ArgusInputError: If a file is missing or a line does not have three tab-separated fields.

    Example:
        >>> edges = fb15k237_edges("data", [e.id for e in load_wiki_kb("data")])  # doctest: +SKIP
    """
    root = Path(root)
    mid_to_title, _ = _fb_title_maps(root, set(titles))
    out: list[RawEdge] = []
    for split in _SPLITS:
        path = _require(root / "kg" / "fb15k237" / f"{split}.txt")
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 3:
                    if not line.strip():
                        continue
                    raise ArgusInputError(f"{path}:{n}: expected 'head<TAB>relation<TAB>tail'")
                head, rel, tail = parts
                a, b = mid_to_title.get(head), mid_to_title.get(tail)
                if a and b and not any(s in rel for s in dropped_relations):
                    out.append(RawEdge(a, b, f"fb15k237/{split}.txt:{n}", rel))
    return out


def trex_edges(root: str | os.PathLike[str], titles: Iterable[str]) -> list[RawEdge]:
    """T-REx facts whose subject and object labels are KB titles.

    A label joins to the title equal to it; failing that, to the one title equal to it after
    case-folding (a case-folded label shared by several titles does not join).

    Args:
        root: The data root.
        titles: KB titles (entity ids).

    Returns:
        One :class:`~argus_ir.audit.loaders.RawEdge` per joined fact, ``relation`` the Wikidata property.

    Raises:
        ArgusInputError: If the T-REx folder is missing or a line is malformed.

    Example:
        >>> edges = trex_edges("data", ["Paris", "France"])  # doctest: +SKIP
    """
    folder = _require(Path(root) / "kg" / "trex")
    exact = set(titles)
    folded: dict[str, str | None] = {}
    for t in exact:
        key = t.casefold()
        folded[key] = None if key in folded else t  # None marks an ambiguous case-folded title

    def resolve(label: object) -> str | None:
        if not isinstance(label, str):
            return None
        return label if label in exact else folded.get(label.casefold())

    out: list[RawEdge] = []
    for path in sorted(folder.glob("P*.jsonl")):
        prop = path.name.split(".")[0]
        for n, row in _read_jsonl(path):
            a, b = resolve(row.get("sub_label")), resolve(row.get("obj_label"))
            if a and b:
                out.append(RawEdge(a, b, f"trex/{path.name}:{n}", prop))
    return out


def _codex_qid_map(root: Path, titles: set[str]) -> dict[str, str]:
    _, qid_to_title = _fb_title_maps(root, titles)
    types_path = root / "kg" / "codex" / "types.json"
    if types_path.exists():
        with open(types_path, encoding="utf-8") as fh:
            for qid, info in json.load(fh).items():
                title = _title_from_url(info.get("wiki"))
                if title in titles:
                    qid_to_title.setdefault(qid, title)
    extracts = root / "kb" / "codex_type_extracts.jsonl"
    if extracts.exists():
        for _, row in _read_jsonl(extracts):
            qid, title = row.get("qid"), row.get("title")
            if not isinstance(qid, str) or not isinstance(title, str) or not title:
                continue
            for cand in (title, title[0].upper() + title[1:]):
                if cand in titles:
                    qid_to_title.setdefault(qid, cand)
                    break
    return qid_to_title


def codex_edges(root: str | os.PathLike[str], titles: Iterable[str]) -> list[RawEdge]:
    """CoDEx-S and CoDEx-M triples whose two QIDs resolve to KB titles.

    Args:
        root: The data root.
        titles: KB titles (entity ids).

    Returns:
        One :class:`~argus_ir.audit.loaders.RawEdge` per joined triple, ``relation`` the Wikidata property.

    Raises:
        ArgusInputError: If the CoDEx folder or ``entity2wikidata.json`` is missing, or a line is
            malformed.

    Example:
        >>> edges = codex_edges("data", [e.id for e in load_wiki_kb("data")])  # doctest: +SKIP
    """
    root = Path(root)
    folder = _require(root / "kg" / "codex")
    qid_to_title = _codex_qid_map(root, set(titles))
    out: list[RawEdge] = []
    for size in ("codex-s", "codex-m"):
        for split in _SPLITS:
            path = folder / size / f"{split}.txt"
            if not path.exists():  # CoDEx-S ships only its training split here
                continue
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, start=1):
                    parts = line.split()
                    if len(parts) != 3:
                        if not parts:
                            continue
                        raise ArgusInputError(f"{path}:{n}: expected 'QID<TAB>property<TAB>QID'")
                    a, b = qid_to_title.get(parts[0]), qid_to_title.get(parts[2])
                    if a and b:
                        out.append(RawEdge(a, b, f"codex/{size}/{split}.txt:{n}", parts[1]))
    return out


_EDGE_READERS = {"fb15k237": fb15k237_edges, "trex": trex_edges, "codex": codex_edges}


def load_shared(
    root: str | os.PathLike[str],
    *,
    sources: Sequence[str] = SOURCES,
    max_degree: int | None = 100,
) -> AuditData:
    """The 10k-article Wikipedia KB with the union of the chosen knowledge graphs as its relations.

    Args:
        root: The data root (the folder holding ``kb/`` and ``kg/``).
        sources: Which KGs to join, any of ``"fb15k237"``, ``"trex"``, ``"codex"``.
        max_degree: Degree cap on the union graph (see the module notes); ``None`` for none.

    Returns:
        All KB entities (candidates, in KB order) and the union graph; ``report.sources`` gives the
        kept edges each KG supports.

    Raises:
        ArgusInputError: If ``sources`` is empty or names an unknown KG, or a needed file is missing.

    Example:
        >>> data = load_shared("../shared/data")  # doctest: +SKIP
        >>> print(data.report.summary())  # doctest: +SKIP
    """
    chosen = tuple(dict.fromkeys(sources))
    unknown = [s for s in chosen if s not in _EDGE_READERS]
    if not chosen or unknown:
        raise ArgusInputError(f"sources must be a non-empty subset of {SOURCES}, got {sources!r}")
    root = Path(root)
    records = load_wiki_kb(root)
    titles = [r.id for r in records]
    per_source = {s: _EDGE_READERS[s](root, titles) for s in chosen}
    all_edges = [e for s in chosen for e in per_source[s]]
    data = build_audit_data(
        records, all_edges, name="shared:" + "+".join(chosen), max_degree=max_degree
    )

    index = {e.id: i for i, e in enumerate(data.entities)}
    pairs = data.graph.edge_pairs()
    kept = set(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))
    counts = []
    for s in chosen:
        mine = set()
        for e in per_source[s]:
            i, j = index.get(e.a), index.get(e.b)
            if i is not None and j is not None and i != j:
                mine.add((min(i, j), max(i, j)))
        counts.append((s, len(mine & kept)))
    return replace(data, report=replace(data.report, sources=tuple(counts)))
