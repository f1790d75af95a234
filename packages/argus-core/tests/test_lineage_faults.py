"""Lineage and resume under faults (issue 54, items 9, 10 and the look-ahead of item 15): only
argus's own, consistent output passes through undiagnosed; a finishing run's overwrite permission
covers only the paths its checkpoint recorded, decided under the output's lock; a consumer that
stops early leaves no look-ahead diagnosis running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY, VIEW_NAME_KEY
from argus_ir.runners.stream import augment_file
from argus_ir.testing import lead_documents

pytest.importorskip("spacy")
pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def argus():
    from argus_ir import Argus

    return Argus(remedy="descriptor", batch_size=4).load()


def _rows(n: int = 12) -> list[dict]:
    return [
        {"_id": doc_id, "text": text, "metadata": {"year": meta["year"]}}
        for doc_id, text, meta in lead_documents(n)
    ]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _read(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _views_of(rows: list[dict], source: str) -> list[tuple[str, str]]:
    return [
        (r["_id"], r["text"])
        for r in rows
        if r["metadata"].get(SOURCE_KEY) == source and r["metadata"].get(VIEW_KEY) != "original"
    ]


@pytest.fixture(scope="module")
def plain(argus, tmp_path_factory) -> tuple[list[dict], list[dict], str]:
    """The corpus, its output, and the id of a document that gets views."""
    folder = tmp_path_factory.mktemp("plain")
    rows = _rows()
    out = folder / "out.jsonl"
    augment_file(argus, _write(folder / "c.jsonl", rows), out)
    written = _read(out)
    flagged = [r["_id"] for r in rows if _views_of(written, r["_id"])]
    assert flagged, "the corpus must have a document with views"
    return rows, written, flagged[0]


FORGED = {
    "a user's own key": {VIEW_KEY: "summary"},
    "a view's lineage on a document": {
        VIEW_KEY: "expansion",
        SOURCE_KEY: "someone-else",
        VIEW_NAME_KEY: "someone-else#argus-0123456789abcdef",
    },
    "an original's lineage naming another source": {VIEW_KEY: "original", SOURCE_KEY: "x"},
}


@pytest.mark.parametrize("case", sorted(FORGED))
def test_item9_a_record_with_inconsistent_lineage_is_diagnosed_as_a_document(
    argus, plain, tmp_path, case
):
    """Issue 54, item 9: any record with ``argus_view`` in its metadata passed through
    undiagnosed, a user's own ``argus_view: "summary"`` included. Only argus's own output with
    consistent lineage passes through now; this record is a user's document: it gets the views
    it gets without the keys, and it is written as an original (its ``argus_*`` keys replaced by
    an original's lineage, the user's ``argus_view`` value among them). A rerun over that output
    changes nothing."""
    rows, written, flagged = plain
    mine = [
        dict(r, metadata={**r["metadata"], **FORGED[case]}) if r["_id"] == flagged else r
        for r in rows
    ]
    out = tmp_path / "out.jsonl"
    summary = augment_file(argus, _write(tmp_path / "c.jsonl", mine), out)
    got = _read(out)
    assert _views_of(got, flagged) == _views_of(written, flagged)
    assert summary.stats.passed_through == 0
    (original,) = [r for r in got if r["_id"] == flagged]
    (year,) = [r["metadata"]["year"] for r in rows if r["_id"] == flagged]
    assert original["metadata"] == {"year": year, SOURCE_KEY: flagged, VIEW_KEY: "original"}
    assert got == written  # byte for byte the output of the corpus without the keys
    again = tmp_path / "again.jsonl"
    summary = augment_file(argus, out, again)
    assert again.read_bytes() == out.read_bytes()
    assert summary.stats.passed_through == len(got) and summary.stats.views == 0


def test_item9_a_view_whose_id_its_lineage_does_not_give_is_a_document(argus, plain, tmp_path):
    """A record copied from a view of argus's output under another id (or an edited view key)
    is not that view: it is diagnosed, and its views are its own."""
    _, written, _ = plain
    view = next(r for r in written if r["metadata"].get(VIEW_KEY) not in (None, "original"))
    copied = dict(view, _id="copied-view")
    out = tmp_path / "out.jsonl"
    summary = augment_file(argus, _write(tmp_path / "c.jsonl", [copied]), out)
    got = _read(out)
    assert summary.stats.passed_through == 0 and summary.stats.documents == 1
    assert got[0]["_id"] == "copied-view"
    assert {k: got[0]["metadata"][k] for k in (SOURCE_KEY, VIEW_KEY)} == {
        SOURCE_KEY: "copied-view",
        VIEW_KEY: "original",
    }
    assert VIEW_NAME_KEY not in got[0]["metadata"]
    assert all(r["metadata"][SOURCE_KEY] == "copied-view" for r in got)


class _Killed(BaseException):
    """A kill -9 at the commit point (nothing after it runs)."""


def _stopped_while_committing(argus, corpus: Path, out: Path, monkeypatch, **kwargs) -> None:
    """Leave ``out``'s run as a kill at its commit point does: every batch written, the
    checkpoint saying "finishing", nothing committed."""
    import argus_ir.runners.stream as stream

    def killed(*args, **kw):
        raise _Killed

    with monkeypatch.context() as patched:
        patched.setattr(stream, "_commit", killed)
        with pytest.raises(_Killed):
            augment_file(argus, corpus, out, **kwargs)
    assert json.loads((out.parent / (out.name + ".checkpoint.json")).read_text())["finishing"]


@pytest.mark.parametrize("entry", ["library", "command"])
def test_item10_finishing_a_run_does_not_let_it_replace_a_stats_file_it_never_named(
    argus, plain, tmp_path, monkeypatch, capsys, entry
):
    """Issue 54, item 10: the rerun of a run stopped while it committed could replace any
    existing ``--stats`` it named, though the stopped run never wrote there. Only the paths its
    checkpoint recorded (``OUT`` and its stats file) are the run's own now: another existing
    stats file is refused, by the library and by the command (before any model loads), and the
    same command as before still finishes the run."""
    from argus_ir.cli.main import main
    from argus_ir.errors import ArgusInputError

    rows, written, _ = plain
    corpus = _write(tmp_path / "c.jsonl", rows)
    out = tmp_path / "out.jsonl"
    _stopped_while_committing(argus, corpus, out, monkeypatch)
    mine = tmp_path / "mine.json"
    mine.write_text("a file of the user's\n")
    if entry == "library":
        with pytest.raises(ArgusInputError, match=r"mine\.json exists; pass overwrite=True"):
            augment_file(argus, corpus, out, stats_path=mine)
    else:
        cli = ["-q", "augment", str(corpus), "--out", str(out), "--remedy", "descriptor"]
        assert main([*cli, "--docs-per-batch", "4", "--stats", str(mine)]) == 1
        assert "mine.json exists; pass --overwrite" in capsys.readouterr().err
    assert mine.read_text() == "a file of the user's\n"
    summary = augment_file(argus, corpus, out)  # the stopped command, again
    assert summary.documents == len(rows) and _read(out) == written
    assert summary.stats_path is not None and summary.stats_path.is_file()


_COMPLETE = """
import sys
from argus_ir import Argus
from argus_ir.runners.stream import augment_file
augment_file(Argus(remedy="descriptor", batch_size=4), sys.argv[1], sys.argv[2])
"""


def _complete_when_read(monkeypatch, corpus: Path, out: Path) -> list[int]:
    """The first time any run reads ``out``'s checkpoint for its overwrite permission, the run
    stopped while committing is finished by another process first (it takes ``OUT.lock`` if it
    can, as the stopped command run again would); the return codes of those processes."""
    import subprocess
    import sys

    import argus_ir.runners.checkpoint as checkpoint

    read = checkpoint.load_checkpoint
    codes: list[int] = []

    def read_then_complete(path):
        state = read(path)
        if not codes:
            done = subprocess.run(
                [sys.executable, "-c", _COMPLETE, str(corpus), str(out)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            codes.append(done.returncode)
        return state

    monkeypatch.setattr(checkpoint, "load_checkpoint", read_then_complete)
    return codes


def test_item10_a_run_started_as_another_completes_does_not_replace_its_output(
    argus, plain, tmp_path, monkeypatch
):
    """Issue 54, item 10: whether ``OUT``'s run was stopped while committing was read before
    ``OUT.lock`` was taken, so a second run (other settings) starting just as the first
    completed took the first's permission and replaced its output. Made deterministic: the
    first run completes in another process right after the second reads the checkpoint. The
    permission is read under the lock now, where the first run cannot complete: the second run
    is refused (its settings differ), and ``OUT`` ends as the first run's output, byte for byte.
    (The command read it before the lock too, but the library read it again under the lock.)"""
    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError

    rows, written, _ = plain
    corpus = _write(tmp_path / "c.jsonl", rows)
    out = tmp_path / "out.jsonl"
    _stopped_while_committing(argus, corpus, out, monkeypatch)
    completed = _complete_when_read(monkeypatch, corpus, out)
    other = Argus(remedy="expansion", batch_size=4)
    other._loaded.update(argus._loaded)
    refused = None
    try:
        augment_file(other, corpus, out)
    except ArgusInputError as exc:
        refused = str(exc)
    monkeypatch.undo()
    assert completed, "the second run never read the checkpoint"
    if completed[0] != 0:  # the second run held the lock: the first finishes after it
        augment_file(argus, corpus, out)
    assert _read(out) == written, "the second run replaced the first run's output"
    assert refused is not None


class _Gate:
    """The diagnoser's real mention finder, with its second call (the batch the look-ahead
    started) held until the consumer has the batch before it, and then until it stops; it then runs on only while the consumer's
    ``close()`` is still under way (waiting for it). If the generator is closed already when it
    would run, it is the look-ahead left behind: it waits until the test has looked."""

    def __init__(self, real, stopped) -> None:
        import threading

        self.real, self.stopped = real, stopped
        self.calls = 0
        self.entered, self.finished, self.looked = (threading.Event() for _ in range(3))
        self.after_close = False

    def __getattr__(self, name):
        return getattr(self.real, name)

    def extract(self, texts, **kwargs):
        import inspect
        import time

        self.calls += 1
        if self.calls == 2:
            deadline = time.monotonic() + 120  # a guard against hanging, not a measurement
            while self.stopped() != inspect.GEN_SUSPENDED and time.monotonic() < deadline:
                time.sleep(0.005)  # until the consumer has the batch before this one
            self.entered.set()
            while self.stopped() == inspect.GEN_SUSPENDED and time.monotonic() < deadline:
                time.sleep(0.005)  # until it moves on or stops
            if self.stopped() == inspect.GEN_CLOSED:
                self.after_close = True
                self.looked.wait(120)
        try:
            return self.real.extract(texts, **kwargs)
        finally:
            if self.calls == 2:
                self.finished.set()


@pytest.mark.parametrize("where", ["diagnosed", "process_batches"])
def test_item15_a_consumer_that_stops_early_leaves_no_look_ahead_running(argus, monkeypatch, where):
    """Issue 54, item 15: where NER runs apart from the retriever's pass (a GPU), ``diagnosed``
    hands the next batch to NER before yielding this one; a consumer that stopped there (a
    break, ``close()``) left that NER running on, unowned. Closing the generator now cancels the
    look-ahead, or waits for the NER already under way: once ``close()`` returns, no NER of the
    stream is running or queued, and no further batch was read."""
    import inspect

    from argus_ir import batching
    from argus_ir.documents import as_documents

    diagnoser = argus.diagnoser
    monkeypatch.setattr(diagnoser, "ner_runs_apart", True)  # as on a GPU
    docs = list(as_documents([(doc_id, text) for doc_id, text, _ in lead_documents(16)]))
    batches = [docs[i : i + 4] for i in range(0, 16, 4)]
    read: list[int] = []

    def stream():
        for i, batch in enumerate(batches):
            read.append(i)
            yield batch

    if where == "diagnosed":
        gen = batching.diagnosed(lambda: diagnoser, stream(), None, failures=[])
    else:
        gen = argus.process_batches((d for batch in stream() for d in batch), show_progress=False)
    gate = _Gate(diagnoser.mentions, lambda: inspect.getgeneratorstate(gen))
    monkeypatch.setattr(diagnoser, "mentions", gate)
    try:
        next(gen)
        assert gate.entered.wait(120), "the look-ahead never started"  # and is held
        gen.close()
        assert gate.finished.is_set() and not gate.after_close
    finally:
        gate.looked.set()
        gate.finished.wait(120)
    assert gate.calls == 2
    assert read == [0, 1]  # the batch yielded and the one started ahead; none after


def test_item9_the_ray_actors_read_the_same_rule(argus, plain):
    """The Ray path's actor (run in this process): records with a user's ``argus_view`` are read
    (by the GPU pool's NER stage too) and get their views; argus's own output passes through,
    row for row."""
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("ray")
    import torch

    from argus_ir.batching import models_read
    from argus_ir.runners.ray_data import LINE_COLUMNS, ArgusBatchAugmenter
    from argus_ir.runners.ray_input import batch_documents

    rows, written, flagged = plain
    mine = [dict(r, metadata={**r["metadata"], VIEW_KEY: "summary"}) for r in rows]

    def table(records: list[dict]):
        lines = [json.dumps(r) for r in records]
        where = [f"c.jsonl:{i}" for i in range(1, len(lines) + 1)]
        return pa.table({LINE_COLUMNS[0]: where, LINE_COLUMNS[1]: lines})

    # what the GPU pool's NER stage reads: every record of the corpus, none of argus's output
    assert len(models_read(batch_documents(table(mine)), None)[0]) == len(mine)
    assert models_read(batch_documents(table(written)), None)[0] == []
    augment = ArgusBatchAugmenter(argus, threads=torch.get_num_threads())
    out = augment(table(mine)).to_pylist()
    got = [(r["_id"], r["text"]) for r in out]
    assert set(_views_of(written, flagged)) <= set(got)
    assert len(out) == len(written)
    again = augment(table(written)).to_pylist()
    assert [(r["_id"], json.loads(r["metadata"])) for r in again] == [
        (r["_id"], r["metadata"]) for r in written
    ]
