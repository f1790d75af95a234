"""Build an entity-list retrieval benchmark (BEIR layout) from the shared Wikipedia leads and T-REx facts.

A query is a list-style question about one Wikidata property and one object, written from the
template table below ("people born in Vienna", "places that border Austria"); its relevant
documents are the Wikipedia lead paragraphs (``kb/wiki_vital10k_en.jsonl``) of every subject that
T-REx (``kg/trex/P*.jsonl``) gives for that property and object. Subjects join the paragraphs by
exact title (case-insensitive, whitespace-normalised). Queries with fewer than ``--min-rel`` or more
than ``--max-rel`` relevant paragraphs are dropped; the corpus is every relevant paragraph plus a
seeded sample of the other paragraphs as distractors, ``--docs`` in all; the queries split into dev
and test (seeded, stratified by property).

Two guards against false judgements, both documented in the card:

* **Subject kinds.** A title match can be a homonym: T-REx's "Heart" (the band, original language
  Italian) lands on the paragraph about the organ, "Eclipse" (IBM's IDE) on the astronomical event.
  Each template names the kinds of subject its property takes (person, place, organisation, work,
  culture, any); a paragraph counts only when its topic or Wikidata short description fits one
  of them (:func:`fits`). The kinds are keyword tests on the description, so they also drop a few
  true subjects whose description names no kind.
* **Symmetric properties** (shares border with, twinned with): T-REx holds one direction of each
  pair; the other is added, so "places that border Austria" also finds Austria's neighbours listed
  as T-REx subjects with Austria as object.

Judgements are incomplete by construction: T-REx holds a sample of each property's facts, so a
distractor can be a true but unjudged answer (a Vienna-born composer absent from the T-REx sample).
Scores are comparable between retrievers on this set, not with the property's true extension.

``python benchmarks/entity_set.py --shared-data ../shared/data`` writes
``runs/datasets/entity-lists/`` (``corpus.jsonl``, ``queries.jsonl`` and per split
``queries_{dev,test}.jsonl``, ``qrels/{dev,test}.tsv``, ``card.json``); the same arguments give
byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

KB_FILE = "kb/wiki_vital10k_en.jsonl"
TREX_DIR = "kg/trex"
LICENCES = {
    KB_FILE: "Wikipedia text, CC BY-SA 4.0",
    TREX_DIR: "T-REx facts (ParaRel release), MIT",
}


@dataclass(frozen=True)
class Template:
    """How one Wikidata property becomes a list query.

    ``text`` has ``{obj}`` (the object label) or ``{a_obj}`` (the label after "a" or "an");
    ``kinds`` are the subject kinds the property takes (see :data:`KIND_PATTERNS`; "any" checks
    nothing); ``symmetric`` properties hold in both directions.
    """

    text: str
    kinds: tuple[str, ...] = ("any",)
    symmetric: bool = False


# The template table: one user-style question per T-REx property. Left out, with the reason:
#   P36 capital, P1376 capital of: one answer per object (a country has one capital).
#   P530 diplomatic relation: nearly every country relates to every other; T-REx's sample of them
#   would judge an arbitrary fraction of the true answers.
#   P1001 applies to jurisdiction: its subjects (degrees, offices, laws) make no list a user asks for.
TEMPLATES: dict[str, Template] = {
    # people
    "P19": Template("people born in {obj}", ("person",)),
    "P20": Template("people who died in {obj}", ("person",)),
    "P27": Template("people who are citizens of {obj}", ("person",)),
    "P101": Template("people who work in the field of {obj}", ("person",)),
    "P103": Template("people whose native language is {obj}", ("person",)),
    "P106": Template("people who worked as {a_obj}", ("person",)),
    "P108": Template("people employed by {obj}", ("person",)),
    "P1303": Template("musicians who play the {obj}", ("person",)),
    "P1412": Template("people who speak or write {obj}", ("person",)),
    "P39": Template("people who held the position of {obj}", ("person",)),
    "P413": Template("players who play as {a_obj}", ("person",)),
    "P937": Template("people who worked in {obj}", ("person",)),
    "P140": Template("people and states whose religion is {obj}", ("person", "place")),
    "P264": Template("artists signed to the {obj} label", ("person", "org")),
    # places
    "P17": Template("places and things in the country {obj}"),
    "P30": Template("countries and places in {obj}", ("place",)),
    "P131": Template("places located in {obj}", ("place", "org")),
    "P37": Template("places where {obj} is an official language"),
    "P47": Template("places that border {obj}", ("place",), symmetric=True),
    "P190": Template("twin towns and sister cities of {obj}", ("place",), symmetric=True),
    "P276": Template("events and landmarks located in {obj}"),
    # organisations
    "P159": Template("organisations headquartered in {obj}", ("org",)),
    "P463": Template("members of {obj}"),
    "P740": Template("groups and organisations formed in {obj}", ("org",)),
    "P127": Template("things owned by {obj}", ("work", "org", "place")),
    # works and products
    "P136": Template("works and artists in the {obj} genre", ("person", "org", "work")),
    "P176": Template("products made by {obj}", ("work",)),
    "P178": Template("software and games developed by {obj}", ("work",)),
    "P364": Template("works originally in {obj}", ("work",)),
    "P407": Template("works written in {obj}", ("work",)),
    "P449": Template("shows first broadcast on {obj}", ("work",)),
    "P495": Template("works and traditions that come from {obj}", ("work", "culture", "org")),
    # concepts
    "P31": Template("examples of {a_obj}"),
    "P279": Template("kinds of {obj}"),
    "P361": Template("things that are part of {obj}"),
    "P527": Template("things that include {obj}"),
    "P138": Template("things named after {obj}"),
}

# A paragraph fits a kind when its topic is the kind's topic or its Wikidata short description
# matches the kind's pattern (whole words, case-insensitive).
KIND_TOPICS = {"person": "People", "place": "Geography"}
KIND_PATTERNS: dict[str, re.Pattern[str]] = {
    # a person's short description carries years ("(1887-1938)", "born 1950", "1st-century-BC")
    # or, for figures of legend and scripture, a role
    "person": re.compile(
        r"\d|\b(figure|prophet|patriarch|king|queen|monarch|emperor|pharaoh|saint|apostle)\b",
        re.IGNORECASE,
    ),
    "place": re.compile(
        r"\b(countr(y|ies)|city|capital|town|municipality|region|province|state|island|territory|"
        r"republic|kingdom|empire|county|district|continent|village|collectivity|jurisdiction|"
        r"federation|sultanate|caliphate|peninsula|archipelago|prefecture|emirate|metropolis|"
        r"port|tower|building|palace|cathedral|church|mosque|temple|museum|park|bridge|monument|"
        r"river|mountains?|lake|sea|ocean|desert|forest|valley|plateau|steppe|basin)\b",
        re.IGNORECASE,
    ),
    "org": re.compile(
        r"\b(company|organi[sz]ation|university|agency|band|group|duo|corporation|conglomerate|"
        r"manufacturer|party|club|union|league|exchange|institute|college|bank|network|"
        r"broadcaster|alliance|association|movement|record label|orchestra|choir)\b",
        re.IGNORECASE,
    ),
    "work": re.compile(
        r"\b(film|novel|novella|opera|play|poem|epic|books?|series|games?|franchise|newspaper|"
        r"magazine|album|song|painting|sculpture|symphony|television|sitcom|software|"
        r"operating system|smartphones?|computers?|console|programming language|encyclopedia|"
        r"comic|manga|anime|musical|ballet|platform|aircraft|car|automobile|vehicle|rifle|"
        r"tragedy|comedy|single|treaty|literature|work)\b",
        re.IGNORECASE,
    ),
    "culture": re.compile(
        r"\b(sport|genre|food|dish|cuisine|dance|martial art|style|event|instrument|drink|"
        r"beverage|cheese|breed)\b",
        re.IGNORECASE,
    ),
}


def norm_title(text: str) -> str:
    """The join key of a title or label: whitespace collapsed, case folded."""
    return " ".join(text.split()).casefold()


def fits(row: Mapping[str, str], kinds: Sequence[str]) -> bool:
    """Whether the paragraph ``row`` (with ``topic``, ``wikidata_description``) is of one of ``kinds``."""
    if "any" in kinds:
        return True
    topic = row.get("topic") or ""
    desc = row.get("wikidata_description") or ""
    return any(
        topic == KIND_TOPICS.get(kind) or bool(KIND_PATTERNS[kind].search(desc)) for kind in kinds
    )


def query_text(template: Template, obj: str) -> str:
    """The question for object ``obj``."""
    article = "an" if obj[:1].lower() in "aeiou" else "a"
    return template.text.format(obj=obj, a_obj=f"{article} {obj}")


def slug(text: str) -> str:
    """An ASCII id fragment for a label (``"São Paulo"`` -> ``"sao-paulo"``)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


@dataclass
class Benchmark:
    """What :func:`build` returns: rows ready to write, and the counts for the card."""

    corpus: list[dict[str, str]]
    queries: list[dict]
    qrels: dict[str, dict[str, list[str]]]  # split -> query id -> relevant doc ids
    stats: dict = field(default_factory=dict)


def candidate_queries(
    kb_rows: Sequence[Mapping[str, str]],
    facts: Mapping[str, Iterable[tuple[str, str]]],
    templates: Mapping[str, Template] = TEMPLATES,
) -> tuple[dict[tuple[str, str], set[int]], dict[str, Counter]]:
    """Every (property, object) with the indices of its relevant paragraphs in ``kb_rows``.

    ``facts`` maps a property id to its (subject label, object label) pairs; properties without a
    template are ignored. Objects with an empty label are dropped, and so is a paragraph that is
    the object itself. Returns the candidates (keyed by property and the object label as first
    seen, case variants of one object merged) and per-property counts of why facts were left out.
    """
    by_title: dict[str, int] = {}
    for i, row in enumerate(kb_rows):
        by_title.setdefault(norm_title(row["title"]), i)
    found: dict[tuple[str, str], set[int]] = defaultdict(set)
    label_of: dict[tuple[str, str], str] = {}
    dropped: dict[str, Counter] = defaultdict(Counter)
    for prop in sorted(facts):
        template = templates.get(prop)
        if template is None:
            continue
        pairs = list(facts[prop])
        if template.symmetric:
            pairs += [(o, s) for s, o in pairs]
        for sub, obj in pairs:
            obj = " ".join((obj or "").split())
            if not obj:
                dropped[prop]["object without a label"] += 1
                continue
            doc = by_title.get(norm_title(sub or ""))
            if doc is None:
                dropped[prop]["subject not in the corpus"] += 1
                continue
            if norm_title(obj) == norm_title(kb_rows[doc]["title"]):
                dropped[prop]["subject is the object"] += 1
                continue
            if not fits(kb_rows[doc], template.kinds):
                dropped[prop]["subject of the wrong kind (homonym guard)"] += 1
                continue
            key = (prop, norm_title(obj))
            label_of.setdefault(key, obj)
            found[key].add(doc)
    return {(p, label_of[(p, o)]): docs for (p, o), docs in found.items()}, dropped


def split_queries(keys: Sequence[tuple[str, str]], seed: int) -> dict[tuple[str, str], str]:
    """Assign each (property, object) to dev or test: shuffled within each property with a seeded
    generator, then dealt alternately, carrying the turn across properties so odd-sized properties
    do not all tip the same way."""
    by_prop: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in keys:
        by_prop[key[0]].append(key)
    out: dict[tuple[str, str], str] = {}
    turn = 0
    for prop in sorted(by_prop):
        group = sorted(by_prop[prop])
        random.Random(f"{seed}:split:{prop}").shuffle(group)
        for key in group:
            out[key] = ("dev", "test")[turn]
            turn ^= 1
    return out


def cap_per_property(keys: Sequence[tuple[str, str]], cap: int, seed: int) -> list[tuple[str, str]]:
    """At most ``cap`` keys per property (a seeded sample; 0: all), sorted."""
    if cap <= 0:
        return sorted(keys)
    by_prop: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in sorted(keys):
        by_prop[key[0]].append(key)
    out = []
    for prop, group in by_prop.items():
        if len(group) > cap:
            group = random.Random(f"{seed}:cap:{prop}").sample(group, cap)
        out += group
    return sorted(out)


def _query_ids(keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Readable, stable ids ``<property>-<slug of object>``; a hash suffix where slugs collide."""
    ids: dict[tuple[str, str], str] = {}
    taken: Counter = Counter(f"{p}-{slug(o)}" for p, o in keys)
    for p, o in sorted(keys):
        base = f"{p}-{slug(o)}"
        if taken[base] > 1 or not slug(o):
            base += "-" + hashlib.sha1(o.encode("utf-8")).hexdigest()[:8]
        ids[(p, o)] = base
    return ids


def build(
    kb_rows: Sequence[Mapping[str, str]],
    facts: Mapping[str, Iterable[tuple[str, str]]],
    *,
    min_rel: int = 2,
    max_rel: int = 30,
    docs: int = 5000,
    max_per_property: int = 40,
    seed: int = 13,
    templates: Mapping[str, Template] = TEMPLATES,
) -> Benchmark:
    """Build the benchmark from parsed rows (``kb_rows``: dicts with ``title``, ``text`` and
    optionally ``topic``, ``wikidata_description``; ``facts``: property -> (subject, object)
    pairs). Document ids are ``"w<index in kb_rows>"``. Deterministic in its arguments.

    A property with more than ``max_per_property`` queries in range keeps a seeded sample of
    that many (0: no cap), so that a few dense properties (twin towns, borders) do not make up
    most of the set.

    The corpus holds every relevant paragraph even when they alone exceed ``docs``.
    """
    if min_rel < 1 or max_rel < min_rel:
        raise ValueError(f"need 1 <= min_rel <= max_rel, got {min_rel}, {max_rel}")
    candidates, dropped = candidate_queries(kb_rows, facts, templates)
    sizes = Counter(len(d) for d in candidates.values())
    in_range = {k: d for k, d in candidates.items() if min_rel <= len(d) <= max_rel}
    keys = cap_per_property(sorted(in_range), max_per_property, seed)
    kept = {k: in_range[k] for k in keys}
    ids = _query_ids(keys)
    splits = split_queries(keys, seed)

    relevant = sorted({i for d in kept.values() for i in d})
    rest = sorted(set(range(len(kb_rows))) - set(relevant))
    room = max(docs - len(relevant), 0)
    distractors = random.Random(f"{seed}:distractors").sample(rest, min(room, len(rest)))
    chosen = sorted({*relevant, *distractors})
    corpus = [
        {"_id": f"w{i}", "title": kb_rows[i]["title"], "text": kb_rows[i]["text"]} for i in chosen
    ]

    queries = []
    qrels: dict[str, dict[str, list[str]]] = {"dev": {}, "test": {}}
    for key in sorted(keys, key=lambda k: ids[k]):
        prop, obj = key
        qid = ids[key]
        queries.append(
            {
                "_id": qid,
                "text": query_text(templates[prop], obj),
                "metadata": {"property": prop, "object": obj, "split": splits[key]},
            }
        )
        qrels[splits[key]][qid] = [f"w{i}" for i in sorted(kept[key])]

    n_rel = [len(d) for d in kept.values()]
    per_prop: dict[str, dict[str, int]] = {}
    for key in keys:
        row = per_prop.setdefault(key[0], {"dev": 0, "test": 0})
        row[splits[key]] += 1
    stats = {
        "documents": len(corpus),
        "relevant_documents": len(relevant),
        "distractors": len(corpus) - len(relevant),
        "queries": {s: len(q) for s, q in qrels.items()},
        "judgements": {s: sum(map(len, q.values())) for s, q in qrels.items()},
        "relevant_per_query": {
            "min": min(n_rel, default=0),
            "median": statistics.median(n_rel) if n_rel else 0,
            "max": max(n_rel, default=0),
        },
        "queries_per_property": {p: per_prop[p] for p in sorted(per_prop)},
        "candidates_dropped": {
            f"fewer than {min_rel} relevant": sum(n for k, n in sizes.items() if k < min_rel),
            f"more than {max_rel} relevant": sum(n for k, n in sizes.items() if k > max_rel),
            f"over the cap of {max_per_property} per property": len(in_range) - len(kept),
        },
        "facts_dropped": {p: dict(sorted(dropped[p].items())) for p in sorted(dropped)},
    }
    return Benchmark(corpus, queries, qrels, stats)


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_trex(folder: Path, properties: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """The (subject label, object label) pairs of each property that has a file in ``folder``."""
    facts = {}
    for prop in sorted(properties):
        path = folder / f"{prop}.jsonl"
        if path.is_file():
            facts[prop] = [
                (r.get("sub_label", ""), r.get("obj_label", "")) for r in read_jsonl(path)
            ]
    return facts


def _dump_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def write_beir(bench: Benchmark, out: Path, card: Mapping) -> None:
    """Write the benchmark in the BEIR layout (:func:`write_set`)."""
    write_set(out, bench.corpus, bench.queries, bench.qrels, card)


def write_set(
    out: Path,
    corpus: list[dict],
    queries: list[dict],
    qrels: Mapping[str, Mapping[str, list[str]]],
    card: Mapping,
) -> None:
    """Write ``corpus.jsonl``, ``queries.jsonl`` (all queries), ``queries_<split>.jsonl`` (each
    split's own, which BEIR readers take first, so none notes the other split's queries as
    unjudged), ``qrels/<split>.tsv`` and ``card.json``; the synthetic sets' builders
    (``implicit_places.py``, ``venue_posts.py``) write theirs with it too."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    _dump_jsonl(out / "corpus.jsonl", corpus)
    _dump_jsonl(out / "queries.jsonl", queries)
    for split, rows in qrels.items():
        _dump_jsonl(out / f"queries_{split}.jsonl", (q for q in queries if q["_id"] in rows))
        with open(out / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for qid in sorted(rows):
                for did in rows[qid]:
                    fh.write(f"{qid}\t{did}\t1\n")
    (out / "card.json").write_text(
        json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8", newline="\n"
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> Benchmark:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("runs/datasets/entity-lists"))
    parser.add_argument(
        "--docs", type=int, default=5000, help="corpus size (relevant + distractors)"
    )
    parser.add_argument(
        "--min-rel", type=int, default=2, help="fewest relevant documents a query keeps"
    )
    parser.add_argument(
        "--max-rel", type=int, default=30, help="most relevant documents a query keeps"
    )
    parser.add_argument(
        "--max-per-property", type=int, default=40, help="most queries one property keeps (0: all)"
    )
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)

    kb_path = args.shared_data / KB_FILE
    trex = args.shared_data / TREX_DIR
    if not kb_path.is_file() or not trex.is_dir():
        parser.error(f"{args.shared_data} lacks {KB_FILE} or {TREX_DIR}/ (see --shared-data)")
    kb_rows = read_jsonl(kb_path)
    facts = read_trex(trex, TEMPLATES)
    bench = build(
        kb_rows,
        facts,
        min_rel=args.min_rel,
        max_rel=args.max_rel,
        docs=args.docs,
        max_per_property=args.max_per_property,
        seed=args.seed,
    )
    sources = {KB_FILE: _sha256(kb_path)}
    sources.update({f"{TREX_DIR}/{p}.jsonl": _sha256(trex / f"{p}.jsonl") for p in sorted(facts)})
    card = {
        "name": "entity-lists",
        "description": __doc__.splitlines()[0],
        "task": "list-style entity queries answered by Wikipedia lead paragraphs; "
        "relevance = the paragraph's subject has the queried fact in T-REx",
        "sources_sha256": sources,
        "licences": LICENCES,
        "seed": args.seed,
        "parameters": {
            "docs": args.docs,
            "min_rel": args.min_rel,
            "max_rel": args.max_rel,
            "max_per_property": args.max_per_property,
        },
        "templates": {
            p: {"text": t.text, "subject_kinds": list(t.kinds), "symmetric": t.symmetric}
            for p, t in sorted(TEMPLATES.items())
        },
        "left_out_properties": {
            "P36": "capital: one answer per object",
            "P1376": "capital of: one answer per object",
            "P530": "diplomatic relation: near-universal, T-REx judges an arbitrary sample",
            "P1001": "applies to jurisdiction: no meaningful list question",
        },
        "notes": [
            "Subjects join paragraphs by exact title (case-insensitive, whitespace-normalised), "
            "kept only when the paragraph's topic or Wikidata description fits the property's "
            "subject kinds (homonym guard).",
            "Symmetric properties (P47, P190) are read in both directions.",
            "Judgements are incomplete: T-REx samples each property's facts, so a distractor may "
            "be an unjudged true answer.",
        ],
        "counts": bench.stats,
        "command": " ".join(["python", "benchmarks/entity_set.py", *argv]),
    }
    write_beir(bench, args.out, card)
    s = bench.stats
    print(
        f"{args.out}: {s['documents']} documents ({s['relevant_documents']} relevant), "
        f"queries dev {s['queries']['dev']} / test {s['queries']['test']}, relevant per query "
        f"min {s['relevant_per_query']['min']} median {s['relevant_per_query']['median']} "
        f"max {s['relevant_per_query']['max']}"
    )
    return bench


if __name__ == "__main__":
    main()
