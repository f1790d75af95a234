"""benchmarks/entity_set.py: the entity-list benchmark builder, on hand-made rows and the shared data.

The benchmarks folder is no package, so the script is imported by path.
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def es(load_benchmark):
    return load_benchmark("entity_set")


def _row(title, topic="Uncategorized", desc=""):
    return {
        "title": title,
        "text": f"{title} is described here.",
        "topic": topic,
        "wikidata_description": desc,
    }


KB = [
    _row("Vienna", "Geography", "Capital of Austria"),
    _row("Wolfgang Amadeus Mozart", "People", "Austrian composer (1756–1791)"),
    _row("Joseph Haydn", "People", "Austrian composer (1732–1809)"),
    _row("Franz Schubert", "People", "Austrian composer (1797–1828)"),
    _row("Heart", "Biology and health sciences", "Organ found in humans and other animals"),
    _row("Austria", "Geography", "Country in Central Europe"),
    _row("Germany", "Uncategorized", "Country in Europe"),
    _row("Hungary", "Geography", "Country in Central Europe"),
    _row("Don Giovanni", "Arts", "1787 opera by Mozart"),
    _row("The Marriage of Figaro", "Arts", "1786 opera by Mozart"),
    *(_row(f"Filler {i}", "Mathematics", "Branch of mathematics") for i in range(20)),
]
FACTS = {
    # born in Vienna: Haydn under another spacing and case, Schubert; Beethoven has no paragraph
    "P19": [
        ("  joseph   HAYDN ", "Vienna"),
        ("Franz Schubert", "Vienna"),
        ("Ludwig van Beethoven", "Vienna"),
        ("Wolfgang Amadeus Mozart", "Salzburg"),  # one subject: below min_rel
        ("Wolfgang Amadeus Mozart", ""),  # no object
        ("Joseph Haydn", "   "),
    ],
    "P20": [
        (name, "Vienna") for name in ("Wolfgang Amadeus Mozart", "Joseph Haydn", "Franz Schubert")
    ],
    # one direction only: Germany borders Austria as a subject, Hungary only as an object
    "P47": [("Germany", "Austria"), ("Austria", "Hungary")],
    # "Heart" here is the band, not the organ the paragraph is about
    "P364": [
        ("Don Giovanni", "Italian"),
        ("The Marriage of Figaro", "Italian"),
        ("Heart", "Italian"),
    ],
    "P36": [("Austria", "Vienna"), ("Hungary", "Vienna")],  # no template: never a query
}


def _titles(bench, kb=KB):
    """query text -> titles of its relevant documents."""
    title = {f"w{i}": row["title"] for i, row in enumerate(kb)}
    text = {q["_id"]: q["text"] for q in bench.queries}
    return {
        text[qid]: {title[d] for d in docs}
        for split in bench.qrels.values()
        for qid, docs in split.items()
    }


def test_relevant_documents_are_exactly_the_subjects_in_the_corpus(es):
    got = _titles(es.build(KB, FACTS, docs=15, seed=1))
    assert got["people born in Vienna"] == {"Joseph Haydn", "Franz Schubert"}
    assert got["people who died in Vienna"] == {
        "Wolfgang Amadeus Mozart",
        "Joseph Haydn",
        "Franz Schubert",
    }


def test_a_homonym_of_the_wrong_kind_is_not_relevant(es):
    got = _titles(es.build(KB, FACTS, docs=15, seed=1))
    assert got["works originally in Italian"] == {"Don Giovanni", "The Marriage of Figaro"}


def test_a_symmetric_property_is_read_both_ways(es):
    got = _titles(es.build(KB, FACTS, docs=15, seed=1))
    assert got["places that border Austria"] == {"Germany", "Hungary"}


def test_no_query_without_an_object_a_template_or_enough_subjects(es):
    bench = es.build(KB, FACTS, docs=15, seed=1)
    assert sorted(q["text"] for q in bench.queries) == [
        "people born in Vienna",
        "people who died in Vienna",
        "places that border Austria",
        "works originally in Italian",
    ]
    assert all(q["metadata"]["object"].strip() for q in bench.queries)


def test_query_count_bounds(es):
    tight = es.build(KB, FACTS, docs=15, max_rel=2, seed=1)
    assert "people who died in Vienna" not in _titles(tight)  # 3 > max_rel
    assert len(tight.queries) == 3
    wide = es.build(KB, FACTS, docs=15, min_rel=3, max_rel=3, seed=1)
    assert list(_titles(wide)) == ["people who died in Vienna"]
    single = es.build(KB, FACTS, docs=15, min_rel=1, seed=1)
    assert _titles(single)["people born in Salzburg"] == {"Wolfgang Amadeus Mozart"}


def test_the_corpus_is_every_relevant_document_plus_distractors_up_to_docs(es):
    bench = es.build(KB, FACTS, docs=15, seed=1)
    ids = [d["_id"] for d in bench.corpus]
    relevant = {d for split in bench.qrels.values() for docs in split.values() for d in docs}
    assert len(ids) == len(set(ids)) == 15
    assert relevant <= set(ids)
    assert all(d["title"] == KB[int(d["_id"][1:])]["title"] for d in bench.corpus)
    # fewer docs than relevant ones: the relevant ones stay, no distractor joins them
    small = es.build(KB, FACTS, docs=3, seed=1)
    assert {d["_id"] for d in small.corpus} == relevant


def _many(n_props=3, n_objects=7):
    kb = [
        _row(f"Person {p}-{o}-{s}", "People", "Someone (1900–1990)")
        for p in range(n_props)
        for o in range(n_objects)
        for s in range(2)
    ]
    kb += [_row(f"Filler {i}", "Mathematics", "Branch of mathematics") for i in range(20)]
    props = ["P19", "P20", "P937"][:n_props]
    facts = {
        prop: [(f"Person {p}-{o}-{s}", f"Town {o}") for o in range(n_objects) for s in range(2)]
        for p, prop in enumerate(props)
    }
    return kb, facts


def test_dev_and_test_are_disjoint_cover_all_queries_and_are_balanced(es):
    kb, facts = _many()
    bench = es.build(kb, facts, docs=50, seed=3)
    dev, test = set(bench.qrels["dev"]), set(bench.qrels["test"])
    assert not dev & test
    assert dev | test == {q["_id"] for q in bench.queries}
    assert len(dev | test) == 21
    assert abs(len(dev) - len(test)) <= 1
    for prop in ("P19", "P20", "P937"):  # stratified: each property splits about evenly
        n_dev = sum(q["metadata"]["property"] == prop and q["_id"] in dev for q in bench.queries)
        assert n_dev in (3, 4)
    assert all(
        q["metadata"]["split"] == ("dev" if q["_id"] in dev else "test") for q in bench.queries
    )


def test_the_cap_keeps_at_most_that_many_queries_per_property(es):
    kb, facts = _many()
    bench = es.build(kb, facts, docs=50, max_per_property=2, seed=3)
    props = [q["metadata"]["property"] for q in bench.queries]
    assert sorted(props) == ["P19", "P19", "P20", "P20", "P937", "P937"]
    assert len(es.build(kb, facts, docs=50, max_per_property=0, seed=3).queries) == 21


def test_same_arguments_give_byte_identical_files(es, tmp_path):
    kb, facts = _many()
    for name in ("a", "b"):
        es.write_beir(es.build(kb, facts, docs=50, seed=5), tmp_path / name, {"seed": 5})
    files = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert len(files) == 7
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    # the seed matters: another one draws other distractors and another split
    other = es.build(kb, facts, docs=50, seed=6)
    first = es.build(kb, facts, docs=50, seed=5)
    assert other.corpus != first.corpus
    assert other.qrels != first.qrels


def test_the_written_files_load_as_beir(es, tmp_path):
    from argus_ir.eval import load_beir

    bench = es.build(KB, FACTS, docs=15, seed=1)
    es.write_beir(bench, tmp_path, {"seed": 1})
    lines = (tmp_path / "qrels" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    assert all(line.endswith("\t1") for line in lines[1:])
    for split in ("dev", "test"):
        data = load_beir(tmp_path, split)
        assert data.qrels == {q: dict.fromkeys(d, 1) for q, d in bench.qrels[split].items()}
        assert len(data.corpus) == 15
        assert not data.notes


def test_the_shared_data_gives_enough_queries(es, shared_data, tmp_path):
    bench = es.main(["--shared-data", str(shared_data), "--out", str(tmp_path)])
    stats = bench.stats
    assert stats["documents"] == 5000
    assert sum(stats["queries"].values()) >= 150
    assert 2 <= stats["relevant_per_query"]["min"] <= stats["relevant_per_query"]["max"] <= 30
    card = json.loads((tmp_path / "card.json").read_text(encoding="utf-8"))
    assert card["counts"]["queries"] == stats["queries"]
