"""benchmarks/venue_posts.py: the venue-posts set, on hand-made T-REx facts and GeoNames rows.

The benchmarks folder is no package, so the script is imported by path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def vp(load_benchmark):
    return load_benchmark("venue_posts")


COUNTRIES = {
    "SI": {"name": "Slovenia"},
    "IT": {"name": "Italy"},
    "US": {"name": "United States"},
    "GB": {"name": "United Kingdom"},
}
CITIES = {
    1: {"name": "Bled", "countrycode": "SI", "population": 5000},
    2: {"name": "Bologna", "countrycode": "IT", "population": 390_000},
    3: {"name": "Springfield", "countrycode": "US", "population": 170_000},
    4: {"name": "Springfield", "countrycode": "GB", "population": 3000},  # two countries: unsure
}
STATES = {"TX": {"name": "Texas"}}


def _trex(tmp_path: Path) -> Path:
    facts = {
        "P17": [
            ("Bled Castle", "Slovenia"),
            ("Ljubljana Cathedral", "Slovenia"),
            ("Postojna Cave Park", "Slovenia"),
            ("Triglav Lodge Museum", "Slovenia"),
            ("Slovenia National Stadium", "Slovenia"),  # names its country: dropped
            ("Janez Novak", "Slovenia"),  # no venue word: dropped
        ],
        "P131": [
            ("Marsh Chapel", "Bologna"),
            ("Old Mill Museum", "Bologna"),
            ("Alamo Stadium", "Texas"),
            ("Lone Star Hall", "Texas"),
            ("Mystery Bridge", "Springfield"),  # a town of two countries: dropped
            ("Bologna Tower", "Bologna"),  # names its town: dropped
        ],
        "P276": [("Bled Castle", "Bled")],  # the same venue again: kept once
    }
    folder = tmp_path / "trex"
    folder.mkdir()
    for relation, rows in facts.items():
        lines = [json.dumps({"sub_label": s, "obj_label": o}) for s, o in rows]
        (folder / f"{relation}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_venues_are_resolved_to_one_country_or_dropped(vp, tmp_path) -> None:
    rows = vp.venues(_trex(tmp_path), CITIES, COUNTRIES, STATES)
    got = {r["name"]: (r["code"], r["town"]) for r in rows}
    assert got == {
        "Bled Castle": ("SI", None),
        "Ljubljana Cathedral": ("SI", None),
        "Postojna Cave Park": ("SI", None),
        "Triglav Lodge Museum": ("SI", None),
        "Marsh Chapel": ("IT", "Bologna"),
        "Old Mill Museum": ("IT", "Bologna"),
        "Alamo Stadium": ("US", None),
        "Lone Star Hall": ("US", None),
    }


def test_posts_name_no_country_and_qrels_follow_the_venues(vp, tmp_path) -> None:
    rows = vp.venues(_trex(tmp_path), CITIES, COUNTRIES, STATES)
    corpus, queries, qrels, stats = vp.build(rows, COUNTRIES, seed=3)
    assert stats["documents"] == len(corpus) == len(rows)
    docs = {d["_id"]: d for d in corpus}
    for d in corpus:
        assert not any(c["name"] in d["text"] for c in COUNTRIES.values()), d["text"]
        assert d["metadata"]["venue"] in d["text"]
    # every country with 4+ venues gets queries; each relevant post is of its country and activity
    asked = {q["_id"]: q for q in queries}
    split_of = {qid: s for s, cells in qrels.items() for qid in cells}
    assert set(split_of) == set(asked)
    for qid, split in split_of.items():
        q = asked[qid]
        relevant = qrels[split][qid]
        assert len(relevant) >= 2
        for did in relevant:
            code = docs[did]["metadata"]["country"]
            assert COUNTRIES[code]["name"] == q["metadata"]["country"]
            assert docs[did]["metadata"]["activity"] == q["metadata"]["activity"]
    # a country's queries are all in one split: dev and test ask about different countries
    countries_by_split = {
        s: {asked[q]["metadata"]["country"] for q in cells} for s, cells in qrels.items()
    }
    assert not countries_by_split["dev"] & countries_by_split["test"]
    assert countries_by_split["dev"] and countries_by_split["test"]


def test_the_same_seed_gives_the_same_set(vp, tmp_path) -> None:
    rows = vp.venues(_trex(tmp_path), CITIES, COUNTRIES, STATES)
    assert vp.build(rows, COUNTRIES, seed=3) == vp.build(rows, COUNTRIES, seed=3)
