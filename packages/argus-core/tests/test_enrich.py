"""In-place enrichment (issue 58): the knowledge of an original's entities written into the
vector the index keeps for it, its stored text the user's; trust decides where knowledge goes
(``auto``: the user's own KB by exact name into the vector, the shipped KB into a view)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from argus_ir import Argus, RemedyStats
from argus_ir.kb import Passage
from argus_ir.lineage import KNOWLEDGE_ID_KEY, KNOWLEDGE_KEY, VIEW_KEY
from argus_ir.remedy.texts import enriched_text, knowledge_sentence
from argus_ir.runners.integration import is_genuine_original
from argus_ir.testing import minilm_path

pytest.importorskip("spacy")
st = pytest.importorskip("sentence_transformers")

DOCS = [
    # "Bled Castle" is not flagged (predicted RPS 0.32): auto describes it in place all the same
    {"_id": "d1", "text": "We spent a week near Bled Castle with old friends and ate far too much cake."},
    # flagged (0.29)
    {"_id": "d2", "text": "My cousin got married at Phoenix Symphony Hall last weekend and the party went on until dawn."},
    # flagged, but the user's KB does not know them
    {"_id": "d3", "text": "Marie Curie worked in Paris on radioactivity for many years."},
    {"_id": "d4", "title": "A drive", "text": "Nothing much happened on the long drive home yesterday."},
]  # fmt: skip
KB = [
    {"id": "k1", "title": "Bled Castle", "text": "Bled Castle is a medieval castle in Slovenia."},
    {
        "id": "k2",
        "title": "Phoenix Symphony Hall",
        "text": "A concert hall in Arizona, United States.",
    },
    {"id": "k3", "title": "Lake Bohinj", "text": "Lake Bohinj is the largest lake in Slovenia."},
]
KNOWN = {
    "d1": "Bled Castle is a medieval castle in Slovenia.",
    "d2": "Phoenix Symphony Hall: A concert hall in Arizona, United States.",
}


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture(scope="module")
def model():
    return st.SentenceTransformer(str(minilm_path()), device="cpu")


@pytest.fixture(scope="module")
def kb_file(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("enrich") / "kb.jsonl", KB)


@pytest.fixture(scope="module")
def loaded():
    """One Argus whose models the others borrow (each test changes only settings)."""
    argus = Argus(embed=True)
    argus.diagnoser  # noqa: B018 (loads the encoder and NER)
    return argus


def _argus(loaded: Argus, **settings) -> Argus:
    argus = Argus(**settings)
    argus._loaded.update({k: v for k, v in loaded._loaded.items() if k in ("encoder", "diagnoser")})
    return argus


# -- the sentence --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "sentence"),
    [
        ("archaeological site in Libya", "Leptis Magna is an archaeological site in Libya."),
        ("in Bled, Slovenia", "Leptis Magna is in Bled, Slovenia."),
        ("the capital of Roman Tripolitania", "Leptis Magna is the capital of Roman Tripolitania."),
        ("Roman city", "Leptis Magna is a Roman city."),
        ("", "Leptis Magna is a ruined city near Al Khums, Libya."),  # the passage's first sentence
    ],
)
def test_knowledge_is_one_sentence_about_the_mention(description, sentence):
    text = "Leptis Magna is a ruined city near Al Khums, Libya. It was founded by Phoenicians."
    assert (
        knowledge_sentence("Leptis  Magna", Passage("p", "Leptis Magna", text, description))
        == sentence
    )


def test_a_passage_that_does_not_name_the_mention_is_led_by_its_title():
    passage = Passage(
        "p", "Kostrena", "A municipality in Primorje-Gorski Kotar County, Croatia", ""
    )
    assert knowledge_sentence("Kostrena", passage) == (
        "Kostrena: A municipality in Primorje-Gorski Kotar County, Croatia."
    )


def test_the_enriched_string_is_the_indexed_one_then_the_knowledge():
    assert enriched_text("Title\ntext", "X is in Y.") == "Title\ntext\nX is in Y."
    assert enriched_text("Title\ntext", None) == "Title\ntext"
    assert enriched_text("Title\ntext", "") == "Title\ntext"


# -- where knowledge goes ------------------------------------------------------------------------


def test_auto_writes_the_users_knowledge_into_the_vector_and_keeps_the_text(loaded, kb_file, model):
    stats = RemedyStats()
    argus = _argus(loaded, kb=str(kb_file), embed=True)
    entries = [e for batch in argus.process_batches(DOCS, stats=stats) for e in batch]
    by_id = {doc.id: views for doc, _, views in entries}
    for doc, _, views in entries:
        original = views[0]
        assert original.is_original and original.text == doc.index_text  # the user's text
        assert original.metadata.get(KNOWLEDGE_KEY) == KNOWN.get(doc.id)
        assert is_genuine_original(doc.id, original.metadata)
    assert by_id["d1"][0].metadata[KNOWLEDGE_ID_KEY] == "k1"
    # knowledge in the vector, no view beside: the index grows by nothing for d1 and d2
    assert [len(by_id[d]) for d in ("d1", "d2", "d3", "d4")] == [1, 1, 1, 1]
    assert stats.enriched == 2 and stats.views == 0 and stats.in_place_as_views == 0
    originals = [views[0] for _, _, views in entries]
    got = np.stack([v.vector for v in originals])
    strings = [enriched_text(v.text, v.metadata.get(KNOWLEDGE_KEY)) for v in originals]
    assert strings[0] == DOCS[0]["text"] + "\n" + KNOWN["d1"]
    assert _cos(got, model.encode(strings)).min() >= 0.9999
    # and the knowledge moved the vector: the plain text's embedding is another one
    plain = model.encode([DOCS[0]["text"]])
    assert _cos(got[:1], plain)[0] < 0.99


def test_without_an_index_that_embeds_argus_vectors_the_knowledge_becomes_a_view(loaded, kb_file):
    stats = RemedyStats()
    argus = _argus(loaded, kb=str(kb_file))  # no embed: the index embeds the stored text
    entries = [e for batch in argus.process_batches(DOCS, stats=stats) for e in batch]
    by_id = {doc.id: views for doc, _, views in entries}
    assert not any(KNOWLEDGE_KEY in views[0].metadata for views in by_id.values())
    assert stats.enriched == 0 and stats.in_place_as_views == 1
    # a view as the descriptor makes it: for the flagged entity only (Bled Castle is not flagged)
    assert len(by_id["d1"]) == 1
    (view,) = by_id["d2"][1:]
    assert view.metadata[VIEW_KEY] == "descriptor"
    assert "Phoenix Symphony Hall (A concert hall in Arizona" in view.text


@pytest.mark.parametrize("kb", [None, "wikipedia"])  # the default, and the leads by name
def test_the_shipped_kb_is_never_written_into_an_original(loaded, kb):
    """The shipped KB can be wrong (about 89% of its held-out descriptions are right): its
    knowledge goes into a view beside the original, for flagged entities only."""
    stats = RemedyStats()
    argus = _argus(loaded, embed=True, kb=kb)
    entries = [e for batch in argus.process_batches(DOCS, stats=stats) for e in batch]
    assert stats.enriched == 0 and stats.views >= 1
    assert not any(KNOWLEDGE_KEY in views[0].metadata for _, _, views in entries)


def test_enrich_writes_every_flagged_entity_in_place_whatever_its_source(loaded):
    stats = RemedyStats()
    argus = _argus(loaded, embed=True, remedy="enrich")
    entries = {
        doc.id: views
        for batch in argus.process_batches(DOCS, stats=stats)
        for doc, _, views in batch
    }
    assert stats.views == 0 and stats.enriched >= 1
    assert "Marie Curie" in entries["d3"][0].metadata[KNOWLEDGE_KEY]


# -- the CLI and evaluate ------------------------------------------------------------------------


def test_cli_vectors_keep_the_text_and_embed_the_knowledge(loaded, kb_file, model, tmp_path):
    from argus_ir.cli import main
    from argus_ir.runners.records import VECTOR_KEY

    corpus = _write(tmp_path / "c.jsonl", DOCS)
    out = tmp_path / "out.jsonl"
    assert (
        main(["-q", "augment", str(corpus), "--out", str(out), "--kb", str(kb_file), "--vectors"])
        == 0
    )
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["_id"] for r in records] == ["d1", "d2", "d3", "d4"]  # no view
    for row, record in zip(DOCS, records, strict=True):
        assert {k: record[k] for k in row} == row  # text (and title) byte for byte
        assert record["metadata"].get(KNOWLEDGE_KEY) == KNOWN.get(row["_id"])
    indexed = [f"{r['title']}\n{r['text']}" if r.get("title") else r["text"] for r in records]
    strings = [enriched_text(s, r["metadata"].get(KNOWLEDGE_KEY)) for s, r in zip(indexed, records)]
    got = np.asarray([r[VECTOR_KEY] for r in records], dtype=np.float32)
    assert _cos(got, model.encode(strings)).min() >= 0.9999

    # the output read again passes through as it is, its enriched vectors recomputed the same
    again = tmp_path / "again.jsonl"
    assert (
        main(["-q", "augment", str(out), "--out", str(again), "--kb", str(kb_file), "--vectors"])
        == 0
    )
    assert again.read_bytes() == out.read_bytes()

    # the source augmented again with a KB that no longer knows the castle: no knowledge left
    less = _write(tmp_path / "less.jsonl", KB[1:])
    redo = tmp_path / "redo.jsonl"
    assert (
        main(["-q", "augment", str(corpus), "--out", str(redo), "--kb", str(less), "--vectors"])
        == 0
    )
    first = json.loads(redo.read_text("utf-8").splitlines()[0])
    assert KNOWLEDGE_KEY not in first["metadata"] and KNOWLEDGE_ID_KEY not in first["metadata"]
    assert _cos(np.asarray([first[VECTOR_KEY]]), model.encode([DOCS[0]["text"]]))[0] >= 0.9999


def test_evaluate_indexes_the_enriched_original_and_no_view(loaded, kb_file):
    """The condition's index holds one entry per document (growth 1.0) and the enriched
    original's row is the embedding of its enriched string: a query only the knowledge answers
    ranks it higher than the original index does."""
    from argus_ir.documents import Document
    from argus_ir.eval.beir import BeirData
    from argus_ir.eval.remedies import evaluate

    corpus = [
        {"_id": d["_id"], "title": d.get("title", ""), "text": d["text"]} for d in DOCS
    ] + [{"_id": f"f{i}", "title": "", "text": t} for i, t in enumerate([
        "We ate far too much cake at a birthday party in Ohio last week.",
        "We hiked in Slovenia and swam in a cold lake every morning.",
        "The food in Slovenia was fine but a little expensive for us.",
    ])]  # fmt: skip
    data = BeirData(
        "tiny",
        [Document(d["_id"], d["text"], title=d["title"]) for d in corpus],
        {"q": "Who spent a week with friends in Slovenia?"},
        {"q": {"d1": 1}},
    )
    result = evaluate(data, remedies=["original", "auto"], kb=str(kb_file), metrics=["nDCG@10"])
    auto = result.conditions["auto"]
    assert auto.entries == len(corpus) and auto.stats["enriched"] == 2
    assert auto.aggregate["nDCG@10"] > result.conditions["original"].aggregate["nDCG@10"]


def test_the_ray_actor_writes_the_enriched_vector_and_keeps_the_text(loaded, kb_file, model):
    """Ray's batch call, in this process: the original's text and title as read, its knowledge in
    the record's metadata, and the vector of its text and knowledge in the float32 column."""
    pytest.importorskip("ray")
    import pyarrow as pa
    import torch

    from argus_ir.runners.ray_data import LINE_COLUMNS, ArgusBatchAugmenter
    from argus_ir.runners.records import VECTOR_KEY

    lines = [json.dumps(d) for d in DOCS]
    table = pa.table(
        {LINE_COLUMNS[0]: [f"c.jsonl:{i + 1}" for i in range(len(lines))], LINE_COLUMNS[1]: lines}
    )
    argus = _argus(loaded, kb=str(kb_file), embed=True, batch_size=8)
    rows = ArgusBatchAugmenter(argus, threads=torch.get_num_threads())(table).to_pylist()
    assert len(rows) == len(DOCS)  # no view
    first = json.loads(rows[0]["argus_record"]) if rows[0]["argus_record"] else rows[0]
    assert first["text"] == DOCS[0]["text"]
    metadata = first["metadata"]
    metadata = json.loads(metadata) if isinstance(metadata, str) else metadata
    assert metadata[KNOWLEDGE_KEY] == KNOWN["d1"]
    ref = model.encode([enriched_text(DOCS[0]["text"], KNOWN["d1"])])
    assert _cos(np.asarray([rows[0][VECTOR_KEY]], dtype=np.float32), ref)[0] >= 0.9999


def test_a_dry_run_projects_what_the_run_writes(kb_file, tmp_path, capsys):
    from argus_ir.cli import main

    corpus = _write(tmp_path / "c.jsonl", DOCS)
    args = ["augment", str(corpus), "--kb", str(kb_file), "--dry-run"]
    assert main([*args, "--vectors"]) == 0
    printed = capsys.readouterr().out
    assert "would add 0 descriptor views and 2 originals enriched in place" in printed
    assert main(args) == 0  # without vectors, the knowledge would go into views
    captured = capsys.readouterr()
    assert "would add 1 descriptor views" in captured.out  # the flagged entity's only
    assert "1 entities' knowledge went into views" in captured.err
