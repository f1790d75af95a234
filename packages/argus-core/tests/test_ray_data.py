"""The Ray Data path on a local Ray cluster (two one-CPU workers) gives exactly the single-process
output; originals come back as read, lone surrogates too, and bad input fails in one line."""

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
from argus_ir.remedy.texts import VIEW_UUID  # noqa: E402

N_DOCS = 400  # three Parquet files, several blocks each: enough to spread over two workers
PER_FILE, PER_BLOCK = 150, 50


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
    for i in range(0, N_DOCS, PER_FILE):
        part = rows[i : i + PER_FILE]
        table = pa.table({k: [r[k] for r in part] for k in ("_id", "title", "text")})
        pq.write_table(table, folder / f"part-{i // PER_FILE}.parquet", row_group_size=PER_BLOCK)
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
    assert cpus_needed(2, 1.0, gpus_per_worker=1) == 4  # a CPU per GPU actor, one NER actor
    assert cpus_needed(1, 2.0, gpus_per_worker=0.5) == 4


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


def test_gpus_per_worker_must_be_a_number_of_gpus(tmp_path, corpus):
    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_files

    for bad in (-1, 1.5, float("nan"), "one"):
        with pytest.raises(ArgusInputError, match=f"gpus_per_worker must be .*, got {bad!r}"):
            augment_files(corpus[1], tmp_path / "out", Argus(), gpus_per_worker=bad)
    assert not (tmp_path / "out").exists()


def test_the_cli_takes_gpus_per_worker_on_ray_only(tmp_path, corpus, capsys):
    from argus_ir.cli.main import main

    base = ["augment", str(corpus[1]), "--out", str(tmp_path / "out")]
    assert main([*base, "--gpus-per-worker", "1"]) != 0  # the local engine has no workers
    assert "--gpus-per-worker runs with --engine ray" in capsys.readouterr().err
    assert main([*base, "--engine", "ray", "--gpus-per-worker", "-1"]) != 0
    assert "gpus_per_worker must be" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_gpu_pool_on_a_cluster_without_gpus_fails_at_once(local_ray):
    """Ray would wait forever for a GPU no node has; the message names the flag and the count."""
    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_dataset

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    ds = ray.data.from_items([{"_id": "a", "title": "", "text": "x"}])
    with pytest.raises(ArgusInputError) as info:
        augment_dataset(ds, Argus(), workers=1, gpus_per_worker=gpus + 1)
    assert str(info.value).startswith(
        f"gpus_per_worker={gpus + 1}, but no node of the Ray cluster has {gpus + 1} GPU"
    )
    assert f"(the cluster has {gpus} GPU" in str(info.value)


def test_the_gpu_split_gives_the_same_rows_with_ner_found_apart(monkeypatch):
    """The two stages of a GPU pool, in this process: mentions found by the CPU stage
    (``ArgusMentionFinder``) and carried in a column give the rows of the one-stage actor, and
    the GPU stage runs no NER of its own; a text longer than the retriever's window (read only so
    far by the default remedy) and one with a lone surrogate included."""
    import pyarrow as pa
    import torch

    from argus_ir import Argus
    from argus_ir.runners.ray_data import (
        LINE_COLUMNS,
        MENTIONS_COLUMN,
        ArgusBatchAugmenter,
        ArgusMentionFinder,
    )

    long = " ".join(f"Marie Curie met Albert Einstein in Paris in {1900 + i}." for i in range(80))
    docs = [
        {"_id": "a", "title": "Radium", "text": "Marie Curie worked in Paris on radium."},
        {"_id": "long", "title": "", "text": long},
        {"_id": "s", "title": "", "text": "Niels Bohr visited \ud800 Lucknow in 1960."},
        {"_id": "t", "title": "Only a title", "text": ""},
    ]
    lines = [json.dumps(d) for d in docs]  # as JSONL comes: the surrogate as an escape
    table = pa.table(
        {LINE_COLUMNS[0]: [f"c.jsonl:{i}" for i in range(1, 5)], LINE_COLUMNS[1]: lines}
    )
    threads = torch.get_num_threads()
    argus = Argus().load()
    expected = ArgusBatchAugmenter(argus, threads=threads)(table).to_pylist()
    assert len(expected) > len(docs)  # views too

    with_mentions = ArgusMentionFinder(argus, threads=threads)(table)
    column = with_mentions.column(MENTIONS_COLUMN).to_pylist()
    assert column[3] is None  # no text: not read
    (end, spans), (long_end, _), _ = (json.loads(value) for value in column[:3])
    assert end == len("Radium\nMarie Curie worked in Paris on radium.")
    assert spans and all(0 <= start < stop <= end for start, stop, _ in spans)
    assert 0 < long_end < len(long)  # the window's end

    gpu = ArgusBatchAugmenter(argus, threads=threads, gpu=True)  # loaded: stays on the CPU
    asked: list[str] = []
    fallback = gpu.given.fallback
    monkeypatch.setattr(fallback, "extract", lambda texts, **kw: asked.extend(texts) or [])
    assert gpu(with_mentions).to_pylist() == expected
    assert asked == []


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
    with pytest.raises(ArgusInputError, match="exists; pass overwrite=True"):
        augment_files(corpus[1], out, Argus())
    (out / "notes.txt").write_text("mine")  # no longer only Parquet: never replaced
    with pytest.raises(ArgusInputError, match="not empty and is not a Ray output folder"):
        augment_files(corpus[1], out, Argus(), overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"
    with pytest.raises(ArgusInputError, match="no such file"):
        augment_files(tmp_path / "missing", tmp_path / "new", Argus())


def _ray_cli(corpus: Path, out: Path) -> int:
    from argus_ir.cli import main

    argv = ["augment", str(corpus), "--out", str(out), "--engine", "ray", "--workers", "1"]
    return main(["-q", *argv])


def test_a_lone_surrogate_in_an_original_reads_back_exactly(local_ray, tmp_path):
    """A JSON escape of a lone surrogate in an id and a text came out as ``"s"`` and a text
    without it (exit 0); every original must read back to the strings read."""
    import pyarrow.parquet as pq

    from argus_ir.runners.ray_data import summarize

    lines = [
        r'{"_id": "s\ud800", "title": "", "text": "Marie Curie worked in Paris \ud800 on radium."}',
        '{"_id": "b", "title": "", "text": "It rained all day in London."}',
    ]
    corpus, out = tmp_path / "c.jsonl", tmp_path / "out"
    corpus.write_text("".join(line + "\n" for line in lines), "utf-8")
    assert _ray_cli(corpus, out) == 0

    rows = pq.read_table(out).to_pylist()
    back = [  # what the folder says each row is: argus_record where set, else the columns
        json.loads(r["argus_record"])
        if r.get("argus_record") is not None
        else {"_id": r["_id"], "title": r["title"], "text": r["text"]}
        | {"metadata": json.loads(r["metadata"])}
        for r in rows
    ]
    originals = {r["_id"]: r for r in back if r["metadata"]["argus_view"] == "original"}
    assert sorted(originals) == ["b", "s\ud800"]  # not "s"
    for record in map(json.loads, lines):
        assert {key: originals[record["_id"]][key] for key in record} == record
    held = [r for r in rows if r["argus_record"] is not None]  # the original and its views
    assert held and all(json.loads(r["metadata"])["argus_source_id"] == "s\ud800" for r in held)
    original = next(r for r in held if json.loads(r["metadata"])["argus_view"] == "original")
    assert original["_id"] is None  # null where Parquet cannot hold it, not "s"
    assert all(VIEW_UUID.fullmatch(r["_id"]) for r in held if r is not original)  # view ids
    assert (original["title"], original["text"]) == ("", None)
    assert summarize(out).escaped == ["s\ud800"]


def test_a_jsonl_text_that_is_a_number_fails_in_one_line(local_ray, tmp_path, capsys):
    """``"text": 12345`` gave 80 lines of a Ray worker's traceback and no line number;
    now the line the single process gives, before Ray starts."""
    corpus, out = tmp_path / "c.jsonl", tmp_path / "out"
    corpus.write_text(
        '{"_id": "a", "title": "", "text": "fine"}\n{"_id": "1", "title": "", "text": 12345}\n',
        "utf-8",
    )
    assert _ray_cli(corpus, out) == 1
    err = capsys.readouterr().err
    assert f"argus augment: error: {corpus}:2: 'text' of document '1' is int, not text\n" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_a_parquet_text_column_of_numbers_fails_in_one_line(local_ray, tmp_path):
    """Parquet: the column's type says it for every row, before Ray starts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_files

    corpus = tmp_path / "c.parquet"
    pq.write_table(pa.table({"_id": ["1"], "title": [""], "text": [12345]}), corpus)
    with pytest.raises(ArgusInputError) as info:
        augment_files(corpus, tmp_path / "out", Argus(), workers=1, show_progress=False)
    assert str(info.value) == f"{corpus}: column 'text' is int64, not text"


def test_a_bad_record_a_worker_meets_is_one_error_naming_the_corpus(local_ray, tmp_path):
    """Inside the pool: what no check before the run sees (here an id repeated in one
    batch of a Parquet file) reaches the driver as Ray's text of the worker's traceback; it is
    raised as the worker's own one-line error, with the corpus it concerns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from argus_ir import Argus
    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_files

    corpus = tmp_path / "c.parquet"
    pq.write_table(pa.table({"_id": ["a", "a"], "title": ["", ""], "text": ["x", "y"]}), corpus)
    with pytest.raises(ArgusInputError) as info:
        augment_files(corpus, tmp_path / "out", Argus(), workers=1, show_progress=False)
    assert str(info.value) == f"{corpus}: duplicate document id 'a' (position 1)"
    assert not (tmp_path / "out").exists()


def test_the_engine_help_says_ray_is_an_extra_outside_all(capsys, monkeypatch):
    """``[all]`` leaves Ray out, and ``--engine``'s help must say so (checked against
    the package's own extras, so the two cannot drift apart)."""
    import tomllib
    from packaging.requirements import Requirement

    import argus_ir
    from argus_ir.cli import main

    pyproject = Path(argus_ir.__file__).parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text("utf-8"))["project"]["optional-dependencies"]
    in_all = [Requirement(r) for r in extras["all"]]
    assert not any(r.name == "ray" or "ray" in r.extras for r in in_all)

    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps at hyphens too
    with pytest.raises(SystemExit):
        main(["augment", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    engine = text[text.rindex("--engine {local,ray}") :]  # its help, after the usage line
    engine = engine[: engine.index("--workers")]
    assert "not part of [all]" in engine
    assert "pip install 'argus-ir[ray]'" in engine


def test_a_rerun_on_its_own_output_folder_replaces_it_with_overwrite(local_ray, tmp_path, capsys):
    """Re-running --engine ray on its own output folder was refused even with --overwrite ("is a
    folder; name the file to write"); without --overwrite it must still be refused."""
    import pyarrow.parquet as pq

    corpus, out = tmp_path / "c.jsonl", tmp_path / "out"
    corpus.write_text('{"_id": "a", "text": "Marie Curie worked in Paris."}\n', "utf-8")
    assert _ray_cli(corpus, out) == 0
    first = sorted(pq.read_table(out).column("_id").to_pylist())
    capsys.readouterr()
    assert _ray_cli(corpus, out) == 1
    assert f"{out} exists; pass --overwrite" in capsys.readouterr().err
    from argus_ir.cli import main

    argv = ["augment", str(corpus), "--out", str(out), "--engine", "ray", "--workers", "1"]
    assert main(["-q", *argv, "--overwrite"]) == 0
    assert sorted(pq.read_table(out).column("_id").to_pylist()) == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # nothing left aside
