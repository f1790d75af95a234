"""Remedies: entry counts, insert-only descriptor views, stable ids, originals that always pass
through; plus one run with the real diagnoser and the shipped KB."""

from __future__ import annotations

import numpy as np
import pytest

from argus_ir.collapse import SOURCE_KEY, collapse
from argus_ir.diagnose import Diagnosis, EntityRisk
from argus_ir.kb import Passage, ReferenceKB
from argus_ir.mentions import Mention
from argus_ir.remedy import RemedyStats, apply_remedy, insertions_only

KB_PASSAGES = [
    Passage("bohr", "Niels Bohr", "Niels Bohr was a Danish physicist.", "Danish physicist"),
    Passage("bohr-model", "Bohr model", "The Bohr model of the atom, proposed by Niels Bohr."),
    Passage("lucknow", "Lucknow", "Lucknow is the capital of Uttar Pradesh, India. It is old."),
    Passage("lucknow-pact", "Lucknow Pact", "The Lucknow Pact was an agreement of 1916."),
    Passage("nile", "Nile", "The Nile is a river in Africa."),
]

DOCS = [
    ("d1", "Niels Bohr visited Lucknow. Niels Bohr liked it."),
    ("d2", "The Nile floods."),
    ("d3", ""),
]


def _risk(text: str, surface: str, rps: float, tau: float = 0.3) -> EntityRisk:
    starts = [i for i in range(len(text)) if text.startswith(surface, i)]
    mentions = tuple(Mention(s, s + len(surface), surface, "X") for s in starts)
    return EntityRisk(surface, "X", rps, rps < tau, mentions)


def _diagnoses() -> list[Diagnosis]:
    d1, d2, _ = (t for _, t in DOCS)
    vec = np.zeros(3, dtype=np.float32)
    return [
        Diagnosis("d1", (_risk(d1, "Niels Bohr", 0.1), _risk(d1, "Lucknow", 0.2)), 0.3, vec),
        Diagnosis("d2", (_risk(d2, "Nile", 0.9),), 0.3, vec),
        Diagnosis("d3", (), 0.3, vec),
    ]


@pytest.fixture(scope="module")
def kb() -> ReferenceKB:
    return ReferenceKB.from_passages(KB_PASSAGES)


def test_expansion_yields_one_plus_k_aug_times_flagged_entries(kb):
    for k_aug in (1, 2):
        stats = RemedyStats()
        out = list(apply_remedy(DOCS, _diagnoses(), kb, k_aug=k_aug, stats=stats))
        per_doc = {d: sum(v.metadata[SOURCE_KEY] == d for v in out) for d, _ in DOCS}
        assert per_doc == {"d1": 1 + k_aug * 2, "d2": 1, "d3": 1}
        assert stats.views == 2 * k_aug and stats.flagged_entities == 2
        assert stats.index_growth == pytest.approx((3 + 2 * k_aug) / 3)
    views = [v for v in out if v.metadata["argus_view"] == "expansion"]
    assert {v.metadata["argus_kb_id"] for v in views} == {
        "bohr",
        "bohr-model",
        "lucknow",
        "lucknow-pact",
    }
    for v in views:
        assert v.text.startswith(DOCS[0][1] + "\n\n")  # d || p
        assert v.metadata["argus_rps"] in (0.1, 0.2)


def test_originals_come_first_and_unchanged(kb):
    out = list(apply_remedy(DOCS, _diagnoses(), kb))
    originals = [v for v in out if v.metadata["argus_view"] == "original"]
    assert [(v.id, v.text) for v in originals] == DOCS
    assert out[0].id == "d1"


def test_descriptor_view_only_inserts(kb):
    out = list(apply_remedy(DOCS, _diagnoses(), kb, kind="descriptor"))
    (view,) = [v for v in out if v.metadata["argus_view"] == "descriptor"]
    assert view.text == (
        "Niels Bohr (Danish physicist) visited Lucknow (Lucknow is the capital of Uttar Pradesh). "
        "Niels Bohr liked it."
    )
    assert insertions_only(DOCS[0][1], view.text)
    assert view.metadata["argus_entity"] == "Niels Bohr|Lucknow"


def test_insertions_only_rejects_changed_words():
    original = "Niels Bohr visited Lucknow."
    assert insertions_only(original, "Niels Bohr, a physicist, visited Lucknow in 1960.")
    assert not insertions_only(original, "Niels Bohr toured Lucknow.")
    assert not insertions_only(original, "Bohr visited Lucknow.")


def test_view_ids_are_stable_and_depend_on_settings(kb):
    first = [v.id for v in apply_remedy(DOCS, _diagnoses(), kb)]
    again = [v.id for v in apply_remedy(DOCS, _diagnoses(), ReferenceKB.from_passages(KB_PASSAGES))]
    assert first == again and len(set(first)) == len(first)
    originals = {d for d, _ in DOCS}
    other = {v.id for v in apply_remedy(DOCS, _diagnoses(), kb, k_aug=1)} - originals
    assert other and other.isdisjoint(set(first) - originals)  # k_aug is part of the settings


def test_originals_pass_through_when_every_augmentation_fails(kb, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("KB offline")

    monkeypatch.setattr(kb, "lookup", broken)
    stats = RemedyStats()
    out = list(apply_remedy(DOCS, _diagnoses(), kb, stats=stats))
    assert [(v.id, v.text) for v in out] == DOCS
    assert stats.failures == [("d1", "RuntimeError: KB offline")]  # d2, d3 have nothing flagged
    assert stats.views == 0


def test_kb_without_a_hit_adds_nothing(kb):
    text = "Zanzibar is warm."
    diag = Diagnosis("z", (_risk(text, "Zanzibar", 0.0),), 0.3, np.zeros(3))
    stats = RemedyStats()
    out = list(apply_remedy([("z", text)], [diag], kb, stats=stats))
    assert [v.id for v in out] == ["z"] and stats.no_kb_hit == 1


def test_bad_arguments(kb):
    with pytest.raises(ValueError, match="kind must be one of"):
        list(apply_remedy(DOCS, _diagnoses(), kb, kind="llm"))
    with pytest.raises(ValueError, match="diagnosis of 'd1' given for document 'x'"):
        list(apply_remedy([("x", "t")], _diagnoses()[:1], kb))


def test_collapse_folds_views_back_to_their_source(kb):
    out = list(apply_remedy(DOCS, _diagnoses(), kb))
    source = {v.id: v.metadata[SOURCE_KEY] for v in out}
    hits = [(v.id, float(i)) for i, v in enumerate(out)]  # later entries score higher
    assert [s for s, _ in collapse(hits, source)] == ["d3", "d2", "d1"]


def test_end_to_end_with_the_real_diagnoser(minilm):
    pytest.importorskip("spacy")
    from argus_ir.diagnose import Diagnoser
    from argus_ir.mentions import SpacyMentions
    from argus_ir.probes import load_shipped_probe

    docs = [("m1", "Humphrey Bogart once filmed a scene in Lucknow.")]
    diagnoser = Diagnoser(minilm, load_shipped_probe("minilm", 10), SpacyMentions())
    diags = diagnoser.diagnose([t for _, t in docs], [i for i, _ in docs])
    out = list(apply_remedy(docs, diags, ReferenceKB.default()))
    assert out[0].text == docs[0][1]
    assert len(out) == 1 + 2  # one flagged entity, two KB passages
    assert {v.metadata["argus_entity"] for v in out[1:]} == {"Humphrey Bogart"}
    assert "Humphrey Bogart" in {v.metadata["argus_kb_id"] for v in out[1:]}
