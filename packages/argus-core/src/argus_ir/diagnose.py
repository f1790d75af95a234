"""ARGUS diagnosis (paper §5): which entities in a document sit in a retrieval blind spot.

For each document: find its entity mentions, run the retriever once over the document (windowed when
long) to get every mention's span vector, let the probe predict RPS per mention, keep the minimum per
surface form (a name is as hard to reach as its hardest mention), and flag the forms whose predicted
RPS is below τ (default: the probe card's, 0.3 in the paper).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from argus_ir.encoder.base import TokenEncoder
from argus_ir.errors import ArgusInputError
from argus_ir.probes.artifact import TrainedProbe
from argus_ir.text.grounding import normalize
from argus_ir.text.mentions import Mention, MentionExtractor, Tokenized
from argus_ir.text.names import NameMatcher
from argus_ir.worker_tokens import WorkerTokens

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MAX_NER_PROCESSES",
    "TORCH_THREADS_PER_NER",
    "Diagnoser",
    "Diagnosis",
    "EntityRisk",
    "ner_apart",
    "ner_processes",
    "readable_text",
    "too_long",
]

DEFAULT_MAX_CHARS = 1_000_000
"""The longest document (characters of title and text) :class:`~argus_ir.Argus` diagnoses: spaCy's
own limit (``nlp.max_length``). A longer one is refused before any model sees it; diagnosing it
would hold every token's states of the retriever pass (gigabytes for a few megabytes of text), and
its views could not help anyway, since a retriever reads only the first few hundred tokens of an
entry."""


def too_long(text: str, max_chars: int | None) -> str | None:
    """Why ``text`` is not diagnosed under the limit ``max_chars`` (``None``: it is, or no limit)."""
    if max_chars is None or len(text) <= max_chars:
        return None
    return (
        f"too long to diagnose: {len(text):,} characters, over max_chars ({max_chars:,}); kept "
        "without views (split it into smaller documents, or raise max_chars)"
    )


@dataclass(frozen=True)
class EntityRisk:
    """One surface form in a document and its predicted retrievability.

    Attributes:
        surface: The surface form as first written in the document.
        label: Its NER tag.
        rps: Minimum predicted RPS over its mentions.
        flagged: ``rps < tau``.
        mentions: Every mention of the form (same normalised text), in document order.
    """

    surface: str
    label: str
    rps: float
    flagged: bool
    mentions: tuple[Mention, ...]


@dataclass(frozen=True)
class Diagnosis:
    """The diagnosis of one document.

    Attributes:
        doc_id: The document's id.
        entities: One :class:`EntityRisk` per distinct surface form, in order of first mention.
        tau: The threshold used.
        doc_vector: The retriever's document vector (from the same forward pass).
    """

    doc_id: str
    entities: tuple[EntityRisk, ...]
    tau: float
    doc_vector: np.ndarray = field(repr=False)

    @property
    def flagged(self) -> list[EntityRisk]:
        """The surface forms below τ."""
        return [e for e in self.entities if e.flagged]

    @property
    def min_rps(self) -> float:
        """The lowest predicted RPS in the document (1.0 if it has no mention)."""
        return min((e.rps for e in self.entities), default=1.0)

    def at_tau(self, tau: float) -> Diagnosis:
        """The same predictions flagged at another threshold (no model runs again)."""
        if not 0.0 <= tau <= 1.0:
            raise ArgusInputError(f"tau must lie in [0, 1], got {tau}")
        entities = tuple(replace(e, flagged=e.rps < tau) for e in self.entities)
        return replace(self, entities=entities, tau=float(tau))


_UNREADABLE = re.compile("[\ud800-\udfff]")  # lone surrogates: no tokenizer takes them
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")


def readable_text(text: str) -> str:
    """What the diagnosis reads of a text: the same length, so every mention offset holds.

    A lone surrogate (text decoded with ``surrogateescape``, or a JSON ``"\\ud800"`` escape)
    becomes U+FFFD, which tokenizers and spaCy take; a zero-width space, joiner or non-joiner (and
    a stray byte-order mark) becomes a space, so "Johann\\u200dSebastian Bach" reads as one
    name. Nothing else changes (no NFC: it would move offsets); the original text is what the
    output keeps.
    """
    if text.isascii():
        return text
    return _ZERO_WIDTH.sub(" ", _UNREADABLE.sub("\ufffd", text))


def _on_cpu(device: object) -> bool:
    """Whether a torch device name (``"cpu"``, ``"cuda:1"``, ...) is the CPU."""
    return str(device).startswith("cpu")


MAX_NER_PROCESSES = 8
"""The most processes NER is split over by default (each holds its own spaCy pipeline, about
330 MB)."""

TORCH_THREADS_PER_NER = 8
"""On a CPU, one NER process by default for every this many threads torch computes with. NER
(spaCy's small pipeline, its loop in NumPy) costs about a fifteenth of MiniLM's pass in CPU time on
SciFact, so one thread beside the pass keeps up with it up to about fifteen threads; on two cores a
second NER process only took cores from the pass (1,000 documents: SciFact 47.7-49.0 s against
50.9-51.1 s with two, entity lists 37.4-37.6 s against 37.8-38.1 s)."""


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def ner_processes(device: str) -> int:
    """Processes NER runs in by default for a retriever on ``device``.

    On a CPU: one per :data:`TORCH_THREADS_PER_NER` threads torch computes with (one up to eight
    threads), at most :data:`MAX_NER_PROCESSES`. One process reads NER in a thread beside the
    retriever's pass; more split each batch's NER between this process and workers, ahead of
    the pass on the same cores (see :class:`Diagnoser`). On a GPU: worker processes over the
    cores this process does not need to feed the card (all but one), at most
    :data:`MAX_NER_PROCESSES`; NER then runs apart from the pass, a batch ahead of it.
    """
    if not _on_cpu(device):
        return max(1, min(_cores() - 1, MAX_NER_PROCESSES))
    import torch

    threads = torch.get_num_threads()
    return max(1, min(-(-threads // TORCH_THREADS_PER_NER), MAX_NER_PROCESSES))


def ner_apart(device: str) -> bool:
    """Whether NER runs only in worker processes for a retriever on ``device`` (a GPU: this
    process feeds the card, and NER in a thread of it would take turns with the pass for the
    interpreter)."""
    return not _on_cpu(device)


class Diagnoser:
    """Predicts per-mention RPS with a probe and flags blind-spot entities.

    Args:
        encoder: The retriever the probe was trained for.
        probe: A trained probe; checked against the encoder (retriever, dim, pooling).
        mentions: A mention backend (:class:`~argus_ir.text.mentions.SpacyMentions` or
            :class:`~argus_ir.text.mentions.TransformersMentions`).
        tau: Flagging threshold (default: the probe card's).
        ner_apart: NER runs apart from the retriever's pass, and a batch started ahead has its
            mentions found while the pass reads the one before (:meth:`start`; default: where
            the retriever does not run on the CPU). Where it does not, NER runs ahead of the pass
            in the same call when the mention backend has worker processes, beside it in a
            thread when not.
        names: Names a KB knows (:class:`~argus_ir.text.names.NameMatcher`): a span of a text
            that is one of them is a mention even where NER cut or missed it (default: none).

    Its owner ends the NER thread and the mention backend's worker processes with
    :meth:`close` (or a ``with`` block) when done with it.

    Raises:
        ProbeMismatchError: The probe was trained for another retriever, dim or pooling.
    """

    def __init__(
        self,
        encoder: TokenEncoder,
        probe: TrainedProbe,
        mentions: MentionExtractor,
        *,
        tau: float | None = None,
        ner_apart: bool | None = None,
        names: NameMatcher | None = None,
    ) -> None:
        info = encoder.info
        probe.check_compatible(info.retriever_id, info.dim, info.pooling)
        self.encoder = encoder
        self.probe = probe
        self.mentions = mentions
        self.tau = probe.card.tau if tau is None else float(tau)
        if not 0.0 <= self.tau <= 1.0:
            raise ArgusInputError(f"tau must lie in [0, 1], got {self.tau}")
        if ner_apart is None:
            ner_apart = not _on_cpu(getattr(encoder, "device", "cpu"))
        self.ner_runs_apart = ner_apart
        self.names = names
        self._ner_thread: ThreadPoolExecutor | None = None
        # where NER runs apart, its workers also tokenise for the pass
        self._worker_tokens = WorkerTokens(encoder, mentions) if ner_apart else None

    def diagnose(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        *,
        show_progress: bool = False,
        window_only: bool = False,
    ) -> list[Diagnosis]:
        """Diagnose documents (one NER pass and one encoder pass over each).

        Args:
            texts: Document texts (``""`` for a document without text).
            ids: Document ids (default ``"0"``, ``"1"``, ...); must be unique.
            show_progress: Progress bars for NER and encoding.
            window_only: Read each document only as far as the retriever does (its first window,
                :meth:`~argus_ir.encoder.base.TokenEncoder.window_ends`): mentions past it are not
                found, and each token's state is the one the retriever's own pass gives it. For
                remedies whose views keep the document's text first (the descriptor), where a
                description past the window could never change a view's vector.

        Raises:
            ArgusInputError: A text is not a string (the message names its id), or ids repeat or
                do not match the texts in number.
        """
        started = self.start(texts, ids, show_progress=show_progress, window_only=window_only)
        return started.finish()

    def start(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        *,
        show_progress: bool = False,
        window_only: bool = False,
    ) -> StartedDiagnosis:
        """:meth:`diagnose` in two steps: this one checks the input and, where NER runs apart from
        the retriever's pass (:attr:`ner_runs_apart`), hands the texts to NER at once; the
        :meth:`StartedDiagnosis.finish` that follows runs the pass and the probe. A caller that
        starts the next batch before it finishes this one keeps NER a batch ahead of the pass.
        Started diagnoses finish in the order they were started.

        Raises:
            ArgusInputError: As :meth:`diagnose`.
        """
        ids = [str(i) for i in range(len(texts))] if ids is None else [str(i) for i in ids]
        if len(ids) != len(texts):
            raise ArgusInputError(f"{len(texts)} texts but {len(ids)} ids")
        seen: dict[str, int] = {}
        for pos, doc_id in enumerate(ids):
            if doc_id in seen:
                raise ArgusInputError(
                    f"duplicate document id {doc_id!r} (positions {seen[doc_id]} and {pos})"
                )
            seen[doc_id] = pos
        for doc_id, text in zip(ids, texts):
            if not isinstance(text, str):
                raise ArgusInputError(
                    f"document {doc_id!r}: text is {type(text).__name__}, not str"
                )
        texts = [readable_text(t) for t in texts]
        tokens = self._worker_tokens
        tokenizer = None if tokens is None else tokens.tokenizer(len(texts))
        if tokenizer is not None:  # the workers tokenise, cut the texts and find their mentions
            started = StartedDiagnosis(self, ids, texts, texts, show_progress, window_only)
            width = self.encoder.first_window_width if window_only else None
            started.tokenized = self._thread().submit(
                self.mentions.tokenized,  # type: ignore[attr-defined]
                texts,
                tokenizer,
                width,
            )
            return started
        read = self._read(texts, window_only)
        started = StartedDiagnosis(self, ids, texts, read, show_progress, window_only)
        if not self._ner_ahead(len(read)):
            # NER needs only the texts: it runs in a thread of its own (alone, or waiting on the
            # worker processes) while torch runs here (torch releases the GIL), which hides NER's
            # time behind the encoder's, or the encoder's behind NER's where the retriever runs
            # on a GPU. One thread for every call, so NER reads batches in the order started.
            started.mentions = self._thread().submit(
                self.mentions.extract, read, show_progress=show_progress
            )
        return started

    def _read(self, texts: list[str], window_only: bool) -> list[str]:
        """What NER reads: with ``window_only``, each text up to its window's last word."""
        if not window_only:
            return texts
        return [t[:end] for t, end in zip(texts, self.encoder.window_ends(texts), strict=True)]

    def _thread(self) -> ThreadPoolExecutor:
        if self._ner_thread is None:
            self._ner_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="argus-ner")
        return self._ner_thread

    def _from_workers(self, started: StartedDiagnosis) -> list[list[Mention]]:
        """The mentions of a batch whose NER workers also tokenised it, what NER read set
        (:mod:`argus_ir.worker_tokens`); where they failed or tokenise otherwise, the batch is
        tokenised and read here."""
        assert started.tokenized is not None and self._worker_tokens is not None
        texts = started.texts
        taken = self._worker_tokens.take(texts, started.tokenized.result())
        if taken is not None:
            found, started.read = taken
            return found
        started.read = self._read(texts, started.window_only)
        return self.mentions.extract(started.read, show_progress=started.show_progress)

    def _finish(self, started: StartedDiagnosis) -> list[Diagnosis]:
        encode = partial(
            self.encoder.encode,
            show_progress=started.show_progress,
            first_window=started.window_only,
        )
        texts = started.texts
        if started.tokenized is not None:  # the workers' tokens first: the pass reads them
            found = self._from_workers(started)
            encoded = list(encode(texts))
        elif started.mentions is None:
            # NER split over this process and workers, and then the retriever's pass on the same
            # cores: neither waits on a thread the other displaced (worth it where NER is a large
            # share of the pass, as spaCy's own loop was: 1,000 entity-list documents on two cores,
            # 14-15 s against 18-19 s beside; TORCH_THREADS_PER_NER says when that is now)
            found = self.mentions.extract(started.read, show_progress=started.show_progress)
            encoded = list(encode(texts))
        else:
            try:
                encoded = list(encode(texts))
            except BaseException:
                started.cancel()  # NER's own outcome is of no use now; the pass's error is
                raise
            found = started.mentions.result()
        read = started.read
        if self.names is not None:  # spans the KB names in full, where NER cut or missed them
            found = [self.names.merge(text, ms) for text, ms in zip(read, found, strict=True)]
        spans = [
            np.stack([enc.pool_span(m.start, m.end) for m in mentions]) if mentions else None
            for mentions, enc in zip(found, encoded, strict=True)
        ]
        out = []
        for doc_id, mentions, enc, scores in zip(
            started.ids, found, encoded, self._scores(started.ids, spans), strict=True
        ):
            out.append(Diagnosis(doc_id, self._group(mentions, scores), self.tau, enc.doc_vector))
        return out

    def _scores(self, ids: list[str], spans: list[np.ndarray | None]) -> list[np.ndarray]:
        """The probe's RPS for each document's span vectors (``None``: no mention). One call for
        the batch where the probe computes each row apart from the others (trees: the same
        numbers, and a call costs the same for one row as for hundreds), one per document
        where a row's result may depend on the others (a matrix product's blocking)."""
        empty = np.empty(0)
        if getattr(getattr(self.probe, "model", None), "rows_apart", False):
            rows = [x for x in spans if x is not None]
            flat = self.probe.predict(np.concatenate(rows)) if rows else empty
            parts = iter(np.split(flat, np.cumsum([len(x) for x in rows])[:-1]))
            scores = [empty if x is None else next(parts) for x in spans]
        else:
            scores = [empty if x is None else self.probe.predict(x) for x in spans]
        for doc_id, got in zip(ids, scores, strict=True):
            if not np.all(np.isfinite(got)):  # never flag by NaN, never write NaN
                raise ArgusInputError(
                    f"document {doc_id!r}: the probe ({self.probe.card.family}, trained for "
                    f"{self.probe.card.retriever_id}) predicted a non-finite RPS; its weights "
                    "are damaged or it was trained on other vectors"
                )
        return scores

    def close(self) -> None:
        """End the thread NER runs in beside the pass (after the NER under way; a batch started
        and not yet finished is cancelled) and the mention backend's worker processes, where it
        has them. The diagnoser stays usable: a later call starts them again."""
        thread, self._ner_thread = self._ner_thread, None
        if thread is not None:
            thread.shutdown(wait=True, cancel_futures=True)
        close = getattr(self.mentions, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> Diagnoser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_ner_thread": None}

    def _ner_ahead(self, count: int) -> bool:
        """NER runs before the retriever's pass: in worker processes, the retriever on the CPU."""
        in_workers = getattr(self.mentions, "in_workers", None)
        return not self.ner_runs_apart and in_workers is not None and bool(in_workers(count))

    def _group(self, mentions: list[Mention], scores: np.ndarray) -> tuple[EntityRisk, ...]:
        """Minimum score per normalised surface form, in order of first mention."""
        groups: dict[str, list[int]] = {}
        for i, m in enumerate(mentions):
            groups.setdefault(normalize(m.text), []).append(i)
        risks = []
        for members in groups.values():
            rps = float(min(scores[i] for i in members))
            first = mentions[members[0]]
            risks.append(
                EntityRisk(
                    surface=first.text,
                    label=first.label,
                    rps=rps,
                    flagged=rps < self.tau,
                    mentions=tuple(mentions[i] for i in members),
                )
            )
        return tuple(risks)


class StartedDiagnosis:
    """A batch handed to :meth:`Diagnoser.start`: its NER may be under way; :meth:`finish` gives
    its diagnoses."""

    def __init__(
        self,
        diagnoser: Diagnoser,
        ids: list[str],
        texts: list[str],
        read: list[str],
        show_progress: bool,
        window_only: bool,
    ) -> None:
        self.diagnoser = diagnoser
        self.ids = ids
        self.texts = texts
        self.read = read
        self.show_progress = show_progress
        self.window_only = window_only
        self.mentions: Future[list[list[Mention]]] | None = None
        self.tokenized: Future[Tokenized | None] | None = None  # NER's workers also tokenising

    def finish(self) -> list[Diagnosis]:
        """The diagnoses, in input order (runs the pass and the probe; raises what NER raised)."""
        return self.diagnoser._finish(self)

    def cancel(self) -> None:
        """Wait for its NER and drop the answer (a caller that will not finish it)."""
        for future in (self.mentions, self.tokenized):
            if future is not None and not future.cancel():
                future.exception()  # waits for it; what it raised is of no use now
