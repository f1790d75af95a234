"""The Ray Data path on a local Ray cluster (two one-CPU workers) gives exactly the single-process
output."""

from __future__ import annotations

import json
import warnings
from itertools import islice
from pathlib import Path

import pytest

pytest.importorskip("spacy")
pytest.importorskip("sentence_transformers")
ray = pytest.importorskip("ray")

from argus_ir.remedy import DEFAULT_REMEDY  # noqa: E402

N_DOCS = 2_000


@pytest.fixture(scope="module")
def local_ray():
    """The local cluster ``argus augment --engine ray`` starts itself, stopped after the module."""
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory) -> tuple[Path, Path]:
    """MS MARCO passages as one JSONL file and as a folder of Parquet files (several blocks)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("ray-corpus")
    with open(shared_data / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in islice(fh, N_DOCS)]
    jsonl = tmp / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    folder = tmp / "corpus"
    folder.mkdir()
    for i in range(0, N_DOCS, 500):
        part = rows[i : i + 500]
        table = pa.table({k: [r[k] for r in part] for k in ("_id", "title", "text")})
        pq.write_table(table, folder / f"part-{i // 500}.parquet", row_group_size=100)
    return jsonl, folder


def _canonical(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows)


def test_ray_path_equals_the_single_process_output(local_ray, corpus, tmp_path, capsys):
    import pyarrow.parquet as pq

    from argus_ir.cli import main
    from argus_ir.runners.ray_data import OUTPUT_COLUMNS

    jsonl, folder = corpus
    single, on_ray = tmp_path / "single.jsonl", tmp_path / "ray-out"
    assert main(["-q", "augment", str(jsonl), "--out", str(single)]) == 0
    stats = json.loads(single.with_name("single.jsonl.stats.json").read_text("utf-8"))
    assert main(["-q", "augment", str(folder), "--out", str(on_ray), "--engine", "ray"]) == 0
    printed = capsys.readouterr().out

    with open(single, encoding="utf-8") as fh:  # not splitlines(): texts may hold U+0085
        expected = [json.loads(line) for line in fh]
    table = pq.read_table(on_ray)
    assert tuple(table.column_names) == OUTPUT_COLUMNS
    got = [
        {
            "_id": r["_id"],
            "title": r["title"],
            "text": r["text"],
            "metadata": json.loads(r["metadata"]),
        }
        for r in table.to_pylist()
    ]
    assert not any(table.column("argus_failure").to_pylist())
    assert len(got) == len(expected) > N_DOCS  # originals plus views
    assert _canonical(got) == _canonical(expected)
    views = len(expected) - N_DOCS
    assert stats["totals"]["views"] == views
    assert f"{N_DOCS} documents; added {views} {DEFAULT_REMEDY} views on 2 Ray workers" in printed


def test_the_local_cluster_leaves_a_cpu_for_reading_and_writing():
    """Two one-CPU actors on a two-CPU cluster starve Ray's listing and writing tasks forever."""
    from argus_ir.runners.ray_data import cpus_needed

    assert cpus_needed(2, 1.0) == 3
    assert cpus_needed(3, 0.5) == 3
    assert cpus_needed(1, 2.0) == 3


def test_a_pool_without_a_spare_cpu_is_warned_about(local_ray):
    from argus_ir import Argus
    from argus_ir.runners.ray_data import augment_dataset

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    cpus = int(ray.cluster_resources()["CPU"])
    ds = ray.data.from_items([{"_id": "a", "title": "", "text": "x"}])
    with pytest.warns(UserWarning, match="leave none for reading and writing"):
        augment_dataset(ds, Argus(), workers=cpus)  # lazy: nothing runs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        augment_dataset(ds, Argus(), workers=cpus - 1)


def test_a_failed_document_keeps_its_original_and_names_the_failure(monkeypatch):
    """Plumbing of the actor's batch call (in this process): a failure lands in its column."""
    import pyarrow as pa
    import torch

    from argus_ir import Argus
    from argus_ir.runners.ray_data import ArgusBatchAugmenter

    def broken(*args, **kwargs):
        raise RuntimeError("KB offline")

    argus = Argus(remedy="expansion", tau=1.0).load()  # every entity flagged
    monkeypatch.setattr(argus.reference_kb, "lookup", broken)
    augment = ArgusBatchAugmenter(argus, threads=torch.get_num_threads())
    docs = [
        {"_id": "a", "title": "", "text": "Marie Curie worked in Paris on radium."},
        {"_id": "b", "title": "", "text": "it rained all day"},
    ]
    out = augment(pa.Table.from_pylist(docs)).to_pylist()
    assert [(r["_id"], r["text"]) for r in out] == [(d["_id"], d["text"]) for d in docs]
    assert out[0]["argus_failure"] == "RuntimeError: KB offline"
    assert out[1]["argus_failure"] is None  # nothing flagged, nothing looked up


def test_an_existing_output_folder_is_refused(tmp_path, corpus):
    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_files

    out = tmp_path / "out"
    out.mkdir()
    (out / "part-0.parquet").write_bytes(b"")
    with pytest.raises(ArgusInputError, match="exists and is not an empty folder"):
        augment_files(corpus[1], out, Argus())
    with pytest.raises(ArgusInputError, match="no such file"):
        augment_files(tmp_path / "missing", tmp_path / "new", Argus())
