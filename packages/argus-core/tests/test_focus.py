"""Focus views: one short view per sentence that mentions flagged entities, each holding the
document's opening line and that sentence with the entities' KB descriptions; checked against
texts worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from argus_ir.collapse import SOURCE_KEY
from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.errors import ArgusInputError
from argus_ir.kb import Passage, ReferenceKB
from argus_ir.remedy import RemedyStats, apply_remedy, focus_texts, plan_remedy, sentence_spans
from argus_ir.text.mentions import Mention

TEXT = (
    "Germany\nGermany is a country in Central Europe. It borders Denmark to the north and "
    "Austria to the south. Berlin is its capital."
)
PASSAGES = {
    "Austria": Passage("austria", "Austria", "Austria is a landlocked country. It is alpine."),
    "Denmark": Passage("denmark", "Denmark", "Denmark is a Nordic country.", "Nordic country"),
    "Berlin": Passage("berlin", "Berlin", "Berlin is the capital of Germany."),
}


def _risk(text: str, surface: str, rps: float) -> EntityRisk:
    i = text.index(surface)
    return EntityRisk(surface, "GPE", rps, True, (Mention(i, i + len(surface), surface, "GPE"),))


def test_sentence_spans_split_lines_and_sentences():
    spans = sentence_spans(TEXT)
    assert [TEXT[a:b] for a, b in spans] == [
        "Germany",
        "Germany is a country in Central Europe.",
        "It borders Denmark to the north and Austria to the south.",
        "Berlin is its capital.",
    ]
    # an abbreviation followed by a lower-case word does not end a sentence
    assert len(sentence_spans("See e.g. the map. Then go.")) == 2
    assert sentence_spans("") == []


def test_focus_texts_by_hand():
    inserts = [(_risk(TEXT, s, 0.1), PASSAGES[s]) for s in ("Austria", "Denmark", "Berlin")]
    out = focus_texts(TEXT, inserts)
    assert out == [
        (
            "Germany\nIt borders Denmark (Nordic country) to the north and Austria "
            "(Austria is a landlocked country) to the south.",
            [0, 1],  # two entities of one sentence share its view
        ),
        ("Germany\nBerlin (Berlin is the capital of Germany) is its capital.", [2]),
    ]


def test_focus_of_the_opening_sentence_has_no_second_head():
    text = "Niels Bohr was a physicist. He lived in Copenhagen."
    out = focus_texts(text, [(_risk(text, "Niels Bohr", 0.1), Passage("b", "Niels Bohr", "x."))])
    assert out == [("Niels Bohr (x) was a physicist.", [0])]


def test_focus_trims_a_long_sentence_around_the_mention():
    words = [f"w{i}" for i in range(300)]
    words[200] = "Lucknow"
    text = "Head line.\n" + " ".join(words) + "."
    ((view, _),) = focus_texts(text, [(_risk(text, "Lucknow", 0.1), PASSAGES["Berlin"])])
    head, sentence = view.split("\n")
    assert head == "Head line."
    kept = sentence.split()
    assert "Lucknow" in kept and len(kept) <= 80 + 6  # the window plus the description's words
    assert "w0" not in kept and "w299" not in kept


def test_apply_remedy_focus_lineage_budget_and_originals():
    kb = ReferenceKB.from_passages(list(PASSAGES.values()))
    vec = np.zeros(3, dtype=np.float32)
    risks = (_risk(TEXT, "Austria", 0.2), _risk(TEXT, "Denmark", 0.3), _risk(TEXT, "Berlin", 0.1))
    diagnoses = [Diagnosis("g", risks, 0.5, vec), Diagnosis("e", (), 0.5, vec)]
    docs = [("g", TEXT), ("e", "Nothing here.")]
    stats = RemedyStats()
    out = list(apply_remedy(docs, diagnoses, kb, kind="focus", stats=stats))
    assert [v.id for v in out if v.is_original] == ["g", "e"]
    views = [v for v in out if not v.is_original]
    assert len(views) == 2 and stats.views == 2  # three entities, two sentences
    by_kb = {v.metadata["argus_kb_id"]: v for v in views}
    assert set(by_kb) == {"austria|denmark", "berlin"}
    assert by_kb["austria|denmark"].metadata["argus_entity"] == "Austria|Denmark"
    assert all(v.metadata[SOURCE_KEY] == "g" and v.metadata["argus_view"] == "focus" for v in views)
    again = [v.id for v in apply_remedy(docs, diagnoses, kb, kind="focus")]
    assert again == [v.id for v in out]  # stable ids
    # a budget of one: the riskiest entity (Berlin, rps 0.1) alone
    budget = [v for v in apply_remedy(docs, diagnoses, kb, kind="focus", max_views=1)]
    assert [v.metadata.get("argus_kb_id") for v in budget if not v.is_original] == ["berlin"]
    # the dry run bounds the count by one view per entity
    projected = dict(plan_remedy(diagnoses, kb, kind="focus"))
    assert projected == {"g": 3, "e": 0}


def test_focus_view_without_description_is_the_plain_sentence():
    text = "Head.\nIt lies on the Nile."
    empty = Passage("nile", "Nile", "")
    out = focus_texts(text, [(_risk(text, "Nile", 0.1), empty)])
    assert out == [("Head.\nIt lies on the Nile.", [0])]


@pytest.mark.parametrize("kind", ["focus"])
def test_focus_is_a_remedy_everywhere(kind):
    from argus_ir.eval import parse_variant
    from argus_ir.remedy import KINDS

    assert kind in KINDS
    assert parse_variant(f"{kind} max_views=2")[1] == kind


# -- in-corpus targeting -------------------------------------------------------------------------


def _diag(doc_id: str, *surfaces: str) -> Diagnosis:
    risks = tuple(EntityRisk(s, "X", 0.9, False, (Mention(0, len(s), s, "X"),)) for s in surfaces)
    return Diagnosis(doc_id, risks, 0.5, np.zeros(2, dtype=np.float32))


def test_max_reach_takes_each_documents_best_entity():
    from argus_ir.remedy.targeting import max_reach

    d = _diag("d", "a", "b")
    scored = Diagnosis(
        "d",
        tuple(
            EntityRisk(e.surface, e.label, r, r < 1, e.mentions)
            for e, r in zip(d.entities, (0.25, 0.5))
        ),
        1.0,
        d.doc_vector,
    )
    assert max_reach([scored, _diag("empty")]) == {"d": 0.5}


def test_targeting_variant_is_checked():
    from argus_ir.eval import parse_variant

    assert parse_variant("focus targeting=corpus")[2] == {"targeting": "corpus"}
    with pytest.raises(ArgusInputError, match="targeting is one of"):
        parse_variant("focus targeting=oracle")


def _diag_at(doc_id: str, angle: float, *surfaces: str) -> Diagnosis:
    d = _diag(doc_id, *surfaces)
    vec = np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))], dtype=np.float32)
    return Diagnosis(d.doc_id, d.entities, d.tau, vec)


def test_corpus_reach_against_a_pool_by_hand():
    from argus_ir.remedy.targeting import CorpusReach

    names = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
    calls: list[list[str]] = []

    def embed(texts):
        calls.append(list(texts))
        return np.array([names[t] for t in texts])

    reach = CorpusReach(embed, k=1, pool_size=3)
    pool = [_diag_at("p0", 0), _diag_at("p1", 30), _diag_at("p2", 60)]
    reach.add(pool[:2])
    assert not reach.full
    reach.add([*pool[2:], _diag_at("late", 10)])  # the pool keeps the first three only
    assert reach.full
    out = reach.score([_diag_at("x", 45, "a", "b"), _diag_at("p1", 30, "a")])
    got = {(d.doc_id, e.surface): round(e.rps, 6) for d in out for e in d.entities}
    # "a" at 0 degrees: x (45) ranks after p0 (0) and p1 (30): rank 3, reach 1/3;
    # "b" at 90 degrees: only p2 (60) is closer than x: rank 2, reach 1/2;
    # p1 for "a" competes with p0 and p2, not with itself: rank 2, reach 1/2
    assert got == {("x", "a"): round(1 / 3, 6), ("x", "b"): 0.5, ("p1", "a"): 0.5}
    assert all(e.flagged for d in out for e in d.entities)
    assert sum(len(c) for c in calls) == 2  # each name embedded once
    wide = CorpusReach(embed, k=3, pool_size=3)
    wide.add(pool)
    assert not any(e.flagged for d in wide.score([_diag_at("x", 45, "a")]) for e in d.entities)
    with pytest.raises(ValueError, match="pool is empty"):
        CorpusReach(embed).score([_diag_at("x", 45, "a")])
