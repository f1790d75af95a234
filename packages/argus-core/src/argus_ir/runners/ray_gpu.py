"""The GPU half of :mod:`argus_ir.runners.ray_data` (``gpus_per_worker``): NER on CPU actors, the
retriever's pass, the probe and the remedy on GPU actors.

:class:`ArgusMentionFinder` finds each document's entity mentions on a CPU and adds them to its
row (:data:`MENTIONS_COLUMN`); the GPU actors (:class:`~argus_ir.runners.ray_data.ArgusBatchAugmenter`
with ``gpu=True``) answer their diagnosis's NER from that column (:class:`GivenMentions`), so the
card never waits for spaCy, and the output is the single process's.
"""

from __future__ import annotations

import json
import logging
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from argus_ir._optional import require
from argus_ir.batching import CANARY, models_read
from argus_ir.diagnose import readable_text
from argus_ir.documents import Document
from argus_ir.errors import ArgusInputError
from argus_ir.pipeline import Argus
from argus_ir.remedy import WINDOW_ONLY
from argus_ir.runners.ray_input import batch_documents
from argus_ir.text.mentions import Mention, MentionExtractor

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "GPU_WORKER_CPUS",
    "MENTIONS_COLUMN",
    "ArgusMentionFinder",
    "GivenMentions",
    "actor_device",
    "check_cluster_gpus",
    "check_gpus_per_worker",
    "decode_mentions",
]

logger = logging.getLogger(__name__)

MENTIONS_COLUMN = "argus_ner_mentions"
"""The column :class:`ArgusMentionFinder` adds to each row for the GPU actors (dropped by them):
``[end, [[start, stop, label], ...]]`` as JSON, the mentions NER found in the first ``end``
characters of what the diagnosis reads of the document, or null where NER did not read it."""
GPU_WORKER_CPUS = 1.0
"""CPUs each GPU actor reserves (with ``gpus_per_worker``): one to feed its card; the cluster's
other CPUs go to the NER actors and to Ray's reading and writing."""


def actor_device(device: str | None) -> str | None:
    """The retriever's device in an actor of a GPU pool: ``"cuda"`` (the card Ray gave the actor,
    the only one it sees) unless ``device`` names another kind (``"cpu"`` stays). An actor that
    got a GPU from Ray but whose torch sees no CUDA device runs the retriever on the CPU, with a
    warning (a node that declares GPUs it does not have)."""
    if device not in (None, "auto") and not str(device).startswith("cuda"):
        return device
    torch = require("torch", "st")
    if torch.cuda.is_available():
        return "cuda"
    ray = require("ray", "ray")
    gpus = ray.get_gpu_ids() if ray.is_initialized() else []
    logger.warning(
        "this Ray worker was given GPU %s, but torch sees no CUDA device; the retriever runs "
        "on the CPU",
        ", ".join(map(str, gpus)) or "none",
    )
    return "cpu"


class GivenMentions:
    """A mention backend (:class:`~argus_ir.text.mentions.MentionExtractor`) that answers from
    mentions found beforehand (:attr:`found`, by the text NER read); any other text goes to
    ``fallback``, so the diagnosis is the same either way."""

    def __init__(self, fallback: MentionExtractor) -> None:
        self.fallback = fallback
        self.labels = fallback.labels
        self.found: dict[str, list[Mention]] = {}

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text, as ``fallback`` would find them."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.found))
        extra = dict(zip(missing, self.fallback.extract(missing), strict=True)) if missing else {}
        return [list(self.found[t]) if t in self.found else list(extra[t]) for t in texts]


def decode_mentions(docs: list[Document], column: list[str | None]) -> dict[str, list[Mention]]:
    """The mentions of :data:`MENTIONS_COLUMN`, by the text NER read of each document."""
    found: dict[str, list[Mention]] = {}
    for doc, value in zip(docs, column, strict=True):
        if value is None:
            continue
        end, spans = json.loads(value)
        read = readable_text(doc.index_text)[:end]
        found[read] = [
            Mention(start, stop, read[start:stop], label) for start, stop, label in spans
        ]
    return found


class ArgusMentionFinder:
    """The NER stage of a GPU pool (``gpus_per_worker``): a CPU actor that finds the entity
    mentions of each document and adds them to its row (:data:`MENTIONS_COLUMN`), for
    :class:`ArgusBatchAugmenter` on a GPU.

    It reads what the diagnosis would read (:func:`~argus_ir.diagnose.readable_text` of the
    title and text, only the retriever's first window for the remedies of
    :data:`~argus_ir.remedy.WINDOW_ONLY`), with the NER pipeline :class:`~argus_ir.Argus` loads.
    Documents the models do not read (an earlier run's output, no text, over ``max_chars``) get
    null, and so does a document NER fails on: the GPU actor then meets it as the single process
    does.

    Args:
        argus: The configuration; loaded here with the retriever on the CPU (its tokenizer cuts
            the first window).
        threads: Torch threads, and so NER processes, per actor.
    """

    def __init__(self, argus: Argus, threads: int | None = None) -> None:
        torch = require("torch", "st")
        torch.set_num_threads(max(1, threads or int(os.environ.get("OMP_NUM_THREADS", "1"))))
        on_cpu = replace(argus, device="cpu", show_progress=False)
        self.diagnoser = on_cpu.diagnoser
        self.window_only = argus.remedy in WINDOW_ONLY
        self.max_chars = argus.max_chars

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        docs = batch_documents(batch)
        todo, _ = models_read(docs, self.max_chars)  # what the diagnosis reads, by the same rule
        wanted = {id(d) for d in todo}
        read = [(i, readable_text(d.index_text)) for i, d in enumerate(docs) if id(d) in wanted]
        texts = [text for _, text in read]
        if self.window_only:
            ends = self.diagnoser.encoder.window_ends(texts)
        else:
            ends = [len(text) for text in texts]
        found = self._extract([text[:end] for text, end in zip(texts, ends, strict=True)])
        column: list[str | None] = [None] * len(docs)
        for (i, _), end, mentions in zip(read, ends, found, strict=True):
            if mentions is not None:
                spans = [[m.start, m.end, m.label] for m in mentions]
                column[i] = json.dumps([end, spans])
        return batch.append_column(MENTIONS_COLUMN, pa.array(column, type=pa.string()))

    def _extract(self, texts: list[str]) -> list[list[Mention] | None]:
        """Mentions per text; where the batch fails, text by text (None: this text failed, and
        the GPU actor meets it as the single process does).

        Raises:
            RuntimeError: Every text fails alone and so does :data:`~argus_ir.batching.CANARY`:
                NER is broken on this actor (spaCy, its model), not the documents, as the single
                process tells them apart.
        """
        mentions = self.diagnoser.mentions
        try:
            return list(mentions.extract(texts))
        except Exception:
            out: list[list[Mention] | None] = []
            first: Exception | None = None
            for text in texts:
                try:
                    out.append(mentions.extract([text])[0])
                except Exception as exc:
                    first = first or exc
                    out.append(None)
        if first is None:
            return out
        if all(found is None for found in out) and not self._reads_canary():
            raise RuntimeError(
                f"NER on this CPU actor fails on every text, {CANARY!r} too, so its spaCy or "
                f"pipeline is broken: {type(first).__name__}: {first}"
            ) from first
        failed = sum(found is None for found in out)
        logger.warning(
            "NER failed on %d of %d texts on this CPU actor (first: %s: %s); the GPU actors "
            "read them",
            failed, len(out), type(first).__name__, first,
        )  # fmt: skip
        return out

    def _reads_canary(self) -> bool:
        try:
            self.diagnoser.mentions.extract([CANARY])
        except Exception:
            return False
        return True


def check_gpus_per_worker(gpus_per_worker: float) -> float:
    """``gpus_per_worker`` as Ray takes it, or an :class:`ArgusInputError` naming the value: 0 or
    more, and a whole number above 1 (a fraction of a card up to one whole)."""
    try:
        value = float(gpus_per_worker)
    except (TypeError, ValueError):
        value = math.nan
    if not (0 <= value < math.inf) or (value > 1 and not value.is_integer()):
        raise ArgusInputError(
            f"gpus_per_worker must be 0 (no GPU), a fraction of one GPU up to 1, or a whole "
            f"number of GPUs, got {gpus_per_worker!r}"
        )
    return value


def check_cluster_gpus(ray: Any, workers: int, gpus_per_worker: float) -> None:
    """Refuse a GPU pool that no node of the connected cluster can hold; warn when only part fits."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    per_node = [r.get("GPU", 0.0) for r in nodes]
    total, most = sum(per_node), max(per_node, default=0.0)
    if most < gpus_per_worker:
        instead = f"at most {most:g} (the most one node has)" if most else "0 (no GPU)"
        raise ArgusInputError(
            f"gpus_per_worker={gpus_per_worker:g}, but no node of the Ray cluster has "
            f"{gpus_per_worker:g} GPU{'' if gpus_per_worker == 1 else 's'} (the cluster has "
            f"{total:g} GPU{'' if total == 1 else 's'}); Ray would wait for one forever. Ask "
            f"for {instead}, or connect to a cluster with such nodes."
        )
    fit = sum(math.floor(gpus / gpus_per_worker + 1e-9) for gpus in per_node)
    if fit < workers:
        warnings.warn(
            f"the Ray cluster's GPUs hold {fit} of the {workers} workers at "
            f"{gpus_per_worker:g} GPU each; the others wait until the cluster grows",
            stacklevel=3,
        )
