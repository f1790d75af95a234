"""Augment a Ray Dataset with ARGUS on an actor pool that keeps its models warm (extra ``[ray]``).

Each actor of the pool loads retriever, NER pipeline, probe and KB once, then takes batches of
documents through :meth:`argus_ir.Argus.process_batches`: the same code, views and ids as the
single-process path (``argus augment``, :func:`argus_ir.runners.stream.augment_file`).
With ``gpus_per_worker`` the work splits in two: a pool of CPU actors finds the entity mentions
(:class:`ArgusMentionFinder`, spaCy), and GPU actors run the retriever's pass over them, the probe
and the remedy (:class:`ArgusBatchAugmenter`); the output is the same.

>>> import ray
>>> from argus_ir import Argus
>>> from argus_ir.runners.ray_data import augment_dataset
>>> ds = ray.data.read_parquet("corpus/")                                   # doctest: +SKIP
>>> augment_dataset(ds, Argus(remedy="expansion"), workers=4).write_parquet("augmented/")  # doctest: +SKIP

Output rows have the columns of :data:`OUTPUT_COLUMNS`: ``_id``, ``title`` and ``text`` as in
``argus augment``'s JSONL, ``metadata`` as a JSON object string (the lineage), ``argus_failure``,
set on a document's original row when its views could not be built (the original is always
there), and ``argus_record``, described next. Input rows need an id (``_id`` or ``id``) and a
``text`` column; ``title`` is optional. Duplicate ids are caught within a batch only: a distributed
dataset has no cheap global check, so deduplicate upstream (:func:`augment_files` checks a JSONL or
CSV corpus whole before it starts, as the single process does).

Originals are never altered, and one kind of string needs care for that: a JSON escape such as
``"\\ud800"`` reads as a lone surrogate, which Python strings hold but UTF-8, and so Arrow and
Parquet strings, cannot. JSONL is therefore read line by line (:func:`read_documents`) and parsed
by the actors, never by Arrow's or pandas' JSON readers, which drop such characters without a
word. A row with a lone surrogate in ``_id``, ``title`` or ``text`` (an original, or a view of
one) keeps those columns null where the string cannot be stored, and ``argus_record`` holds the
whole row exactly as ``argus augment`` writes it to JSONL: a JSON object, with JSON escapes where
UTF-8 cannot go, that ``json.loads`` reads back to the very strings read. Every other row has
``argus_record`` null: its columns hold it exactly. ``metadata`` uses the same escapes when it
must, and :func:`summarize` names the documents whose rows need ``argus_record``.

With ``Argus(embed=True)`` each row also holds its vector, the retriever's fp32 vector of the
string an index embeds for it, in a last column :data:`~argus_ir.runners.records.VECTOR_KEY` of
fixed-size float32 lists (:func:`output_schema`; the vectors ``argus augment --vectors`` writes to
JSONL), null where the retriever's tokenizer refused the text, with the reason in that row's
``argus_failure``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from argus_ir._optional import require
from argus_ir.errors import ArgusInputError
from argus_ir.io import replace_folder
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.outputs import check_output
from argus_ir.pipeline import Argus
from argus_ir.remedy import RemedyStats
from argus_ir.runners.ray_gpu import (
    GPU_WORKER_CPUS,
    MENTIONS_COLUMN,
    ArgusMentionFinder,
    GivenMentions,
    actor_device,
    check_cluster_gpus,
    check_gpus_per_worker,
    decode_mentions,
)
from argus_ir.runners.ray_input import (
    LINE_COLUMNS,
    batch_documents,
    check_corpus,
    corpus_source,
    read_documents,
)
from argus_ir.runners.records import VECTOR_KEY, json_line, view_record

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = [
    "GPU_WORKER_CPUS",
    "LINE_COLUMNS",
    "MENTIONS_COLUMN",
    "OUTPUT_COLUMNS",
    "ArgusBatchAugmenter",
    "ArgusMentionFinder",
    "RaySummary",
    "augment_dataset",
    "augment_files",
    "cpus_needed",
    "is_output_folder",
    "read_documents",
    "summarize",
]

OUTPUT_COLUMNS = ("_id", "title", "text", "metadata", "argus_failure", "argus_record")
"""The columns of every output; with vectors, :data:`~argus_ir.runners.records.VECTOR_KEY`
follows."""

logger = logging.getLogger(__name__)


class ArgusBatchAugmenter:
    """The ``map_batches`` callable: one instance per actor, models loaded in ``__init__``.

    A batch holds documents as columns (``_id`` or ``id``, ``text``, optional ``title``), or as
    JSON lines (:data:`LINE_COLUMNS`, what :func:`read_documents` makes of JSONL), parsed here so
    that every string reaches the models and the output as it was read.

    Args:
        argus: The configuration; it pickles without models, which load here, once per actor.
        threads: Torch threads per actor (default: the CPUs Ray gave the actor).
        gpu: The actor of a GPU pool (``gpus_per_worker``): the retriever runs on the GPU Ray
            gave it (:func:`actor_device`), and the mentions come from the batch's
            :data:`MENTIONS_COLUMN`, found by :class:`ArgusMentionFinder` on a CPU; a text without
            them (none there, or a text NER did not read there) goes to this actor's own NER.
    """

    def __init__(self, argus: Argus, threads: int | None = None, *, gpu: bool = False) -> None:
        torch = require("torch", "st")
        torch.set_num_threads(max(1, threads or int(os.environ.get("OMP_NUM_THREADS", "1"))))
        argus.show_progress = False
        if gpu:
            argus.device = actor_device(argus.device)
            argus.ner_processes = 1  # the rare text the NER actors did not read: no worker pool
        self.argus = argus.load()
        self.dim = self.argus.embedder.dim if argus.embed else None
        self.given: GivenMentions | None = None
        if gpu:
            diagnoser = self.argus.diagnoser
            self.given = GivenMentions(diagnoser.mentions)
            diagnoser.mentions = self.given

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        stats = RemedyStats()
        pairs: list[tuple[Any, Any]] = []
        found = None
        if MENTIONS_COLUMN in batch.column_names:
            found = batch.column(MENTIONS_COLUMN).to_pylist()
            batch = batch.drop_columns([MENTIONS_COLUMN])
        docs = batch_documents(batch)
        if self.given is not None:
            self.given.found = {} if found is None else decode_mentions(docs, found)
        entries = self.argus.process_batches(docs, stats=stats)
        for part in entries:
            for doc, _, views in part:
                pairs.extend((doc, view) for view in views)
        failed: dict[str, str] = {}
        for key, error in stats.failures:  # with vectors, a text's may follow its diagnosis's
            failed[key] = f"{failed[key]}; {error}" if key in failed and self.dim else error
        columns: dict[str, list[Any]] = {name: [] for name in OUTPUT_COLUMNS}
        vectors: list[Any] = []
        for doc, view in pairs:
            row = view_record(doc, view, vectors=self.dim is not None)
            vectors.append(view.vector)
            itself = view.id == doc.id
            strings = {
                "_id": view.id,
                "title": doc.title if itself else "",
                "text": doc.text if itself else view.text,
            }
            for name, value in strings.items():  # null where UTF-8 cannot hold it: see above
                columns[name].append(value if _utf8(value) else None)
            exact = all(_utf8(value) for value in strings.values())
            columns["argus_record"].append(None if exact else json_line(row)[:-1])
            columns["metadata"].append(json_line(row["metadata"])[:-1])
            # an original's failures; a view's (or a passed-through record's) only its vector's
            failure = failed.get(view.id)
            if failure is not None and not _utf8(failure):  # a message, not the document's text
                failure = failure.encode("utf-8", "backslashreplace").decode("utf-8")
            columns["argus_failure"].append(failure)
        if self.dim is not None:
            columns[VECTOR_KEY] = vectors
        return pa.table(columns, schema=output_schema(self.dim))


def _utf8(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (an Arrow string): no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def output_schema(dim: int | None = None) -> pa.Schema:
    """The Arrow schema of :func:`augment_dataset`'s rows: :data:`OUTPUT_COLUMNS`, all strings;
    with the vectors' ``dim`` (``Argus(embed=True)``: ``argus.embedder.dim``), then
    :data:`~argus_ir.runners.records.VECTOR_KEY`, a fixed-size list of ``dim`` float32."""
    import pyarrow as pa

    fields = [pa.field(name, pa.string()) for name in OUTPUT_COLUMNS]
    if dim is not None:
        fields.append(pa.field(VECTOR_KEY, pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


def augment_dataset(
    ds: ray.data.Dataset,
    argus: Argus,
    *,
    workers: int = 2,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float = 0,
    batch_size: int | None = None,
) -> ray.data.Dataset:
    """Every original row followed by its support views, computed on a pool of ``workers`` actors.

    Args:
        ds: Documents with ``_id`` (or ``id``), ``text`` and optionally ``title``.
        argus: The configuration each actor loads.
        workers: Actors in the pool (each holds its own copy of the models).
        cpus_per_worker: CPUs Ray reserves per actor (also its torch threads); with
            ``gpus_per_worker``, per NER actor.
        gpus_per_worker: GPUs Ray reserves per actor (0: none, the CPU pool above; a fraction
            shares a card, e.g. 0.5 puts two actors on each). With GPUs, each of the ``workers``
            actors runs the retriever's pass, the probe and the remedy on its GPU and reserves
            :data:`GPU_WORKER_CPUS` CPU, while NER (spaCy, CPU-bound) runs before it on a pool
            of CPU actors (:class:`ArgusMentionFinder`, ``cpus_per_worker`` each) that grows
            with the work over the CPUs the cluster has left. The output is the same.
        batch_size: Documents per call (default: ``argus.batch_size``).

    Returns:
        A lazy dataset; write it (``write_parquet``) or iterate it to run.

    Raises:
        ArgusInputError: ``gpus_per_worker`` is negative, or a fraction over 1 (Ray gives whole
            cards then); or, on a connected cluster, no node has that many GPUs (Ray would wait
            for one forever).

    The pool holds ``workers * cpus_per_worker`` of the cluster's CPUs (with GPUs,
    ``workers * GPU_WORKER_CPUS`` and at least one NER actor's) for as long as the dataset runs;
    Ray's listing, reading and writing tasks need at least one more. A connected cluster with no
    CPU to spare gets a warning, since Ray would wait for one forever (an autoscaling cluster may
    still add it); so does one with fewer GPUs than the pool asks for (it starts the actors that
    fit).
    """
    ray = require("ray", "ray")
    gpus_per_worker = check_gpus_per_worker(gpus_per_worker)
    ner_workers = workers
    if ray.is_initialized():
        have = ray.cluster_resources().get("CPU", 0.0)
        need = cpus_needed(workers, cpus_per_worker, gpus_per_worker)
        if have < need:
            pool = (
                f"{workers} GPU workers x {GPU_WORKER_CPUS:g} CPU and one NER worker x "
                f"{cpus_per_worker:g}"
                if gpus_per_worker
                else f"{workers} workers x {cpus_per_worker:g}"
            )
            warnings.warn(
                f"the Ray cluster has {have:g} CPUs and {pool} CPUs leave none for reading and "
                "writing; the run waits until the cluster grows. Use fewer workers or fewer CPUs "
                "per worker.",
                stacklevel=2,
            )
        if gpus_per_worker:
            check_cluster_gpus(ray, workers, gpus_per_worker)
            spare = have - workers * GPU_WORKER_CPUS - 1
            if cpus_per_worker > 0:
                ner_workers = max(1, math.floor(spare / cpus_per_worker))
    batch = batch_size or argus.batch_size
    threads = max(1, int(cpus_per_worker))
    # Reads merge small files into few large blocks, and an actor takes a whole block per task:
    # blocks of a few batches keep every actor of the pool busy.
    ds = ds.repartition(target_num_rows_per_block=4 * batch)
    if not gpus_per_worker:
        return ds.map_batches(
            ArgusBatchAugmenter,
            fn_constructor_kwargs={"argus": argus, "threads": threads},
            batch_size=batch,
            batch_format="pyarrow",
            concurrency=workers,
            num_cpus=cpus_per_worker,
            udf_modifying_row_count=True,
        )
    ds = ds.map_batches(
        ArgusMentionFinder,
        fn_constructor_kwargs={"argus": argus, "threads": threads},
        batch_size=batch,
        batch_format="pyarrow",
        concurrency=(1, ner_workers),
        num_cpus=cpus_per_worker,
        # Ray's default placement keeps CPU-only actors off GPU nodes where it can (Ray Data's
        # own, SPREAD, would put them anywhere): the GPU actors keep their nodes' CPUs
        scheduling_strategy="DEFAULT",
    )
    return ds.map_batches(
        ArgusBatchAugmenter,
        fn_constructor_kwargs={"argus": argus, "threads": 1, "gpu": True},
        batch_size=batch,
        batch_format="pyarrow",
        concurrency=workers,
        num_cpus=GPU_WORKER_CPUS,
        num_gpus=gpus_per_worker,
        udf_modifying_row_count=True,
    )


def cpus_needed(workers: int, cpus_per_worker: float, gpus_per_worker: float = 0) -> int:
    """Logical CPUs a cluster needs for the actor pool plus one slot for reading and writing
    (with ``gpus_per_worker``: :data:`GPU_WORKER_CPUS` per GPU actor and one NER actor)."""
    if gpus_per_worker:
        return math.ceil(workers * GPU_WORKER_CPUS + cpus_per_worker) + 1
    return math.ceil(workers * cpus_per_worker) + 1


@dataclass
class RaySummary:
    """What :func:`augment_files` wrote: documents in, views added, failures by document id, and
    the documents whose rows hold a lone surrogate, kept whole in ``argus_record`` only."""

    documents: int = 0
    views: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    escaped: list[str] = field(default_factory=list)


def is_output_folder(folder: Path) -> bool:
    """Whether ``folder`` holds Parquet files and nothing else (what :func:`augment_files` writes)."""
    entries = list(folder.iterdir())
    return bool(entries) and all(p.is_file() and p.suffix == ".parquet" for p in entries)


def augment_files(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    argus: Argus,
    *,
    workers: int = 2,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: float = 0,
    address: str | None = None,
    show_progress: bool = True,
    overwrite: bool = False,
) -> RaySummary:
    """Documents in (see :func:`read_documents`), a new folder of Parquet files out.

    Starts a local Ray cluster unless one is running (or ``address`` or ``RAY_ADDRESS`` names
    one); it gets as many logical CPUs as the machine has cores, and at least the pool's CPUs plus
    one for Ray's reading and writing tasks (:func:`cpus_needed`), and the GPUs Ray finds.
    ``workers``, ``cpus_per_worker`` and ``gpus_per_worker`` are :func:`augment_dataset`'s: with
    ``gpus_per_worker``, the retriever runs on GPU actors and NER on CPU actors. The output is
    written beside ``target`` and moved into place only when the whole dataset is done, so a
    failed run leaves no partial folder. An existing, non-empty ``target`` is refused, unless it
    is an earlier output (:func:`is_output_folder`) and ``overwrite`` is set: it is then replaced
    once the new output is complete (:mod:`argus_ir.outputs` states the rule).

    Before any cluster starts, the corpus is checked as the single process checks it: every record
    of a JSONL or CSV file (:func:`argus_ir.runners.stream.scan_corpus`: ids, repeated ids, text,
    title and metadata types, by file and line), the columns of Parquet (their types hold for every
    row). A bad record a worker still meets is raised here as one :class:`ArgusInputError`, not
    as Ray's traceback of the worker.

    Returns:
        Counts read back from the written files: originals, views, each failure recorded in the
        ``argus_failure`` column, and the documents with a lone surrogate (module notes).

    Raises:
        ArgusInputError: A bad record or column (the message names file and line, or file and
            column), a ``target`` that may not be written, or a ``gpus_per_worker`` that is not a
            number of GPUs or that no node of the cluster has.
    """
    ray = require("ray", "ray")
    gpus_per_worker = check_gpus_per_worker(gpus_per_worker)
    path, kind = corpus_source(source)
    out = check_output(
        target,
        flag="target",
        inputs=[source],
        overwrite=overwrite,
        folder=True,
        kind="Ray output folder (Parquet files only)",
        is_kind=is_output_folder,
    )
    partial = out.with_name(f".{out.name}.partial")
    # an earlier failed run's partial output is replaced; never an input, never another folder
    check_output(
        partial,
        flag="",
        inputs=[source],
        overwrite=True,
        folder=True,
        kind="partial Ray output (Parquet files only)",
        is_kind=is_output_folder,
    )
    check_corpus(path, kind)
    if not ray.is_initialized():
        local = address is None and not os.environ.get("RAY_ADDRESS")
        need = cpus_needed(workers, cpus_per_worker, gpus_per_worker)
        sizing = {"num_cpus": max(os.cpu_count() or 1, need)}
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            **(sizing if local else {}),
        )
    ray.data.DataContext.get_current().enable_progress_bars = show_progress
    ds = augment_dataset(
        read_documents(source),
        argus,
        workers=workers,
        cpus_per_worker=cpus_per_worker,
        gpus_per_worker=gpus_per_worker,
    )
    if partial.exists():
        shutil.rmtree(partial)
    try:
        ds.write_parquet(os.fspath(partial))
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        error = _input_error(exc, path)
        if error is not None:
            raise error from None
        raise
    replace_folder(partial, out)
    summary = summarize(out)
    if summary.escaped:
        n = len(summary.escaped)
        logger.warning(
            "%d %s a lone surrogate (a JSON escape UTF-8 cannot encode), first %r: its rows "
            "keep null where Parquet cannot store the string, and argus_record holds each such "
            "row exactly",
            n,
            "document holds" if n == 1 else "documents hold",
            summary.escaped[0],
        )
    return summary


_REMOTE_INPUT_ERROR = re.compile(r"^argus_ir\.errors\.ArgusInputError: (.+)$", re.MULTILINE)


def _input_error(exc: BaseException, source: Path) -> ArgusInputError | None:
    """The :class:`ArgusInputError` a Ray worker raised, as one error naming ``source``, or
    ``None`` for any other failure. Ray hands the driver the worker's traceback as text only (the
    exception object itself does not cross), so its last line of that type is taken."""
    if not isinstance(exc, Exception):
        return None
    found = _REMOTE_INPUT_ERROR.findall(str(exc))
    if not found:
        return None
    message = found[-1].strip()
    return ArgusInputError(
        message if message.startswith(os.fspath(source)) else f"{source}: {message}"
    )


def summarize(folder: str | os.PathLike[str]) -> RaySummary:
    """Originals, views, failures and documents kept in ``argus_record`` in a folder written by
    :func:`augment_files` (streamed; a folder written before ``argus_record`` existed reads too)."""
    import pyarrow.dataset as pads

    summary = RaySummary()
    escaped: dict[str, None] = {}
    dataset = pads.dataset(os.fspath(folder), format="parquet")
    names = [n for n in ("metadata", "argus_failure", "argus_record") if n in dataset.schema.names]
    for batch in dataset.scanner(columns=names).to_batches():
        columns = [c.to_pylist() for c in batch.columns] + [[None] * batch.num_rows]
        for meta, failure, record in zip(*columns[:3], strict=True):
            lineage = json.loads(meta)
            if lineage.get(VIEW_KEY) == "original":
                summary.documents += 1
            else:
                summary.views += 1
            if failure:  # an original's, or a vector's on its own row: by the source document
                summary.failures.append((lineage[SOURCE_KEY], failure))
            if record is not None:
                escaped.setdefault(lineage[SOURCE_KEY], None)
    summary.escaped = list(escaped)
    return summary
