"""The Argus facade with real parts (MiniLM, its shipped probe, spaCy NER, the shipped KB):
streaming, pickling, byte-for-byte reproducible output, and the bad inputs the issue lists."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from argus_ir import Argus, RemedyStats
from argus_ir.errors import ArgusInputError, ProbeMismatchError
from argus_ir.probes import load_shipped_probe, shipped_probes
from argus_ir.remedy.synthesis import insertions_only

pytest.importorskip("spacy")
pytest.importorskip("sentence_transformers")

CORPUS = [
    ("bogart", "Humphrey Bogart once filmed a scene in Lucknow."),
    ("plain", "The weather was mild and nobody was in a hurry."),
    ("none", None),
    ("blank", "   \n\t "),
    ("curie", "It was half past nine when Marie Curie left Paris for the laboratory."),
]


def _dump(views):
    return [(v.id, v.text, sorted(v.metadata.items())) for v in views]


@pytest.fixture(scope="module")
def argus():
    # the paper's expansion: k_aug = 2 passages per entity, the second a BM25 neighbour (the
    # default "checked" matching inserts only what is known by name: one passage)
    return Argus(remedy="expansion", batch_size=2, kb_match="bm25")


@pytest.fixture(scope="module")
def expanded(argus):
    stats = RemedyStats()
    return list(argus.augment(CORPUS, stats=stats)), stats


def test_expansion_end_to_end(expanded):
    views, stats = expanded
    originals = [v for v in views if v.is_original]
    assert [(v.id, v.text) for v in originals] == [(i, t or "") for i, t in CORPUS]
    bogart = [v for v in views if v.source_id == "bogart" and not v.is_original]
    assert {v.metadata["argus_entity"] for v in bogart} == {"Humphrey Bogart"}  # not Lucknow
    assert len(bogart) == 2 and all(v.text.startswith(CORPUS[0][1] + "\n\n") for v in bogart)
    assert stats.documents == 5 and stats.index_growth == pytest.approx(len(views) / 5)
    for doc_id in ("plain", "none", "blank"):  # nothing to flag: the original alone
        assert [v.id for v in views if v.source_id == doc_id] == [doc_id]


def test_output_is_identical_across_runs_batches_and_pickling(argus, expanded):
    views, _ = expanded
    fresh = Argus(remedy="expansion", batch_size=64, kb_match="bm25")
    assert _dump(fresh.augment(iter(CORPUS))) == _dump(views)  # streamed from a generator
    clone = pickle.loads(pickle.dumps(argus))  # after use: models are dropped, reload lazily
    assert not clone._loaded
    assert _dump(clone.augment(CORPUS)) == _dump(views)


def test_the_first_batch_is_small_and_batching_never_changes_the_output(argus):
    from argus_ir.pipeline import FIRST_BATCH

    corpus = [(f"{i}-{n}", t) for n in range(7) for i, t in CORPUS]  # 35 documents
    wide = dataclasses.replace(argus, batch_size=24)
    wide._loaded.update(argus._loaded)
    sizes = [len(b) for b in wide.process_batches(corpus)]
    assert sizes == [FIRST_BATCH, 24, 10] and FIRST_BATCH == 1
    one = [v for b in wide.process_batches(corpus) for _, _, vs in b for v in vs]
    narrow = dataclasses.replace(argus, batch_size=5)
    narrow._loaded.update(argus._loaded)
    assert [len(b) for b in narrow.process_batches(CORPUS)] == [1, 4]  # never above batch_size
    assert _dump(one) == _dump(narrow.augment(corpus))


def test_descriptor_views_only_insert(argus):
    descriptor = dataclasses.replace(argus, remedy="descriptor")
    views = list(descriptor.augment(CORPUS))
    added = [v for v in views if not v.is_original]
    assert added and all(
        insertions_only(dict((i, t) for i, t in CORPUS)[v.source_id], v.text) for v in added
    )


def test_dry_run_projects_what_augment_adds(argus, expanded):
    views, stats = expanded
    planned = RemedyStats()
    plan = {d.doc_id: n for d, n in argus.plan(CORPUS, stats=planned)}
    assert plan == {i: sum(v.source_id == i for v in views) - 1 for i, _ in CORPUS}
    assert planned.views == stats.views and planned.llm_calls == 0


def test_duplicate_ids_across_batches_are_refused(argus):
    docs = [("a", "x"), ("b", "y"), ("a", "z")]  # batch_size 2: the repeat is in the next batch
    with pytest.raises(ArgusInputError, match="duplicate document id 'a' \\(position 2\\)"):
        list(argus.augment(docs))


def test_malformed_documents_name_their_position(argus):
    with pytest.raises(ArgusInputError, match="document 'x': text is int"):
        list(argus.augment([("x", 5)]))
    with pytest.raises(ArgusInputError, match="position 1 has no id"):
        list(argus.augment([{"id": "a", "text": "t"}, {"text": "no id"}]))
    with pytest.raises(ArgusInputError, match="position 0: expected a Document"):
        list(argus.augment(["just a string"]))


def test_a_100k_character_document(argus):
    filler = "The committee met again and discussed the budget for the coming year. "
    head = filler * 700 + "Then Humphrey Bogart arrived. "
    text = head + filler * ((100_000 - len(head)) // len(filler) + 1)
    assert len(text) >= 100_000
    (diag,) = argus.diagnose([("long", text)])
    bogart = [e for e in diag.entities if e.surface == "Humphrey Bogart"]
    assert (
        bogart and bogart[0].mentions[0].start > 49_000 and len(bogart[0].mentions) == 1
    )  # found deep inside the text
    views = list(argus.augment([("long", text)]))
    assert views[0].text == text and len(views) == 1 + 2 * len(diag.flagged)


def test_emoji_and_combining_marks_around_mentions(argus):
    text = "🎉Humphrey Bogart🎉 visited Zu\u0308rich — “Humphrey Bogart” 👍🏽 loved it."
    (diag,) = argus.diagnose([("emoji", text)])
    bogart = next(e for e in diag.entities if e.surface == "Humphrey Bogart")
    assert [text[m.start : m.end] for m in bogart.mentions] == ["Humphrey Bogart"] * 2
    descriptor = dataclasses.replace(argus, remedy="descriptor")
    views = list(descriptor.augment([("emoji", text)]))
    assert views[0].text == text and insertions_only(text, views[1].text)


def test_a_mention_straddling_a_window_border(argus):
    encoder = argus.diagnoser.encoder
    small = type(encoder).__new__(type(encoder))
    small.__dict__.update(encoder.__dict__)
    small.info = dataclasses.replace(encoder.info, max_length=18)  # 16 content tokens / window
    words = "the"
    text = " ".join([words] * 14) + " Humphrey Bogart filmed in Lucknow."
    enc = next(small.encode([text]))
    start = text.index("Humphrey Bogart")
    t0, t1 = enc.token_span(start, start + len("Humphrey Bogart"))
    assert enc.n_windows > 1 and t0 < 16 <= t1 - 1  # its pieces lie in two windows
    from argus_ir.diagnose import Diagnoser

    diagnoser = Diagnoser(small, argus.diagnoser.probe, argus.diagnoser.mentions)
    (diag,) = diagnoser.diagnose([text])
    bogart = next(e for e in diag.entities if e.surface == "Humphrey Bogart")
    expected = argus.diagnoser.probe.predict(enc.states[t0:t1].mean(axis=0)[None])[0]
    assert bogart.rps == pytest.approx(float(expected), abs=1e-6)
    assert np.isfinite(bogart.rps)


def test_a_probe_for_another_retriever_is_refused():
    mpnet = next(p for p in shipped_probes() if "mpnet" in p.retriever_id and p.k == 10)
    argus = Argus(retriever="minilm", probe=mpnet.path)
    with pytest.raises(ProbeMismatchError, match="all-mpnet-base-v2"):
        list(argus.augment([("a", "Paris is nice.")]))
    assert load_shipped_probe("minilm", 10).card.retriever_id.endswith("all-MiniLM-L6-v2")


def test_bad_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="remedy must be one of"):
        Argus(remedy="rewrite")
    with pytest.raises(ValueError, match="tau must lie in"):
        Argus(tau=1.5)


def test_argus_close_ends_its_diagnosers_ner_thread(argus, expanded):
    """Issue 54, item 15: the owner of a Diagnoser ends its NER thread; ``Argus.close()`` (which
    ``argus augment`` calls when the run ends) is that owner's call. It stays usable."""

    def ner_threads():  # this diagnoser's own (other modules' diagnosers may have theirs)
        pool = argus.diagnoser._ner_thread
        return [] if pool is None else list(pool._threads)

    threads = ner_threads()
    assert threads and all(t.is_alive() for t in threads), "NER ran beside the pass, in a thread"
    argus.close()
    assert not ner_threads() and not any(t.is_alive() for t in threads)
    assert [v.text for v in argus.augment(CORPUS[:1])] == [
        v.text for v in expanded[0] if v.metadata["argus_source_id"] == expanded[0][0].id
    ]
    threads = ner_threads()
    argus.close()
    assert not any(t.is_alive() for t in threads)
