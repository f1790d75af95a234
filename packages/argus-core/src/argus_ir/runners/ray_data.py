"""Augment a Ray Dataset with ARGUS on an actor pool that keeps its models warm (extra ``[ray]``).

Each actor of the pool loads retriever, NER pipeline, probe and KB once, then takes batches of
documents through :meth:`argus_ir.Argus.process_batches`: the same code, views and ids as the
single-process path (``argus augment``, :func:`argus_ir.runners.stream.augment_file`).

>>> import ray
>>> from argus_ir import Argus
>>> from argus_ir.runners.ray_data import augment_dataset
>>> ds = ray.data.read_parquet("corpus/")                                   # doctest: +SKIP
>>> augment_dataset(ds, Argus(remedy="expansion"), workers=4).write_parquet("augmented/")  # doctest: +SKIP

Output rows have the columns of :data:`OUTPUT_COLUMNS`: ``_id``, ``title`` and ``text`` as in
``argus augment``'s JSONL, ``metadata`` as a JSON object string (the lineage), and
``argus_failure``, set on a document's original row when its views could not be built (the
original is always there). Input rows need an id (``_id`` or ``id``) and a ``text`` column;
``title`` is optional. Duplicate ids are caught within a batch only: a distributed dataset has no
cheap global check, so deduplicate upstream.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir._optional import require
from argus_ir.documents import as_documents
from argus_ir.errors import ArgusInputError
from argus_ir.lineage import VIEW_KEY
from argus_ir.pipeline import Argus
from argus_ir.remedy import RemedyStats
from argus_ir.runners.stream import view_record

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = [
    "OUTPUT_COLUMNS",
    "ArgusBatchAugmenter",
    "RaySummary",
    "augment_dataset",
    "augment_files",
    "cpus_needed",
    "read_documents",
    "summarize",
]

OUTPUT_COLUMNS = ("_id", "title", "text", "metadata", "argus_failure")


class ArgusBatchAugmenter:
    """The ``map_batches`` callable: one instance per actor, models loaded in ``__init__``.

    Args:
        argus: The configuration; it pickles without models, which load here, once per actor.
        threads: Torch threads per actor (default: the CPUs Ray gave the actor).
    """

    def __init__(self, argus: Argus, threads: int | None = None) -> None:
        torch = require("torch", "st")
        torch.set_num_threads(max(1, threads or int(os.environ.get("OMP_NUM_THREADS", "1"))))
        argus.show_progress = False
        self.argus = argus.load()

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        stats = RemedyStats()
        pairs: list[tuple[Any, Any]] = []
        entries = self.argus.process_batches(as_documents(batch.to_pylist()), stats=stats)
        for part in entries:
            for doc, _, views in part:
                pairs.extend((doc, view) for view in views)
        failed = dict(stats.failures)
        columns: dict[str, list[Any]] = {name: [] for name in OUTPUT_COLUMNS}
        for doc, view in pairs:
            row = view_record(doc, view)
            itself = view.id == doc.id
            columns["_id"].append(view.id)
            columns["title"].append(doc.title if itself else "")
            columns["text"].append(doc.text if itself else view.text)
            columns["metadata"].append(json.dumps(row["metadata"], ensure_ascii=False))
            original = row["metadata"].get(VIEW_KEY) == "original"
            columns["argus_failure"].append(failed.get(view.id) if original else None)
        return pa.table(columns, schema=output_schema())


def output_schema() -> pa.Schema:
    """The Arrow schema of :func:`augment_dataset`'s rows (all strings; failure nullable)."""
    import pyarrow as pa

    return pa.schema([(name, pa.string()) for name in OUTPUT_COLUMNS])


def augment_dataset(
    ds: ray.data.Dataset,
    argus: Argus,
    *,
    workers: int = 2,
    cpus_per_worker: float = 1.0,
    batch_size: int | None = None,
) -> ray.data.Dataset:
    """Every original row followed by its support views, computed on a pool of ``workers`` actors.

    Args:
        ds: Documents with ``_id`` (or ``id``), ``text`` and optionally ``title``.
        argus: The configuration each actor loads.
        workers: Actors in the pool (each holds its own copy of the models).
        cpus_per_worker: CPUs Ray reserves per actor (also its torch threads).
        batch_size: Documents per call (default: ``argus.batch_size``).

    Returns:
        A lazy dataset; write it (``write_parquet``) or iterate it to run.

    The pool holds ``workers * cpus_per_worker`` of the cluster's CPUs for as long as the dataset
    runs; Ray's listing, reading and writing tasks need at least one more. A connected cluster with
    no CPU to spare gets a warning, since Ray would wait for one forever (an autoscaling cluster
    may still add it).
    """
    ray = require("ray", "ray")
    if ray.is_initialized():
        have = ray.cluster_resources().get("CPU", 0.0)
        if have < cpus_needed(workers, cpus_per_worker):
            warnings.warn(
                f"the Ray cluster has {have:g} CPUs and {workers} workers x {cpus_per_worker:g} "
                "CPUs leave none for reading and writing; the run waits until the cluster "
                "grows. Use fewer workers or fewer CPUs per worker.",
                stacklevel=2,
            )
    batch = batch_size or argus.batch_size
    # Reads merge small files into few large blocks, and an actor takes a whole block per task:
    # blocks of a few batches keep every actor of the pool busy.
    ds = ds.repartition(target_num_rows_per_block=4 * batch)
    return ds.map_batches(
        ArgusBatchAugmenter,
        fn_constructor_kwargs={"argus": argus, "threads": max(1, int(cpus_per_worker))},
        batch_size=batch,
        batch_format="pyarrow",
        concurrency=workers,
        num_cpus=cpus_per_worker,
        udf_modifying_row_count=True,
    )


def cpus_needed(workers: int, cpus_per_worker: float) -> int:
    """Logical CPUs a cluster needs for the actor pool plus one slot for reading and writing."""
    return math.ceil(workers * cpus_per_worker) + 1


@dataclass
class RaySummary:
    """What :func:`augment_files` wrote: documents in, views added, failures by document id."""

    documents: int = 0
    views: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)


def read_documents(source: str | os.PathLike[str]) -> ray.data.Dataset:
    """A Ray Dataset of the documents in ``source``, read in parallel.

    ``source``: a Parquet file or a folder of them, JSONL (``.jsonl``, ``.jsonl.gz``), CSV, or a BEIR
    dataset folder (its ``corpus.jsonl``).
    """
    ray = require("ray", "ray")
    path, kind = _source(source)
    if kind == "json":
        return ray.data.read_json(os.fspath(path), lines=True)
    if kind == "csv":
        return ray.data.read_csv(os.fspath(path))
    return ray.data.read_parquet(os.fspath(path))


def _source(source: str | os.PathLike[str]) -> tuple[Path, str]:
    """The path Ray reads and its format, or a clear error before any cluster starts."""
    path = Path(source)
    if not path.exists():
        raise ArgusInputError(f"{path}: no such file or folder")
    beir = [path / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (path / n).is_file()]
    if path.is_dir() and beir:
        path = beir[0]
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        return path, "json"
    if name.endswith(".csv"):
        return path, "csv"
    if path.is_dir() or name.endswith(".parquet"):
        return path, "parquet"
    raise ArgusInputError(
        f"{path}: not a corpus Ray can read (Parquet file or folder, .jsonl, .jsonl.gz, .csv, "
        "or a BEIR folder)"
    )


def augment_files(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    argus: Argus,
    *,
    workers: int = 2,
    cpus_per_worker: float = 1.0,
    address: str | None = None,
    show_progress: bool = True,
) -> RaySummary:
    """Documents in (see :func:`read_documents`), a new folder of Parquet files out.

    Starts a local Ray cluster unless one is running (or ``address`` or ``RAY_ADDRESS`` names
    one); it gets as many logical CPUs as the machine has cores, and at least the pool's CPUs plus
    one for Ray's reading and writing tasks (:func:`cpus_needed`). The output is
    written beside ``target`` and moved into place only when the whole dataset is done, so a
    failed run leaves no partial folder; an existing, non-empty ``target`` is refused.

    Returns:
        Counts read back from the written files: originals, views, and each failure recorded in
        the ``argus_failure`` column.
    """
    ray = require("ray", "ray")
    _source(source)
    out = Path(target)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ArgusInputError(f"{out} exists and is not an empty folder; choose a new one")
    if not ray.is_initialized():
        local = address is None and not os.environ.get("RAY_ADDRESS")
        sizing = {"num_cpus": max(os.cpu_count() or 1, cpus_needed(workers, cpus_per_worker))}
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            **(sizing if local else {}),
        )
    ray.data.DataContext.get_current().enable_progress_bars = show_progress
    ds = augment_dataset(
        read_documents(source), argus, workers=workers, cpus_per_worker=cpus_per_worker
    )
    partial = out.with_name(f".{out.name}.partial")
    if partial.exists():
        shutil.rmtree(partial)
    try:
        ds.write_parquet(os.fspath(partial))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if out.exists():
        out.rmdir()
    partial.rename(out)
    return summarize(out)


def summarize(folder: str | os.PathLike[str]) -> RaySummary:
    """Originals, views and failures in a folder written by :func:`augment_files` (streamed)."""
    import pyarrow.dataset as pads

    summary = RaySummary()
    scanner = pads.dataset(os.fspath(folder), format="parquet").scanner(
        columns=["_id", "metadata", "argus_failure"]
    )
    for batch in scanner.to_batches():
        for doc_id, meta, failure in zip(*(c.to_pylist() for c in batch.columns), strict=True):
            if json.loads(meta).get(VIEW_KEY) == "original":
                summary.documents += 1
            else:
                summary.views += 1
            if failure:
                summary.failures.append((doc_id, failure))
    return summary
