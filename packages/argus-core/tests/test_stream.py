"""Streaming, checkpointed augmentation (argus_ir.runners.stream) and the bounded caches behind it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

import pytest

from argus_ir._lru import LRU
from argus_ir.errors import ArgusInputError
from argus_ir.runners.stream import augment_file, checkpoint_path, count_records, iter_corpus

pytest.importorskip("spacy")
pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def argus():
    from argus_ir import Argus

    return Argus(remedy="descriptor", batch_size=16).load()


def _corpus(shared_data: Path, path: Path, n: int, *, bad_at: int | None = None) -> Path:
    """The first ``n`` MS MARCO passages as JSONL; record ``bad_at`` (0-based) made malformed."""
    with open(shared_data / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        lines = list(islice(fh, n))
    if bad_at is not None:
        lines[bad_at] = '{"_id": "broken", "text": 7}\n'
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _outputs(out: Path) -> tuple[bytes, bytes]:
    return out.read_bytes(), out.with_name(out.name + ".stats.json").read_bytes()


def test_lru_forgets_the_least_recently_used():
    cache: LRU[str, int] = LRU(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # "a" is now the most recent
    cache["c"] = 3
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3 and len(cache) == 2


def test_count_records_without_parsing(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n\n{"_id": "b", "text": "y"}\n')
    assert count_records(path) == 2 == len(list(iter_corpus(path)))
    assert count_records(tmp_path / "c.csv") is None


def test_stream_writes_the_same_as_the_in_memory_api(argus, shared_data, tmp_path):
    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 40)
    out = tmp_path / "out.jsonl"
    summary = augment_file(argus, corpus, out)
    assert summary.documents == 40 and summary.resumed_from == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    views = list(argus.augment(iter_corpus(corpus)))
    assert [r["_id"] for r in rows] == [v.id for v in views]
    assert [r["metadata"] for r in rows] == [v.metadata for v in views]
    assert summary.stats.views == sum(not v.is_original for v in views) > 0
    stats = json.loads(out.with_name("out.jsonl.stats.json").read_text("utf-8"))
    assert [d["id"] for d in stats["documents"]] == [d.id for d in iter_corpus(corpus)]
    assert stats["totals"]["views"] == summary.stats.views
    leftovers = {p.name for p in tmp_path.iterdir()} - {
        "c.jsonl",
        "out.jsonl",
        out.name + ".stats.json",
    }
    assert not leftovers, leftovers


def test_a_run_stopped_by_a_bad_record_resumes_after_the_fix(argus, shared_data, tmp_path):
    reference = tmp_path / "reference.jsonl"
    augment_file(argus, _corpus(shared_data, tmp_path / "good.jsonl", 60), reference)
    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 60, bad_at=50)
    out = tmp_path / "out.jsonl"
    with pytest.raises(ArgusInputError, match=r"c\.jsonl:51: 'text' of document 'broken'"):
        augment_file(argus, corpus, out)
    ckpt = json.loads(checkpoint_path(out).read_text("utf-8"))
    assert ckpt["documents_done"] == 49  # a first batch of one and three of 16 before line 51
    assert not out.exists()
    _corpus(shared_data, corpus, 60)  # the user fixes the file
    summary = augment_file(argus, corpus, out)
    assert summary.resumed_from == 49 and summary.documents == 60
    assert out.read_bytes() == reference.read_bytes()
    stats, ref_stats = (
        json.loads(p.with_name(p.name + ".stats.json").read_text()) for p in (out, reference)
    )
    assert stats["totals"] == ref_stats["totals"] and stats["documents"] == ref_stats["documents"]
    assert not checkpoint_path(out).exists() and not out.with_name("out.jsonl.partial").exists()


def test_a_half_written_batch_is_cut_off_on_resume(argus, shared_data, tmp_path):
    reference = tmp_path / "reference.jsonl"
    augment_file(argus, _corpus(shared_data, tmp_path / "good.jsonl", 40), reference)
    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 40, bad_at=35)
    out = tmp_path / "out.jsonl"
    with pytest.raises(ArgusInputError):
        augment_file(argus, corpus, out)
    with open(out.with_name("out.jsonl.partial"), "a", encoding="utf-8") as fh:
        fh.write('{"_id": "from a batch that never fin')  # the process died mid-write
    _corpus(shared_data, corpus, 40)
    augment_file(argus, corpus, out)
    assert out.read_bytes() == reference.read_bytes()


def test_resume_refuses_other_settings_or_another_corpus(argus, shared_data, tmp_path):
    from argus_ir import Argus

    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 40, bad_at=35)
    out = tmp_path / "out.jsonl"
    with pytest.raises(ArgusInputError):
        augment_file(argus, corpus, out)
    other = Argus(remedy="expansion", batch_size=16)
    other._loaded.update(argus._loaded)  # same models, another remedy
    # the descriptor reads each document's window, expansion the whole: both are named
    with pytest.raises(
        ArgusInputError, match=r"other settings \(diagnosis, remedy differ\).*--no-resume"
    ):
        augment_file(other, corpus, out)
    _corpus(shared_data, corpus, 41)  # one more line at the end: still the same first 33
    shuffled = corpus.read_text("utf-8").splitlines(keepends=True)
    corpus.write_text("".join(shuffled[1:] + shuffled[:1]), "utf-8")
    with pytest.raises(ArgusInputError, match="first 33 documents differ"):
        augment_file(argus, corpus, out)
    summary = augment_file(argus, corpus, out, resume=False)  # start over
    assert summary.resumed_from == 0 and summary.documents == 41


def test_a_killed_cli_run_resumes_to_the_uninterrupted_output(
    shared_data, tmp_path, kill_at_checkpoint
):
    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 192)  # twelve batches; killed after four
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    base = [sys.executable, "-m", "argus_ir.cli", "-q", "augment", str(corpus)]
    opts = ["--remedy", "descriptor", "--docs-per-batch", "16"]
    reference = tmp_path / "reference.jsonl"
    subprocess.run([*base, "--out", str(reference), *opts], check=True, env=env)

    out = tmp_path / "out.jsonl"
    ckpt = checkpoint_path(out)
    proc = subprocess.Popen([*base, "--out", str(out), *opts], env=env)
    done = kill_at_checkpoint(proc, ckpt, 64, poll=0.05)
    assert 64 <= done < 192 and not out.exists()

    resumed = subprocess.run(
        [*base, "--out", str(out), *opts], env=env, capture_output=True, text=True, check=True
    )
    assert f"resuming an interrupted run after {done} documents" in resumed.stderr
    assert _outputs(out) == _outputs(reference)


def test_corpus_targeting_flags_against_the_first_documents_and_resumes_alike(
    argus, shared_data, tmp_path, monkeypatch
):
    import numpy as np

    import argus_ir.remedy.targeting as tg
    from argus_ir import Argus

    monkeypatch.setattr(tg, "DEFAULT_REACH_POOL", 20)
    monkeypatch.setattr(tg, "DEFAULT_REACH_K", 2)  # a pool this small: reached = top 2
    loaded, argus = argus._loaded, Argus(remedy="descriptor", batch_size=16, targeting="corpus")
    argus._loaded.update(loaded)  # the same models
    reference = tmp_path / "reference.jsonl"
    good = _corpus(shared_data, tmp_path / "good.jsonl", 60)
    augment_file(argus, good, reference)

    # independently: each entity name against the first 20 documents' vectors, by brute force
    diagnoses = list(argus.diagnose(iter_corpus(good)))
    pool = np.stack([d.doc_vector for d in diagnoses[:20]])
    pool = pool / np.linalg.norm(pool, axis=1, keepdims=True)
    encoder = argus.diagnoser.encoder
    expected = {}
    for i, d in enumerate(diagnoses):
        flagged = []
        for e in d.entities:
            q = encoder.embed_documents([e.surface])[0]
            q = q / np.linalg.norm(q)
            own = float(q @ (d.doc_vector / np.linalg.norm(d.doc_vector)))
            others = np.delete(pool @ q, i) if i < 20 else pool @ q
            if 1 + int(np.count_nonzero(others > own)) > tg.DEFAULT_REACH_K:
                flagged.append(e.surface)
        expected[d.doc_id] = flagged
    stats = json.loads(reference.with_name("reference.jsonl.stats.json").read_text("utf-8"))
    got = {row["id"]: [f["surface"] for f in row["flagged"]] for row in stats["documents"]}
    assert got == expected and sum(map(len, expected.values())) >= 10
    assert stats["settings"]["targeting"] == "corpus"

    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 60, bad_at=50)
    out = tmp_path / "out.jsonl"
    with pytest.raises(ArgusInputError):
        augment_file(argus, corpus, out)
    assert json.loads(checkpoint_path(out).read_text("utf-8"))["documents_done"] == 49
    _corpus(shared_data, corpus, 60)
    summary = augment_file(argus, corpus, out)
    assert summary.resumed_from == 49
    assert out.read_bytes() == reference.read_bytes()  # the pool came back from the start


def test_corpus_targeting_resumed_within_a_corpus_smaller_than_the_pool_writes_the_same(
    argus, shared_data, tmp_path
):
    """A corpus smaller than the reach pool is its own pool; on resume the pool is refilled from
    the corpus's start, which then holds the documents still to do, and they must not enter it
    a second time (they did: a user's run stopped at 24 documents of four per batch and resumed
    flagged 21 entities where the uninterrupted run flagged 12)."""
    from argus_ir import Argus

    class CtrlCAfterSixBatches(Argus):
        def process_batches(self, documents, **kwargs):
            for i, batch in enumerate(super().process_batches(documents, **kwargs)):
                if i == 6:
                    raise KeyboardInterrupt
                yield batch

    settings = {"remedy": "descriptor", "batch_size": 4, "targeting": "corpus"}
    whole, stopped = Argus(**settings), CtrlCAfterSixBatches(**settings)
    for a in (whole, stopped):
        a._loaded.update(argus._loaded)  # the same models
    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 40)
    reference = tmp_path / "reference.jsonl"
    augment_file(whole, corpus, reference)
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        augment_file(stopped, corpus, out)
    assert json.loads(checkpoint_path(out).read_text("utf-8"))["documents_done"] == 21  # 1 + 5 x 4
    summary = augment_file(whole, corpus, out)
    assert summary.resumed_from == 21 and summary.stats.flagged_entities > 0
    assert _outputs(out) == _outputs(reference)


def _rich_corpus(shared_data: Path, path: Path, n: int) -> list[dict]:
    """MS MARCO passages with keys of their own: an id under "id", extra fields, metadata."""
    with open(shared_data / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in islice(fh, n)]
    out = [
        {"id": r["_id"], "text": r["text"], "url": f"https://x/{i}", "metadata": {"lang": "en"}}
        for i, r in enumerate(rows)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    return out


def test_originals_are_written_back_as_read_with_lineage_added(argus, shared_data, tmp_path):
    rows = _rich_corpus(shared_data, tmp_path / "c.jsonl", 24)
    out = tmp_path / "out.jsonl"
    summary = augment_file(argus, tmp_path / "c.jsonl", out)
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    originals = [r for r in written if r["metadata"]["argus_view"] == "original"]
    assert len(originals) == 24
    for row, got in zip(rows, originals):
        lineage = {"argus_source_id": row["id"], "argus_view": "original"}
        assert got == {**row, "metadata": {**row["metadata"], **lineage}}
        assert list(got) == list(row)  # the keys in their order, nothing added but lineage
    views = [r for r in written if r["metadata"]["argus_view"] != "original"]
    assert len(views) == summary.stats.views > 0
    assert all(v["metadata"]["lang"] == "en" for v in views)  # the original's metadata kept


def test_augmenting_an_augmented_corpus_changes_nothing(argus, shared_data, tmp_path):
    first = tmp_path / "first.jsonl"
    augment_file(argus, _corpus(shared_data, tmp_path / "c.jsonl", 30), first)
    second = tmp_path / "second.jsonl"
    summary = augment_file(argus, first, second)
    assert second.read_bytes() == first.read_bytes()  # no views of views, no relabelled views
    records = len(first.read_text("utf-8").splitlines())
    assert summary.stats.passed_through == records and summary.stats.views == 0
    ids = [json.loads(line)["_id"] for line in second.read_text("utf-8").splitlines()]
    assert len(set(ids)) == len(ids)
    # the output again without any metadata (a store export that dropped it): the views this run
    # makes of the originals take the old views' ids, so they are not written twice; each is reported
    bare = tmp_path / "bare.jsonl"
    rows = [json.loads(line) for line in first.read_text("utf-8").splitlines()]
    n_views = sum(r["metadata"]["argus_view"] != "original" for r in rows)
    for row in rows:
        row.pop("metadata")
    bare.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    third = tmp_path / "third.jsonl"
    summary = augment_file(argus, bare, third)
    ids = [json.loads(line)["_id"] for line in third.read_text("utf-8").splitlines()]
    assert len(set(ids)) == len(ids) and {r["_id"] for r in rows} <= set(ids)  # nothing lost
    taken = [f for f in summary.stats.failures if "already has this id" in f[1]]
    assert len(taken) == n_views > 0


def test_a_corpus_without_any_text_field_is_refused_with_the_fields_it_has(argus, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"d{i}", "blurb": "Lyon is a city."}) + "\n" for i in range(3))
    )
    with pytest.raises(
        ArgusInputError,
        match=r"c\.jsonl: none of the first 3 records has a "
        r"text field \(looked for 'text' or .*; the records have '_id', 'blurb'\)",
    ):
        augment_file(argus, corpus, tmp_path / "out.jsonl")
    body = tmp_path / "body.jsonl"
    body.write_text(json.dumps({"_id": "d0", "body": "Niels Bohr visited Lucknow."}) + "\n")
    (doc,) = list(iter_corpus(body))
    assert doc.text == "Niels Bohr visited Lucknow." and doc.record["body"] == doc.text


def test_a_lone_surrogate_and_a_zero_width_joiner_do_not_stop_the_run(argus, tmp_path):
    corpus = tmp_path / "c.jsonl"
    rows = [
        # a JSON escape that decodes to a lone surrogate: the tokenizer refuses such text
        '{"_id": "bad", "text": "Niels Bohr visited Lucknow \\ud800 in 1960."}',
        '{"_id": "zwj", "text": "Johann\\u200dSebastian Bach played in Leipzig."}',
        '{"_id": "ok", "text": "The Nile floods every summer in Egypt."}',
    ]
    corpus.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    summary = augment_file(argus, corpus, out)
    assert summary.documents == 3 and not summary.stats.failures
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    originals = {r["_id"]: r for r in written if r["metadata"]["argus_view"] == "original"}
    assert originals["bad"]["text"] == "Niels Bohr visited Lucknow \ud800 in 1960."  # as read
    assert "\\ud800" in out.read_text("utf-8")  # written as a JSON escape: valid UTF-8
    stats = json.loads(out.with_name("out.jsonl.stats.json").read_text("utf-8"))
    zwj = next(d for d in stats["documents"] if d["id"] == "zwj")
    diagnosis = list(argus.diagnose(iter_corpus(corpus)))[1]
    # one name, read through the joiner (it used to split into "Bach" alone); offsets hold
    first = diagnosis.entities[0]
    assert first.surface == "Johann Sebastian Bach"
    start, end = first.mentions[0].start, first.mentions[0].end
    assert rows and "Johann\u200dSebastian Bach played"[start:end] == "Johann\u200dSebastian Bach"
    assert (
        zwj["views"]
        == len([r for r in written if r["metadata"].get("argus_source_id") == "zwj"]) - 1
    )


def test_readable_text_keeps_every_offset():
    from argus_ir.diagnose import readable_text

    text = "Bohr \ud800 met Johann\u200dSebastian Bach\ufeff."
    assert len(readable_text(text)) == len(text)
    assert readable_text(text) == "Bohr \ufffd met Johann Sebastian Bach ."
    assert readable_text("plain ascii") == "plain ascii"


def test_a_second_run_on_the_same_output_stops_and_names_the_first(shared_data, tmp_path):
    from argus_ir.runners.stream import lock_path

    # the second run is refused at OUT's lock, before any model loads: the first needs to be
    # working only for the few seconds the second takes to start
    first = _corpus(shared_data, tmp_path / "a.jsonl", 192)
    second = _corpus(shared_data, tmp_path / "b.jsonl", 20)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    base = [sys.executable, "-m", "argus_ir.cli", "-q", "augment"]
    out = tmp_path / "out.jsonl"
    opts = ["--out", str(out), "--remedy", "descriptor", "--docs-per-batch", "16"]
    proc = subprocess.Popen([*base, str(first), *opts], env=env)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if checkpoint_path(out).is_file():  # the first run is writing
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the first run ended before the second could start"
        other = subprocess.run([*base, str(second), *opts], env=env, capture_output=True, text=True)
        assert other.returncode != 0
        assert f"is being written by another argus run (pid {proc.pid}" in other.stderr
        assert proc.wait(timeout=900) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    originals = [r["_id"] for r in records if r["metadata"]["argus_view"] == "original"]
    assert originals == [d.id for d in iter_corpus(first)]  # the first run's output, whole
    assert not lock_path(out).exists() and not checkpoint_path(out).exists()


def test_a_damaged_checkpoint_is_named_not_a_key_error(argus, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "Rain fell."}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    from argus_ir.runners.stream import CHECKPOINT_VERSION

    checkpoint_path(out).write_text(json.dumps({"version": CHECKPOINT_VERSION}), "utf-8")
    with pytest.raises(ArgusInputError, match=r"damaged checkpoint \(documents_done, digest"):
        augment_file(argus, corpus, out)
    summary = augment_file(argus, corpus, out, resume=False)  # --no-resume starts over
    assert summary.documents == 1


def test_ctrl_c_prints_the_resume_note_and_no_traceback(shared_data, tmp_path):
    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 192)  # twelve batches; killed after four
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "argus_ir.cli", "-q", "augment", str(corpus), "--out", str(out)]
    # a terminal's Ctrl-C: SIGINT at its default in the child, even when this test runs in a
    # background job (which starts with SIGINT ignored, and an ignored signal stays ignored
    # across exec: Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen(
        [*cmd, "--docs-per-batch", "16"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if checkpoint_path(out).is_file():
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "the same command resumes after them" in err and "argus augment: interrupted" in err
    assert "Traceback" not in err


def test_a_title_without_text_passes_through_without_views(tmp_path):
    """A row with a title and no text has nothing of its own to describe: no diagnosis, no views
    (as the adapters skip an empty text), counted; the row beside it is augmented as before."""
    rows = [
        {"_id": "t", "title": "Marie Curie and Niels Bohr in Lyon", "text": ""},
        {"_id": "f", "title": "", "text": "Marie Curie met Niels Bohr in Lyon and Copenhagen."},
    ]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    from argus_ir import Argus

    loose = Argus(remedy="descriptor", tau=1.0)  # every entity flagged
    summary = augment_file(loose, corpus, out)
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    sources = [r["metadata"]["argus_source_id"] for r in written]
    assert sources.count("t") == 1 and sources.count("f") >= 2
    assert summary.stats.no_text == 1
    assert [d.entities for d in loose.diagnose(rows[:1])] == [()]


class _Poisoned:
    """The real spaCy mentions, except that a text holding "POISON" makes the call raise (as a
    backend bug on one odd document would)."""

    def __init__(self, real):
        self.real, self.labels = real, real.labels

    def extract(self, texts, *, show_progress=False):
        if any("POISON" in t for t in texts):
            raise RuntimeError("tokenizer choked")
        return self.real.extract(texts, show_progress=show_progress)


def test_one_document_whose_diagnosis_raises_is_kept_and_reported(
    argus, shared_data, tmp_path, monkeypatch
):
    from argus_ir import Argus
    from argus_ir.diagnose import Diagnoser

    real = argus.diagnoser
    poisoned = Argus(remedy="descriptor", batch_size=16)
    poisoned._loaded.update(argus._loaded)
    poisoned._loaded["diagnoser"] = Diagnoser(
        real.encoder, real.probe, _Poisoned(real.mentions), tau=real.tau
    )
    rows = _rich_corpus(shared_data, tmp_path / "c.jsonl", 20)
    rows[5]["text"] += " POISON"
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "out.jsonl"
    summary = augment_file(poisoned, tmp_path / "c.jsonl", out)
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    originals = [r for r in written if r["metadata"]["argus_view"] == "original"]
    assert [r["id"] for r in originals] == [r["id"] for r in rows]  # every original, in order
    sources = [r["metadata"]["argus_source_id"] for r in written]
    assert sources.count(rows[5]["id"]) == 1  # the poisoned one: no views
    assert summary.stats.views > 0  # its batch-mates still got theirs
    assert summary.stats.failures == [(rows[5]["id"], "diagnosis: RuntimeError: tokenizer choked")]

    # every document fails alone, but a plain text passes: the fault is theirs, each reported
    for r in rows:
        r["text"] += " POISON"
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    summary = augment_file(poisoned, tmp_path / "c.jsonl", tmp_path / "out2.jsonl")
    assert [doc_id for doc_id, _ in summary.stats.failures] == [r["id"] for r in rows]
    # a fault of the models fails any text, the canary too: the error stops the run
    import argus_ir.batching as batching

    monkeypatch.setattr(batching, "CANARY", "Paris is the capital of France. POISON")
    with pytest.raises(RuntimeError, match="tokenizer choked"):
        augment_file(poisoned, tmp_path / "c.jsonl", tmp_path / "out3.jsonl")


def test_a_document_over_max_chars_is_refused_at_once_and_kept_as_read(
    argus, shared_data, tmp_path, monkeypatch
):
    """A document longer than ``max_chars`` never reaches NER or the retriever (one of 5 MB took
    minutes and gigabytes before spaCy refused it): it is written back as read, without views,
    named with its length in the stats' failures; the documents under the limit are augmented as
    without one."""
    from argus_ir import Argus

    rows = _rich_corpus(shared_data, tmp_path / "c.jsonl", 20)
    rows[7]["text"] = " ".join(r["text"] for r in rows)
    long_id, n = rows[7]["id"], len(rows[7]["text"])
    assert n > 5_000
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    limited = Argus(remedy="descriptor", batch_size=16, max_chars=5_000)
    limited._loaded.update(argus._loaded)
    seen: list[str] = []  # every text NER and the retriever are handed
    diagnoser = limited.diagnoser

    def spied(real):
        def spy(texts, *args, **kwargs):
            seen.extend(texts)
            return real(texts, *args, **kwargs)

        return spy

    for part, name in ((diagnoser.mentions, "extract"), (diagnoser.encoder, "encode")):
        monkeypatch.setattr(part, name, spied(getattr(part, name)))
    out = tmp_path / "out.jsonl"
    summary = augment_file(limited, corpus, out)
    monkeypatch.undo()
    assert (
        seen and max(map(len, seen)) <= 5_000
    )  # the long one was never read, not read and dropped

    def by_source(path: Path) -> dict[str, list[dict]]:
        grouped: dict[str, list[dict]] = {}
        for line in path.read_text("utf-8").splitlines():
            record = json.loads(line)
            grouped.setdefault(record["metadata"]["argus_source_id"], []).append(record)
        return grouped

    written = by_source(out)
    lineage = {"argus_source_id": long_id, "argus_view": "original"}
    assert written[long_id] == [{**rows[7], "metadata": {**rows[7]["metadata"], **lineage}}]
    note = f"too long to diagnose: {n:,} characters, over max_chars (5,000)"
    assert [(i, e[: len(note)]) for i, e in summary.stats.failures] == [(long_id, note)]
    stats = json.loads(out.with_name("out.jsonl.stats.json").read_text("utf-8"))
    assert stats["settings"]["max_chars"] == 5_000
    assert [f[0] for f in stats["totals"]["failures"]] == [long_id]
    assert {"id": long_id, "flagged": [], "views": 0} in stats["documents"]

    reference = tmp_path / "reference.jsonl"
    augment_file(argus, corpus, reference)  # no limit this low: the long one gets views too
    unlimited = by_source(reference)
    assert len(unlimited[long_id]) > 1
    assert {k: v for k, v in written.items() if k != long_id} == {
        k: v for k, v in unlimited.items() if k != long_id
    }
    with pytest.raises(ArgusInputError, match=f"document '{long_id}': too long to diagnose"):
        list(limited.diagnose([(long_id, rows[7]["text"])]))
    # alone in its corpus, under corpus targeting (no pool to measure reach against): the same
    alone = Argus(remedy="descriptor", targeting="corpus", max_chars=5_000)
    alone._loaded.update(argus._loaded)
    (tmp_path / "one.jsonl").write_text(json.dumps(rows[7]) + "\n", "utf-8")
    summary = augment_file(alone, tmp_path / "one.jsonl", tmp_path / "one.out.jsonl")
    assert by_source(tmp_path / "one.out.jsonl") == {long_id: written[long_id]}
    assert [i for i, _ in summary.stats.failures] == [long_id]


class _Killed(BaseException):
    """A kill -9 at a chosen moment (nothing after it runs)."""


def _kill_at(monkeypatch, window: str) -> None:
    """Stop the run at one step of its end (issue 48, K11/K12): right after the checkpoint says
    "finishing", after the stats file, after ``OUT.partial -> OUT``, after the rows file goes."""
    import pathlib

    import argus_ir.runners.stream as stream

    if window == "finishing":

        def commit(*args, **kwargs):
            raise _Killed(window)

        monkeypatch.setattr(stream, "_commit", commit)
    elif window == "stats":
        write = stream._write_stats

        def write_stats(*args, **kwargs):
            write(*args, **kwargs)
            raise _Killed(window)

        monkeypatch.setattr(stream, "_write_stats", write_stats)
    elif window == "rename":
        replace = os.replace

        def rename(src, dst, *args, **kwargs):
            replace(src, dst, *args, **kwargs)
            if str(src).endswith(".partial"):
                raise _Killed(window)

        monkeypatch.setattr(os, "replace", rename)
    else:
        unlink = pathlib.Path.unlink

        def remove(self, *args, **kwargs):
            there = self.exists()
            unlink(self, *args, **kwargs)
            if there and self.name.endswith(".partial.docs"):
                raise _Killed(window)

        monkeypatch.setattr(pathlib.Path, "unlink", remove)


def test_K11_K12_a_kill_at_every_commit_step_resumes_to_the_same_output(
    argus, shared_data, tmp_path, monkeypatch, capsys
):
    """Issue 48, K11/K12: a kill after the stats file was written, or after ``OUT.partial``
    became ``OUT``, left a state the same command refused ("exists"). The end of a run is one
    commit point now: killed at any of its steps, the same command finishes it; the output and
    stats equal an uninterrupted run's, byte for byte, and nothing of the run is left beside
    them. The CLI is checked on the K12 state (its checks came first and refused). One run is
    killed at the commit point; each later step is reached by resuming a copy of that state."""
    import shutil

    from argus_ir.cli.main import main

    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 200)
    want = tmp_path / "want" / "out.jsonl"
    augment_file(argus, corpus, want)
    expected = _outputs(want)
    leftovers = {want.name, want.name + ".stats.json"}
    assert {p.name for p in want.parent.iterdir()} == leftovers
    committing = tmp_path / "committing" / "out.jsonl"
    for window in ("finishing", "stats", "rename", "rows"):
        out = tmp_path / window / "out.jsonl"
        if window != "finishing":  # every batch written, stopped at the commit point
            shutil.copytree(committing.parent, out.parent)
        with monkeypatch.context() as patched:
            _kill_at(patched, window)
            with pytest.raises(_Killed):
                augment_file(argus, corpus, committing if window == "finishing" else out)
        if window == "finishing":
            shutil.copytree(committing.parent, out.parent)
        assert checkpoint_path(out).is_file(), window  # killed before the commit ended
        if window == "rename":  # K12, through the command line, as the issue met it
            code = main(["-q", "augment", str(corpus), "--out", str(out), "--remedy", "descriptor"])
            assert code == 0, capsys.readouterr().err
        else:
            summary = augment_file(argus, corpus, out)
            assert summary.documents == 200, window
        assert _outputs(out) == expected, window
        assert {p.name for p in out.parent.iterdir()} == leftovers, window


def test_F4_a_vanished_output_folder_stops_the_run_at_once(argus, shared_data, tmp_path):
    """Issue 48, F4: the ``--out`` folder removed during a run: the run went on over the whole
    corpus, re-made the folder and wrote a checkpoint claiming documents it had lost. It stops
    at the next batch now, with one line naming the folder."""
    import shutil

    import argus_ir.runners.stream as stream

    corpus = _corpus(shared_data, tmp_path / "c.jsonl", 64)
    out = tmp_path / "gone" / "out.jsonl"
    save = stream.save_checkpoint
    batches = []

    def save_then_remove(ckpt_file, state):
        save(ckpt_file, state)
        batches.append(state["documents_done"])
        if len(batches) == 1:
            shutil.rmtree(out.parent)  # someone removes the folder after the first batch

    stream.save_checkpoint = save_then_remove
    try:
        with pytest.raises(ArgusInputError, match="the output folder went away during the run"):
            augment_file(argus, corpus, out)
    finally:
        stream.save_checkpoint = save
    assert len(batches) == 1 and not out.parent.exists()  # nothing re-made it
