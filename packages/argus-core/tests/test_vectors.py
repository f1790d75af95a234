"""Embed once (issue 53): ``Argus(embed=True)`` gives every record of the stream the retriever's
fp32 vector of its text, checked against sentence-transformers' own ``encode``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from argus_ir import Argus, RemedyStats
from argus_ir.testing import lead_documents, minilm_path

pytest.importorskip("spacy")
st = pytest.importorskip("sentence_transformers")

LONG = "Marie Curie worked in Paris. " * 200  # past max_chars below: passed through, no views
CORPUS = [
    {"_id": doc_id, "text": text, "title": meta["title"]}
    for doc_id, text, meta in lead_documents(60)
] + [
    {"_id": "long", "text": LONG},
    {"_id": "blank", "text": "  "},
    {"_id": "none", "text": None},
    {"_id": "zw", "text": "Humphrey\u200bBogart filmed a scene in Lucknow."},
]


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def model():
    return st.SentenceTransformer(str(minilm_path()), device="cpu")


@pytest.fixture(scope="module")
def argus():
    return Argus(embed=True, max_chars=3000, batch_size=16)


@pytest.fixture(scope="module")
def streamed(argus):
    stats = RemedyStats()
    batches = list(argus.process_batches(CORPUS, stats=stats))
    return [entry for batch in batches for entry in batch], stats


def test_every_record_carries_the_retrievers_own_vector_of_its_text(streamed, model):
    entries, stats = streamed
    records = [view for _, _, views in entries for view in views]
    assert sum(not v.is_original for v in records) >= 5  # views were made, and embedded
    assert len([v for v in records if v.is_original]) == len(CORPUS)
    got = np.stack([v.vector for v in records])
    assert got.dtype == np.float32 and got.shape == (len(records), 384)
    ref = model.encode([v.text for v in records], batch_size=32)
    cos = _cos(got, ref)
    assert cos.min() >= 0.9999, [records[i].id for i in np.nonzero(cos < 0.9999)[0]]
    # an original's text: title + newline + text, what argus evaluate indexes
    lead = next(v for v in records if v.id == "lead-0")
    row = next(r for r in CORPUS if r["_id"] == "lead-0")
    assert lead.text == f"{row['title']}\n{row['text']}"
    assert not stats.failures or all(doc_id == "long" for doc_id, _ in stats.failures)


def test_originals_take_the_pass_vector_and_only_other_texts_are_embedded(argus, monkeypatch):
    embedder = argus.embedder
    seen: list[str] = []
    encode = embedder._encode

    def spy(texts, show_progress):
        seen.extend(texts)
        return encode(texts, show_progress)

    monkeypatch.setattr(embedder, "_encode", spy)
    entries = [e for batch in argus.process_batches(CORPUS) for e in batch]
    by_id = {doc.id: (diagnosis, views) for doc, diagnosis, views in entries}
    diagnosis, views = by_id["lead-0"]
    assert views[0].vector is diagnosis.doc_vector  # the pass's own array, not a copy
    embedded = set(seen)
    for doc_id, (_, views) in by_id.items():
        original = views[0]
        # the pass read it (and it reads as written): not embedded again
        skipped = doc_id in ("long", "blank", "none")
        read_as_is = not skipped and "\u200b" not in original.text
        assert (original.text in embedded) is not read_as_is, doc_id
        assert all(v.text in embedded for v in views[1:])
    assert len(seen) == len(set(seen))  # each distinct string once


def test_the_pass_runs_in_fp32_when_it_gives_vectors():
    from argus_ir.card import settings_card

    card = settings_card(Argus(embed=True))
    assert card["precision"] == "fp32" and card["vectors"] == "fp32"
    assert "vectors" not in settings_card(Argus())


def test_a_bf16_pass_never_gives_bf16_vectors(argus, model):
    bf16 = Argus(embed=True, precision="bf16", max_chars=3000, batch_size=16)
    assert bf16.diagnoser.encoder.precision == "bf16"
    assert bf16.embedder.encoder.precision == "fp32" and not bf16.embedder.reuse
    records = list(bf16.augment(CORPUS[:12]))
    got = np.stack([v.vector for v in records])
    ref = model.encode([v.text for v in records])
    # bf16 vectors sit near cos 0.999 of fp32; fp32 ones at 1.0 to rounding
    assert _cos(got, ref).min() >= 0.99999


def test_with_the_setting_off_nothing_changes(argus):
    off = dataclasses.replace(argus, embed=False)
    on_views = list(argus.augment(CORPUS[:20]))
    off_views = list(off.augment(CORPUS[:20]))
    assert all(v.vector is None for v in off_views)
    # the pass ran in fp32 both ways here (precision "auto" off means bf16 on a bf16 host, so
    # compare the same pass): the records are the same, only the vectors added
    fp32_off = dataclasses.replace(argus, embed=False, precision="fp32")
    assert [(v.id, v.text, v.metadata) for v in fp32_off.augment(CORPUS[:20])] == [
        (v.id, v.text, v.metadata) for v in on_views
    ]
    assert len(off_views) >= 20


def test_a_text_the_tokenizer_refuses_gets_no_vector_and_a_failure(argus):
    stats = RemedyStats()
    views = list(argus.augment([{"_id": "bad", "text": "Curie \ud800 in Paris."}], stats=stats))
    # the diagnosis reads a lone surrogate as U+FFFD; the index gets the text as written
    assert views[0].id == "bad"
    failed = {doc_id for doc_id, why in stats.failures if why.startswith("vector: ")}
    assert failed == {v.id for v in views} and len(views) == 2  # the original and its view
    assert all(view.vector is None for view in views)
