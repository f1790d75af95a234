"""``argus augment --vectors`` (issue 53, embed once): every record of the JSONL, and of Ray's
Parquet, carries the retriever's fp32 vector of the string an index embeds for it, checked
against sentence-transformers' own ``encode``; the numbers read back to the very float32 values;
without the flag nothing changes; a killed run resumes, and a rerun repeats, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from argus_ir.cli import main
from argus_ir.runners.records import VECTOR_KEY, json_line, vector_values
from argus_ir.runners.stream import checkpoint_path
from argus_ir.testing import lead_documents, minilm_path

pytest.importorskip("spacy")
st = pytest.importorskip("sentence_transformers")

DIM = 384
SURROGATE = "Niels Bohr visited \ud800 Lucknow in 1960."  # the retriever's tokenizer refuses it
OPTS = ["--docs-per-batch", "8"]


def _rows(n: int) -> list[dict]:
    """``n`` documents with titles and metadata, and in their middle the edge cases."""
    leads = [
        {"_id": i, "title": m["title"], "text": t, "metadata": {"year": m["year"]}, "group": m["group"]}
        for i, t, m in lead_documents(n)
    ]  # fmt: skip
    odd = [
        {"_id": "surrogate", "title": "", "text": SURROGATE},
        {"_id": "blank", "text": "  "},
        {"_id": "title-only", "title": "Only a title", "text": ""},
        {"_id": "own", "text": "Marie Curie worked in Paris.", VECTOR_KEY: [1, 2]},
    ]
    return leads[: n // 2] + odd + leads[n // 2 :]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")  # \ud800 as an escape
    return path


def _read(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:  # not splitlines(): texts may hold U+2028
        return [json.loads(line) for line in fh]


def _indexed(record: dict) -> str:
    """The string an index embeds for a record, as ``argus evaluate`` builds it: title, newline
    and text; the one of them that is not blank when the other is (a view has no title)."""
    title, text = record.get("title") or "", record.get("text") or ""
    if title.strip() and text.strip():
        return f"{title}\n{text}"
    return title if title.strip() else text


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }


@pytest.fixture(scope="module")
def model():
    return st.SentenceTransformer(str(minilm_path()), device="cpu")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("vectors") / "c.jsonl", _rows(30))


@pytest.fixture(scope="module")
def with_vectors(corpus) -> Path:
    out = corpus.with_name("vec.jsonl")
    assert main(["-q", "augment", str(corpus), "--out", str(out), *OPTS, "--vectors"]) == 0
    return out


def test_vector_values_read_back_to_the_same_float32():
    rng = np.random.default_rng(0)
    scale = 10.0 ** rng.integers(-44, 38, 20_000)
    values = (rng.standard_normal(20_000) * scale).astype(np.float32)
    info = np.finfo(np.float32)
    edge = [0.0, -0.0, info.max, -info.max, info.tiny, info.smallest_subnormal, 1 / 3, 0.1]
    vector = np.concatenate([values[np.isfinite(values)], np.asarray(edge, dtype=np.float32)])
    text = json.dumps(vector_values(vector))
    back = np.asarray(json.loads(text), dtype=np.float32)
    assert back.tobytes() == vector.tobytes()  # -0.0 included
    assert len(text) < 16 * len(vector)  # the float32's shortest digits, not the float64's 17
    assert vector_values(None) is None


def test_every_record_carries_the_retrievers_vector_of_its_indexed_string(
    corpus, with_vectors, model
):
    records = _read(with_vectors)
    stats = json.loads(with_vectors.with_name("vec.jsonl.stats.json").read_text("utf-8"))
    assert stats["settings"]["vectors"] == "fp32"
    originals = [r for r in records if r["metadata"]["argus_view"] == "original"]
    views = [r for r in records if r["metadata"]["argus_view"] != "original"]
    assert len(originals) == 34 and len(views) >= 5
    # a top-level key, last; never in metadata; every other key of the record as read
    read = {r["_id"]: r for r in _read(corpus)}
    for record in originals:
        expected = {**read[record["_id"]], "metadata": record["metadata"]}
        expected[VECTOR_KEY] = record[VECTOR_KEY]
        assert record == expected
        if VECTOR_KEY not in read[record["_id"]]:
            assert list(record)[-1] == VECTOR_KEY
    assert all(list(v) == ["_id", "title", "text", "metadata", VECTOR_KEY] for v in views)
    assert not any(VECTOR_KEY in r["metadata"] for r in records)

    # null exactly where the tokenizer refused the text, each named in the stats
    refused = {r["_id"] for r in records if r[VECTOR_KEY] is None}
    assert (
        refused == {r["_id"] for r in records if "\ud800" in r["text"]} and "surrogate" in refused
    )
    failures = {
        doc_id for doc_id, error in stats["totals"]["failures"] if error.startswith("vector:")
    }
    assert failures == refused

    kept = [r for r in records if r[VECTOR_KEY] is not None]
    got = np.asarray([r[VECTOR_KEY] for r in kept], dtype=np.float32)
    assert got.shape == (len(kept), DIM)
    cos = _cos(got, model.encode([_indexed(r) for r in kept], batch_size=32))
    assert cos.min() >= 0.9999, [kept[i]["_id"] for i in np.nonzero(cos < 0.9999)[0]]
    own = next(r for r in kept if r["_id"] == "own")  # a vector read with the record is replaced
    assert len(own[VECTOR_KEY]) == DIM

    # what was written reads back to argus's own float32 values, bit for bit
    from argus_ir import Argus

    ours = Argus(embed=True).embedder.embed([_indexed(r) for r in kept])
    assert np.stack(ours).tobytes() == got.tobytes()


def test_without_vectors_the_output_only_lacks_the_key(corpus, with_vectors, tmp_path):
    """With --vectors the pass runs in fp32 (--precision auto); the same run without vectors at
    fp32 writes the same lines, less the key, and a record read with the key keeps it as read."""
    plain = tmp_path / "plain.jsonl"
    args = ["-q", "augment", str(corpus), "--out", str(plain), *OPTS, "--precision", "fp32"]
    assert main(args) == 0
    assert plain.read_text("utf-8").count(VECTOR_KEY) == 1
    assert [(r["_id"], r[VECTOR_KEY]) for r in _read(plain) if VECTOR_KEY in r] == [("own", [1, 2])]

    def without(record: dict) -> str:
        return json_line({k: v for k, v in record.items() if k != VECTOR_KEY})

    assert "".join(map(without, _read(with_vectors))) == "".join(map(without, _read(plain)))
    stats = [
        json.loads(p.with_name(p.name + ".stats.json").read_text()) for p in (plain, with_vectors)
    ]
    assert "vectors" not in stats[0]["settings"]
    assert stats[0]["settings"] == {k: v for k, v in stats[1]["settings"].items() if k != "vectors"}
    assert stats[0]["documents"] == stats[1]["documents"]


def test_a_killed_vectors_run_resumes_to_the_uninterrupted_output_and_reruns_repeat(
    tmp_path, kill_at_checkpoint
):
    corpus = _write(tmp_path / "c.jsonl", _rows(48))  # 52 records: seven batches, killed after two
    base = [sys.executable, "-m", "argus_ir.cli", "-q", "augment", str(corpus)]
    opts = [*OPTS, "--vectors"]
    reference = tmp_path / "reference.jsonl"
    subprocess.run([*base, "--out", str(reference), *opts], check=True, env=_env())

    out = tmp_path / "out.jsonl"
    ckpt = checkpoint_path(out)
    proc = subprocess.Popen([*base, "--out", str(out), *opts], env=_env())
    done = kill_at_checkpoint(proc, ckpt, 9)
    assert 9 <= done < 52 and not out.exists()

    resumed = subprocess.run(
        [*base, "--out", str(out), *opts], env=_env(), capture_output=True, text=True, check=True
    )
    assert f"resuming an interrupted run after {done} documents" in resumed.stderr
    assert out.read_bytes() == reference.read_bytes()
    stats = (p.with_name(p.name + ".stats.json").read_bytes() for p in (out, reference))
    assert next(stats) == next(stats)
    assert sum(r[VECTOR_KEY] is not None for r in _read(out)) > 52  # originals and views

    # a rerun over its own output, with --overwrite: the same bytes again
    again = subprocess.run([*base, "--out", str(out), *opts, "--overwrite"], env=_env(), check=True)
    assert again.returncode == 0 and out.read_bytes() == reference.read_bytes()


def test_a_checkpoint_without_vectors_does_not_resume_with_them(corpus, tmp_path, capsys):
    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.stream import augment_file

    rows = _rows(30)
    bad = _write(tmp_path / "c.jsonl", [*rows[:12], {"_id": "broken", "text": 7}, *rows[12:]])
    out = tmp_path / "out.jsonl"
    with pytest.raises(ArgusInputError, match="'text' of document 'broken'"):
        augment_file(Argus(batch_size=8), bad, out)  # stopped after two batches, no vectors
    assert json.loads(checkpoint_path(out).read_text("utf-8"))["documents_done"] == 9
    _write(bad, rows)  # the user fixes the file, and asks for vectors
    assert main(["-q", "augment", str(bad), "--out", str(out), *OPTS, "--vectors"]) == 1
    err = capsys.readouterr().err
    assert "the interrupted run used other settings (" in err and "vectors" in err
    assert "--no-resume" in err and not out.exists()


def test_a_dry_run_with_vectors_embeds_nothing_and_projects_the_vectors_run(
    corpus, with_vectors, tmp_path, monkeypatch
):
    from argus_ir.vectors import IndexEmbedder

    def refuse(*args, **kwargs):
        raise AssertionError("a dry run embedded")

    monkeypatch.setattr(IndexEmbedder, "embed", refuse)
    plan = tmp_path / "plan.json"
    args = ["-q", "augment", str(corpus), "--dry-run", "--stats", str(plan), *OPTS, "--vectors"]
    assert main(args) == 0
    planned = json.loads(plan.read_text("utf-8"))
    ran = json.loads(with_vectors.with_name("vec.jsonl.stats.json").read_text("utf-8"))
    assert planned["dry_run"] is True and planned["settings"] == ran["settings"]
    # flagged as the vectors run flags (its fp32 pass); the views planned are not compared:
    # the plan's count differs from a run's without vectors too (lead-13 here)
    flags = ([d["flagged"] for d in stats["documents"]] for stats in (planned, ran))
    assert next(flags) == next(flags)


def test_augmenting_a_vectors_output_again_changes_nothing(with_vectors, tmp_path):
    again = tmp_path / "again.jsonl"
    assert main(["-q", "augment", str(with_vectors), "--out", str(again), *OPTS, "--vectors"]) == 0
    assert again.read_bytes() == with_vectors.read_bytes()


def test_augmenting_a_vectors_output_without_vectors_drops_the_vectors_argus_wrote(
    with_vectors, tmp_path, capsys
):
    """Every record of a --vectors output is argus's own and passes through; a run without
    vectors writes each without the vector the earlier run wrote (no record carries one this
    run did not compute), counts them and says so; nothing else changes."""
    records = _read(with_vectors)
    assert all(VECTOR_KEY in r for r in records)
    again = tmp_path / "again.jsonl"
    assert main(["-q", "augment", str(with_vectors), "--out", str(again), *OPTS]) == 0
    assert not any(VECTOR_KEY in r for r in _read(again))
    without = [{k: v for k, v in r.items() if k != VECTOR_KEY} for r in records]
    assert again.read_text("utf-8") == "".join(map(json_line, without))
    totals = json.loads(again.with_name("again.jsonl.stats.json").read_text("utf-8"))["totals"]
    assert totals["passed_through"] == totals["stale_vectors"] == len(records)
    assert totals["views"] == 0
    assert f"{len(records)} records of an earlier run written without" in capsys.readouterr().err


def test_only_argus_own_records_lose_their_vector_in_a_run_without_vectors():
    """The rule on its own (no model): an earlier run's original or view read with the key is
    written without it; a user's record (no argus lineage, or a lineage argus did not write)
    keeps it; with vectors, every record gets the new vector in its place."""
    from argus_ir.documents import Document
    from argus_ir.remedy import View
    from argus_ir.runners.records import stale_vector, view_record

    def read(doc_id: str, metadata: dict | None) -> Document:
        record = {"_id": doc_id, "text": "Marie Curie.", VECTOR_KEY: [0.5, 0.25]}
        if metadata is not None:
            record["metadata"] = metadata
        return Document(doc_id, "Marie Curie.", "c.jsonl:1", "", record)

    ours = read("a", {"argus_source_id": "a", "argus_view": "original", "year": 1903})
    own = read("b", None)  # a user's own record
    forged = read("c", {"argus_source_id": "a", "argus_view": "original"})  # not argus's
    for doc, dropped in ((ours, True), (own, False), (forged, False)):
        entry = View(doc.id, doc.text, doc.metadata)
        assert stale_vector(doc, entry) is dropped, doc.id
        assert (VECTOR_KEY in view_record(doc, entry)) is not dropped, doc.id
        fresh = View(doc.id, doc.text, doc.metadata, vector=np.ones(2, dtype=np.float32))
        assert view_record(doc, fresh, vectors=True)[VECTOR_KEY] == [1.0, 1.0]
    assert view_record(ours, View(ours.id, ours.text, ours.metadata)) == {
        "_id": "a",
        "text": "Marie Curie.",
        "metadata": ours.metadata,
    }


# -- Ray: the same vectors, a fixed-size float32 column ------------------------------------------


def _lines_table(path: Path):
    import pyarrow as pa

    from argus_ir.runners.ray_data import LINE_COLUMNS

    with open(path, encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh]
    wheres = [f"{path}:{i}" for i in range(1, len(lines) + 1)]
    return pa.table({LINE_COLUMNS[0]: wheres, LINE_COLUMNS[1]: lines})


def test_the_ray_actor_writes_the_jsonl_vectors_as_a_float32_column(corpus, with_vectors):
    """The actor's batch call, in this process: the vectors --vectors writes to JSONL, bit for
    bit, in a declared fixed-size float32 column; nulls with their failure on their own row;
    without vectors the schema is the one of before."""
    import pyarrow as pa
    import torch

    from argus_ir import Argus
    from argus_ir.runners.ray_data import OUTPUT_COLUMNS, ArgusBatchAugmenter, output_schema

    assert output_schema() == pa.schema([(name, pa.string()) for name in OUTPUT_COLUMNS])
    schema = output_schema(DIM)
    assert schema.names == [*OUTPUT_COLUMNS, VECTOR_KEY]
    assert schema.field(VECTOR_KEY).type == pa.list_(pa.float32(), DIM)

    table = _lines_table(corpus)
    actor = ArgusBatchAugmenter(Argus(embed=True, batch_size=8), threads=torch.get_num_threads())
    out = actor(table)
    assert out.schema == schema
    jsonl = {r["_id"]: r[VECTOR_KEY] for r in _read(with_vectors)}
    rows = out.to_pylist()
    ids = [
        r["_id"] if r["argus_record"] is None else json.loads(r["argus_record"])["_id"]
        for r in rows
    ]
    assert sorted(ids) == sorted(jsonl)
    for doc_id, row in zip(ids, rows, strict=True):
        if jsonl[doc_id] is None:
            assert row[VECTOR_KEY] is None and row["argus_failure"].startswith("vector:")
            assert json.loads(row["argus_record"])[VECTOR_KEY] is None
        else:
            written = np.asarray(jsonl[doc_id], dtype=np.float32)
            assert np.asarray(row[VECTOR_KEY], dtype=np.float32).tobytes() == written.tobytes()

    plain = ArgusBatchAugmenter(Argus(batch_size=8), threads=torch.get_num_threads())
    assert plain(table.slice(0, 3)).schema == output_schema()


def test_ray_engine_with_vectors_writes_them_to_parquet(tmp_path, model):
    """``--engine ray --vectors`` on a local cluster (one worker, a few documents), in a process
    of its own: a Ray started in this one would outlive the test and take the place of the
    cluster a later module starts."""
    pytest.importorskip("ray")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from argus_ir.runners.ray_data import OUTPUT_COLUMNS, summarize

    rows = _rows(6)
    corpus, out = _write(tmp_path / "c.jsonl", rows), tmp_path / "out"
    argv = ["-q", "augment", str(corpus), "--out", str(out), "--engine", "ray", "--workers", "1"]
    run = subprocess.run(
        [sys.executable, "-m", "argus_ir.cli", *argv, "--vectors"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"vectors in column '{VECTOR_KEY}'" in run.stdout
    table = pq.read_table(out)
    assert table.column_names == [*OUTPUT_COLUMNS, VECTOR_KEY]
    assert table.schema.field(VECTOR_KEY).type == pa.list_(pa.float32(), DIM)
    records = [
        json.loads(r["argus_record"])
        if r["argus_record"] is not None
        else {"title": r["title"], "text": r["text"], VECTOR_KEY: r[VECTOR_KEY]}
        for r in table.to_pylist()
    ]
    assert len(records) >= len(rows)
    kept = [r for r in records if r[VECTOR_KEY] is not None]
    assert len(records) - len(kept) >= 1  # the surrogate's original (and its views) have none
    got = np.asarray([r[VECTOR_KEY] for r in kept], dtype=np.float32)
    cos = _cos(got, model.encode([_indexed(r) for r in kept]))
    assert cos.min() >= 0.9999
    assert any(doc_id == "surrogate" for doc_id, _ in summarize(out).failures)
