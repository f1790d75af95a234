"""Focus views: one short view per sentence that mentions flagged entities, each holding the
document's opening line and that sentence with the entities' KB descriptions; checked against
texts worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from argus_ir.collapse import SOURCE_KEY
from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.kb import Passage, ReferenceKB
from argus_ir.mentions import Mention
from argus_ir.remedy import RemedyStats, apply_remedy, focus_texts, plan_remedy, sentence_spans

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
    from argus_ir.evaluate import parse_variant
    from argus_ir.remedy import KINDS

    assert kind in KINDS
    assert parse_variant(f"{kind} max_views=2")[1] == kind


# -- in-corpus targeting -------------------------------------------------------------------------


def _diag(doc_id: str, *surfaces: str) -> Diagnosis:
    risks = tuple(EntityRisk(s, "X", 0.9, False, (Mention(0, len(s), s, "X"),)) for s in surfaces)
    return Diagnosis(doc_id, risks, 0.5, np.zeros(2, dtype=np.float32))


def test_reach_by_hand():
    from argus_ir.targeting import max_reach, reach_diagnoses

    # four documents on a circle; the name "a" points at 0 degrees, "b" at 90
    angles = np.radians([0, 30, 60, 90])
    docs = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    names = {"a": [1.0, 0.0], "b": [0.0, 1.0]}

    def embed(texts):
        return np.array([names[t] for t in texts])

    diagnoses = [_diag("d0", "a"), _diag("d2", "a", "b"), _diag("d3", "b")]
    out = reach_diagnoses(diagnoses, docs, ["d0", "d1", "d2", "d3"], embed, k=2)
    got = {(d.doc_id, e.surface): (e.rps, e.flagged) for d in out for e in d.entities}
    # "a" ranks d0, d1, d2, d3: d0 is 1st (reach 1), d2 3rd (reach 2/3, flagged)
    # "b" ranks d3, d2, d1, d0: d3 1st, d2 2nd (both reached)
    assert got == {
        ("d0", "a"): (1.0, False),
        ("d2", "a"): (pytest.approx(2 / 3), True),
        ("d2", "b"): (1.0, False),
        ("d3", "b"): (1.0, False),
    }
    assert all(d.tau == 1.0 for d in out)
    assert [e.mentions for d in out for e in d.entities] == [
        e.mentions for d in diagnoses for e in d.entities
    ]
    assert max_reach(out) == {"d0": 1.0, "d2": 1.0, "d3": 1.0}
    # a larger k reaches d2 by "a" as well
    wide = reach_diagnoses(diagnoses, docs, ["d0", "d1", "d2", "d3"], embed, k=3)
    assert not any(e.flagged for d in wide for e in d.entities)


def test_reach_refuses_a_document_outside_the_index():
    from argus_ir.targeting import reach_diagnoses

    with pytest.raises(ValueError, match="not in the index"):
        reach_diagnoses([_diag("zz", "a")], np.eye(2), ["d0", "d1"], lambda t: np.eye(2)[:1])
    with pytest.raises(ValueError, match="k must be"):
        reach_diagnoses([], np.eye(2), ["d0", "d1"], lambda t: t, k=0)


def test_targeting_variant_is_checked():
    from argus_ir.evaluate import parse_variant

    assert parse_variant("focus targeting=corpus")[2] == {"targeting": "corpus"}
    with pytest.raises(ValueError, match="targeting is one of"):
        parse_variant("focus targeting=oracle")
