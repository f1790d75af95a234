"""Diagnosis of the batches :class:`~argus_ir.Argus` streams: which documents the models read, a
failing document kept apart from the rest, and NER a batch ahead of the retriever's pass where
the two run apart (a GPU).

A record of an earlier run's output (:func:`earlier_output`: argus's own record, its lineage
consistent), or one with no text (a title alone: nothing of the document to describe), gets an
empty diagnosis and is not read. A document over ``max_chars``
never reaches the models either: it is refused, and reported like a document that fails.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Generator, Iterable

import numpy as np

from argus_ir.diagnose import Diagnoser, Diagnosis, StartedDiagnosis, too_long
from argus_ir.documents import Document
from argus_ir.errors import ArgusInputError
from argus_ir.lineage import has_lineage, is_argus_output

logger = logging.getLogger(__name__)

__all__ = [
    "CANARY",
    "diagnose_batch",
    "diagnosed",
    "earlier_output",
    "models_read",
    "warn_rewritten",
]

CANARY = "Paris is the capital of France."
"""A text any working diagnosis reads (NER, retriever and probe all run): when each document of a
batch fails alone, it tells their fault (reported) from the models' (raised)."""

Failures = list[tuple[str, str]]


def earlier_output(doc: Document) -> bool:
    """Whether a record was written by an earlier run, its lineage intact: a view whose id is the
    one its lineage gives, or an original whose only lineage is its own
    (:func:`~argus_ir.lineage.is_argus_output`, the adapters' rule). A record with any
    other ``argus_*`` keys (a user's own ``argus_view``, a view copied under another id) is a
    user's document: it is diagnosed, and written as an original with an original's lineage."""
    return is_argus_output(doc.id, doc.metadata)


def warn_rewritten(docs: list[Document]) -> None:
    """Say which of the documents to diagnose came with ``argus_*`` keys (not argus's lineage, or
    :func:`earlier_output` would have passed them through): they are diagnosed like any other,
    and written with an original's lineage in place of those keys."""
    rewritten = [d.id for d in docs if has_lineage(d.metadata)]
    if rewritten:
        logger.warning(
            "%d record(s) carry argus_* metadata keys that are not a consistent argus lineage "
            "(first: %r); they are diagnosed as documents and written as originals, those keys "
            "replaced by an original's lineage",
            len(rewritten),
            rewritten[0],
        )


def models_read(
    batch: list[Document], max_chars: int | None
) -> tuple[list[Document], dict[str, str]]:
    """The documents of a batch the models read, and those refused as too long (id: why)."""
    todo = [d for d in batch if not earlier_output(d) and d.text.strip()]
    refused = {d.id: why for d in todo if (why := too_long(d.index_text, max_chars))}
    return [d for d in todo if d.id not in refused], refused


def diagnose_batch(
    diagnoser: Diagnoser,
    batch: list[Document],
    max_chars: int | None,
    *,
    failures: Failures | None = None,
    window_only: bool = False,
    started: StartedDiagnosis | None = None,
) -> list[Diagnosis]:
    """Diagnoses in batch order (an empty one for a document the models do not read).

    With ``failures``, a batch whose diagnosis raises is diagnosed again document by document: a
    document that fails alone gets an empty diagnosis (it passes through without views) and
    ``(id, error)`` in ``failures``. When every document fails alone and :data:`CANARY` fails
    too, the fault is not theirs (a broken probe, a missing model) and the first error is raised.
    Without ``failures``, the first document refused or failing raises.

    ``started``: the batch as :func:`diagnosed` handed it to the diagnoser ahead of its turn.
    """
    todo, refused = models_read(batch, max_chars)
    if refused:
        if failures is None:
            raise ArgusInputError("document {!r}: {}".format(*next(iter(refused.items()))))
        for doc_id, why in refused.items():
            logger.warning("document %r not diagnosed: %s", doc_id, why)
        failures += refused.items()
    try:
        if started is not None:
            done = started.finish()
        else:
            done = diagnoser.diagnose(
                [d.index_text for d in todo], [d.id for d in todo], window_only=window_only
            )
    except Exception:
        if failures is None or not todo:
            raise
        done = _one_by_one(diagnoser, todo, failures, window_only)
    by_id = {d.doc_id: d for d in done}
    if len(by_id) == len(batch):
        return done
    empty = np.zeros(0, dtype=np.float32)
    return [by_id.get(d.id) or Diagnosis(d.id, (), diagnoser.tau, empty) for d in batch]


def diagnosed(
    loaded: Callable[[], Diagnoser],
    batches: Iterable[list[Document]],
    max_chars: int | None,
    *,
    failures: Failures | None = None,
    window_only: bool = False,
) -> Generator[tuple[list[Document], list[Diagnosis]], None, None]:
    """Each batch with its diagnoses (:func:`diagnose_batch`); ``loaded`` gives the diagnoser,
    asked for only once a batch comes (a stream with none loads no model).

    Where NER runs apart from the retriever's pass (:attr:`Diagnoser.ner_runs_apart`: a GPU),
    the next batch is read and handed to NER before this one's pass, so NER works a batch ahead
    and the card does not wait for it. An error of the input met while reading that next batch (a
    repeated id, say) is raised once this batch is out, as it would be without the look-ahead. A
    consumer that stops early (a ``break``, ``close()``, an error) stops the look-ahead with it:
    once the generator is closed, no NER of a batch it started runs any more, and no further
    batch is read.
    """
    stream = iter(batches)
    current = next(stream, None)
    if current is None:
        return
    diagnoser = loaded()
    if not diagnoser.ner_runs_apart:
        for batch in itertools.chain([current], stream):
            yield (
                batch,
                diagnose_batch(
                    diagnoser, batch, max_chars, failures=failures, window_only=window_only
                ),
            )
        return
    started = _start(diagnoser, current, max_chars, window_only)
    ahead: StartedDiagnosis | None = None
    try:
        while current is not None:
            error: Exception | None = None
            following: list[Document] | None
            try:
                following = next(stream, None)
            except Exception as exc:
                following, error = None, exc
            ahead = (
                None if following is None else _start(diagnoser, following, max_chars, window_only)
            )
            diagnoses = diagnose_batch(
                diagnoser,
                current,
                max_chars,
                failures=failures,
                window_only=window_only,
                started=started,
            )
            started = None  # finished
            yield current, diagnoses
            if error is not None:
                raise error
            current, started, ahead = following, ahead, None
    finally:
        # the consumer stopped (a break, close(), an error): the batch started ahead is not
        # finished, so its NER is cancelled, or waited for where it already runs
        for left in (started, ahead):
            if left is not None:
                left.cancel()


def _start(
    diagnoser: Diagnoser, batch: list[Document], max_chars: int | None, window_only: bool
) -> StartedDiagnosis | None:
    """Hand a batch to the diagnoser ahead of its turn (None: :func:`diagnose_batch` meets
    whatever stopped it again, and reports it as it does)."""
    todo, _ = models_read(batch, max_chars)
    try:
        return diagnoser.start(
            [d.index_text for d in todo], [d.id for d in todo], window_only=window_only
        )
    except Exception:
        return None


def _reads_canary(diagnoser: Diagnoser, window_only: bool) -> bool:
    with contextlib.suppress(Exception):
        return bool(diagnoser.diagnose([CANARY], ["argus-canary"], window_only=window_only))
    return False


def _one_by_one(
    diagnoser: Diagnoser, todo: list[Document], failures: Failures, window_only: bool
) -> list[Diagnosis]:
    done: list[Diagnosis] = []
    failed: Failures = []
    first: Exception | None = None
    for doc in todo:
        try:
            done += diagnoser.diagnose([doc.index_text], [doc.id], window_only=window_only)
        except Exception as exc:
            first = first or exc
            failed.append((doc.id, f"diagnosis: {type(exc).__name__}: {exc}"))
    if not done and first is not None and not _reads_canary(diagnoser, window_only):
        raise first  # the models fail on any text: the fault is not the documents'
    for doc_id, error in failed:
        logger.warning("could not diagnose document %r (%s); kept without views", doc_id, error)
    failures += failed
    return done
