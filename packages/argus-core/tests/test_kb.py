"""Reference KB: BM25 scores against a hand computation, lookups, cache, persistence, bad input."""

from __future__ import annotations

import json
import math

import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.kb import Passage, ReferenceKB

PASSAGES = [
    Passage(
        "p1", "Niels Bohr", "Danish physicist who worked on atomic structure.", "Danish physicist"
    ),
    Passage("p2", "Copenhagen", "Capital city of Denmark, home of Bohr's institute."),
    Passage("p3", "Lucknow", "Capital of the Indian state of Uttar Pradesh."),
    Passage("p4", "Nile", "Major river flowing north through Egypt."),
]


@pytest.fixture(scope="module")
def kb() -> ReferenceKB:
    return ReferenceKB.from_passages(PASSAGES)


def _lucene_bm25(term: str, docs: list[list[str]], k1: float = 1.5, b: float = 0.75) -> list[float]:
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = sum(term in d for d in docs)
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return [idf * d.count(term) / (d.count(term) + k1 * (1 - b + b * len(d) / avgdl)) for d in docs]


def _bm25s_index(texts: list[str]):
    """bm25s's own index of ``texts``: the independent implementation argus's is checked against."""
    import bm25s

    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    return index


def test_scores_match_a_hand_computed_bm25(kb):
    import bm25s

    docs = bm25s.tokenize(
        [f"{p.title} {p.text}" for p in PASSAGES],
        stopwords="en",
        return_ids=False,
        show_progress=False,
    )
    expected = _lucene_bm25("bohr", docs)
    hits = kb.lookup("Bohr", k=4)
    # p3 and p4 share no term and are not returned; the rest come best first
    want = sorted(((s, p.id) for s, p in zip(expected, PASSAGES) if s > 0), reverse=True)
    assert [p.id for p, _ in hits] == [pid for _, pid in want]
    assert [s for _, s in hits] == pytest.approx([s for s, _ in want], rel=1e-5)


def test_postings_scores_are_bm25s_own_to_the_bit_and_ties_go_by_row():
    """Lookups sum only the query words' postings; the scores must be those bm25s computes over
    every passage (float32, term by term), and equal scores must come in row order."""
    from argus_ir.kb.reference import postings_scores, rank

    twins = [
        Passage(f"t{i}", f"Harbour {i}", "A small fishing harbour on the coast.") for i in range(6)
    ]
    kb = ReferenceKB.from_passages(PASSAGES + twins)
    oracle = _bm25s_index([f"{p.title} {p.text}" for p in kb.passages])
    for words in (
        ["bohr"],
        ["capital", "denmark"],
        ["harbour"],
        ["harbour", "harbour"],
        ["nile", "x"],
    ):
        rows, scores = postings_scores(kb.index, words)
        full = oracle.get_scores(words)
        assert rows.tolist() == sorted(int(i) for i in full.nonzero()[0])
        assert scores.tobytes() == full[rows].tobytes()
    # the six harbours tie on "fishing": best first, then by row
    ranked = rank(kb.index, "fishing", k=3)
    assert [r for r, _ in ranked] == [4, 5, 6]
    assert len({s for _, s in ranked}) == 1


def test_lookup_top_k_and_no_hit(kb):
    assert kb.lookup("Niels Bohr")[0][0].title == "Niels Bohr"
    assert len(kb.lookup("Niels Bohr", k=1)) == 1
    assert kb.lookup("Zanzibar") == []
    assert kb.lookup("the") == []  # only a stopword: no query term at all
    assert kb.lookup("") == []
    with pytest.raises(ArgusInputError, match="k must be at least 1"):
        kb.lookup("Nile", k=0)


def test_lookups_are_cached_per_normalised_form(kb):
    first = kb.lookup("Lucknow")
    assert kb.lookup("  LUCKNOW ") is first


def test_save_load_round_trip_without_pickle(kb, tmp_path):
    folder = kb.save(tmp_path / "kb")
    assert not [f for f in folder.rglob("*") if f.suffix in {".pkl", ".pickle"}]
    again = ReferenceKB.load(folder)
    assert again.fingerprint == kb.fingerprint and len(again) == len(kb)
    for q in ("Niels Bohr", "capital", "river Egypt"):
        assert [(p.id, round(s, 6)) for p, s in again.lookup(q)] == [
            (p.id, round(s, 6)) for p, s in kb.lookup(q)
        ]
    assert again.passages[0].description == "Danish physicist"


def test_bad_kb_input(tmp_path):
    with pytest.raises(ArgusInputError, match="duplicate KB passage id 'p1'"):
        ReferenceKB.from_passages([PASSAGES[0], PASSAGES[0]])
    with pytest.raises(ArgusInputError, match="KB passage 'x' has neither title nor text"):
        ReferenceKB.from_passages([Passage("x", " ", "")])
    with pytest.raises(ArgusInputError, match="no passage"):
        ReferenceKB.from_passages([])
    bad = tmp_path / "kb.jsonl"
    bad.write_text(json.dumps({"title": "A", "text": "a text"}) + "\n" + '{"title": "B"}\n')
    with pytest.raises(ArgusInputError, match=r"kb\.jsonl:2: KB record lacks a text 'text' field"):
        ReferenceKB.from_file(bad)
    with pytest.raises(ArgusInputError, match="not a reference KB folder"):
        ReferenceKB.load(tmp_path)


def test_from_file_reads_descriptions(tmp_path):
    path = tmp_path / "kb.jsonl"
    rows = [
        {"title": p.title, "text": p.text, "wikidata_description": p.description} for p in PASSAGES
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    kb = ReferenceKB.from_file(path)
    assert kb.passages[0] == Passage(
        "Niels Bohr", "Niels Bohr", PASSAGES[0].text, "Danish physicist"
    )


def test_default_kb_is_the_shipped_wikipedia_paragraphs():
    kb = ReferenceKB.default()
    assert len(kb) == 10_033
    (top, _), *_ = kb.lookup("Niels Bohr")
    assert top.title == "Niels Bohr" and top.description


def test_the_passage_titled_with_the_form_comes_first():
    passages = [
        Passage("city", "Lucknow", "Lucknow is the capital of Uttar Pradesh, India. It is old."),
        Passage("pact", "Lucknow Pact", "The Lucknow Pact was an agreement of 1916."),
    ]
    import bm25s

    kb = ReferenceKB.from_passages(passages)
    docs, scores = _bm25s_index([f"{p.title} {p.text}" for p in passages]).retrieve(
        bm25s.tokenize(["Lucknow"], stopwords="en", show_progress=False),
        k=2,
        show_progress=False,
    )
    bm25 = {passages[int(i)].id: float(s) for i, s in zip(docs[0], scores[0])}
    assert bm25["pact"] > bm25["city"]  # plain BM25 prefers the shorter passage
    hits = kb.lookup("lucknow", k=2)
    assert [(p.id, round(s, 6)) for p, s in hits] == [
        ("city", round(bm25["city"], 6)),
        ("pact", round(bm25["pact"], 6)),
    ]
    assert [p.id for p, _ in kb.lookup("Lucknow", k=1)] == ["city"]


def test_a_damaged_kb_folder_is_refused_naming_the_file(tmp_path):
    from argus_ir.errors import ArgusInputError
    from argus_ir.kb import Passage, ReferenceKB

    kb = ReferenceKB.from_passages(
        [Passage(f"p{i}", f"Title {i}", f"Passage number {i} about Lyon.") for i in range(20)]
    )
    folder = kb.save(tmp_path / "kb")
    ReferenceKB.load(folder)  # intact: loads

    card = (folder / "kb.json").read_text("utf-8")
    (folder / "kb.json").write_text(card[: len(card) // 2], "utf-8")
    with pytest.raises(ArgusInputError, match=r"kb\.json: not a readable KB card"):
        ReferenceKB.load(folder)
    (folder / "kb.json").write_text(card, "utf-8")

    passages = (folder / "passages.jsonl").read_text("utf-8")
    (folder / "passages.jsonl").write_text(passages[: len(passages) // 2], "utf-8")
    with pytest.raises(ArgusInputError, match=r"passages\.jsonl:\d+: not a KB passage"):
        ReferenceKB.load(folder)
    (folder / "passages.jsonl").write_text(passages, "utf-8")

    biggest = max(
        (p for p in (folder / "bm25").iterdir() if p.is_file()), key=lambda p: p.stat().st_size
    )
    data = biggest.read_bytes()
    biggest.write_bytes(data[: len(data) // 3])
    with pytest.raises(ArgusInputError, match=r"bm25: cannot read the BM25 index"):
        ReferenceKB.load(folder, mmap=False)


def test_a_kb_with_the_old_lookup_signature_is_still_asked(kb):
    """A subclass written before lookups took label and context gets the surface form alone."""
    from argus_ir.kb import ask

    asked = []

    class Old(ReferenceKB):
        def lookup(self, surface, k=2):
            asked.append(surface)
            return super().lookup(surface, k)

    old = Old(kb.passages, kb.index, kb.fingerprint)
    assert ask(old, "Niels Bohr", 2, label="PERSON", context="text") == kb.lookup("Niels Bohr")
    assert asked == ["Niels Bohr"]
    assert ask(kb, "Nile", 1, label="LOC", context="text") == kb.lookup("Nile", 1)
