"""Embed once: the vectors :class:`~langchain_argus.ArgusDocumentTransformer` computed, handed to
the store that indexes its output.

With ``ArgusDocumentTransformer(embed=True)`` every document the transformer returns has its
retriever vector computed already (an original's by the diagnosis pass, a view's by the encoder
argus holds). :meth:`ArgusDocumentTransformer.embeddings` wraps the store's own embeddings so that
``embed_documents`` answers from those vectors, and everything else (queries, texts the
transformer never returned) goes to the wrapped model.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from argus_ir.encoder.models import canonical_id, same_model
from argus_ir.errors import ArgusInputError

__all__ = ["DEFAULT_MAX_PENDING", "ArgusEmbeddings", "PendingVectors"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_PENDING = 100_000
"""Vectors held for texts the store has not asked for yet (about 150 MB at MiniLM's 384
dimensions); past it the oldest are dropped, and the store's embeddings compute them again."""

# encode settings of a sentence-transformers model that change what a document's vector is,
# beyond what argus reproduces (the model's own pooling and normalisation)
_CHANGES_VECTORS = ("prompt", "prompt_name", "precision", "truncate_dim", "output_value")
# the same, given where the model is built (SentenceTransformer's constructor)
_MODEL_CHANGES_VECTORS = ("prompts", "default_prompt_name", "truncate_dim")

# embeddings that wrap another and return its vectors (a cache, argus's own): checked through
_WRAPPED = ("underlying_embeddings",)

PROBE_TEXT = (
    "The 1755 earthquake destroyed much of Lisbon, and the Marquis of Pombal rebuilt the Baixa."
)
"""The text both the store's embeddings and argus's encoder embed when the transformer checks
that their vectors are one space (:meth:`ArgusEmbeddings.__init__`)."""

MIN_PROBE_COSINE = 0.999
"""The least cosine between the two vectors of :data:`PROBE_TEXT`: the same model at fp32
agrees to about 1e-6, another model or setting falls far below."""


class PendingVectors:
    """Vectors waiting for a store to ask for their texts: each is handed out once per time it was
    put (a text returned twice is asked for twice), then dropped; at most ``max_pending`` wait.
    Thread-safe (a store may embed from worker threads, or the event loop and a thread at once)."""

    def __init__(self, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        if max_pending < 1:
            raise ArgusInputError(f"max_pending must be >= 1, got {max_pending}")
        self.max_pending = max_pending
        self.dropped = 0
        self._held: OrderedDict[str, tuple[np.ndarray, int]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def put(self, texts: Sequence[str], vectors: Sequence[np.ndarray | None]) -> None:
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                if vector is None:
                    continue
                _, times = self._held.pop(text, (vector, 0))
                self._held[text] = (vector, times + 1)
                self._count += 1
            while self._count > self.max_pending:
                text, (vector, times) = self._held.popitem(last=False)
                self._count -= times
                if not self.dropped:
                    logger.warning(
                        "more than %d argus vectors wait for the store to ask for them; the "
                        "oldest are dropped and will be embedded again (add each transformed "
                        "batch to the store before transforming the next, or raise max_pending)",
                        self.max_pending,
                    )
                self.dropped += times

    def take(self, text: str) -> np.ndarray | None:
        with self._lock:
            held = self._held.get(text)
            if held is None:
                return None
            vector, times = held
            if times > 1:
                self._held[text] = (vector, times - 1)
            else:
                del self._held[text]
            self._count -= 1
            return vector


def base_model(base: Embeddings) -> str | None:
    """The model name an embeddings object declares, where it can be read."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(base, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


def unwrapped(base: Embeddings) -> Embeddings:
    """The embeddings that compute ``base``'s document vectors: through argus's own wrapper and
    through wrappers that hand another's vectors on (LangChain's ``CacheBackedEmbeddings``)."""
    seen: set[int] = set()
    while id(base) not in seen:
        seen.add(id(base))
        if isinstance(base, ArgusEmbeddings):
            base = base.__dict__["base"]
            continue
        inner = next(
            (
                getattr(base, a, None)
                for a in _WRAPPED
                if isinstance(getattr(base, a, None), Embeddings)
            ),
            None,
        )
        if inner is None:
            return base
        base = inner
    return base


class ArgusEmbeddings(Embeddings):
    """A store's embeddings that answer ``embed_documents`` from argus's vectors.

    Build it with :meth:`ArgusDocumentTransformer.embeddings <langchain_argus.ArgusDocumentTransformer.embeddings>`.
    A text the transformer returned is answered from its vector, and that vector is dropped;
    every other text, and every query, goes to ``base``.

    ``base`` is checked before any vector is handed out, because a store that mixes argus's
    vectors with ``base``'s fails only at search time (a shape error) or, worse, not at all
    (two spaces in one index): the model it declares (read through known wrappers such as
    ``CacheBackedEmbeddings``), the settings that change a document's vector, and, with
    ``probe``, one vector of :data:`PROBE_TEXT` from ``base`` against argus's own (same length,
    cosine at least :data:`MIN_PROBE_COSINE`): this catches what no attribute names.

    Args:
        base: The store's embeddings.
        pending: Where the transformer holds its vectors.
        retriever: The transformer's retriever (a model name or path).
        probe: argus's document vector of a text; ``None`` skips the vector check.

    Raises:
        ArgusInputError: ``base`` declares another model than the transformer's retriever, or
            encode settings that change a document's vector (a prompt, another precision, a
            truncated dimension), or its vector of :data:`PROBE_TEXT` is not argus's.
    """

    def __init__(
        self,
        base: Embeddings,
        pending: PendingVectors,
        retriever: str,
        probe: Callable[[str], np.ndarray] | None = None,
    ) -> None:
        if isinstance(base, ArgusEmbeddings):
            base = base.__dict__["base"]
        computes = unwrapped(base)
        where = type(base).__name__
        if computes is not base:
            where += f" (over {type(computes).__name__})"
        name = base_model(computes)
        if name is not None and not same_model(name, retriever):
            raise ArgusInputError(
                f"{where} embeds with {name!r}, but the transformer diagnoses and "
                f"embeds with {canonical_id(retriever)!r}: their vectors would not share one "
                "space; build the store's embeddings with the transformer's retriever"
            )
        encode = dict(getattr(computes, "encode_kwargs", None) or {})
        model_kwargs = dict(getattr(computes, "model_kwargs", None) or {})
        changed = [
            f"encode_kwargs[{k!r}]"
            for k in _CHANGES_VECTORS
            if encode.get(k) not in (None, "float32")
        ]
        changed += [f"model_kwargs[{k!r}]" for k in _MODEL_CHANGES_VECTORS if model_kwargs.get(k)]
        if changed:
            raise ArgusInputError(
                f"{where} is set to embed documents with {', '.join(sorted(changed))}, which "
                "argus's vectors do not reproduce; use the store's embeddings without it, or "
                "embed=False"
            )
        self.base = base
        self.pending = pending
        self._normalize = bool(encode.get("normalize_embeddings"))
        if probe is not None:
            _check_probe(where, computes, probe)

    def _answer(self, texts: list[str]) -> tuple[list[list[float] | None], list[int]]:
        out: list[list[float] | None] = []
        missing = []
        for i, text in enumerate(texts):
            vector = self.pending.take(text)
            if vector is not None and self._normalize:
                vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
            out.append(None if vector is None else vector.tolist())
            if vector is None:
                missing.append(i)
        return out, missing

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out, missing = self._answer(texts)
        if missing:
            computed = self.base.embed_documents([texts[i] for i in missing])
            for i, vector in zip(missing, computed, strict=True):
                out[i] = vector
        return out  # type: ignore[return-value]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        out, missing = self._answer(texts)
        if missing:
            computed = await self.base.aembed_documents([texts[i] for i in missing])
            for i, vector in zip(missing, computed, strict=True):
                out[i] = vector
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        return self.base.embed_query(text)

    async def aembed_query(self, text: str) -> list[float]:
        return await self.base.aembed_query(text)

    def __getattr__(self, name: str) -> Any:  # what a store reads of its embeddings' model
        if name in ("base", "pending", "_normalize"):
            raise AttributeError(name)
        return getattr(self.base, name)


def _check_probe(where: str, computes: Embeddings, probe: Callable[[str], np.ndarray]) -> None:
    """Refuse ``computes`` unless its vector of :data:`PROBE_TEXT` is argus's."""
    theirs = np.asarray(computes.embed_documents([PROBE_TEXT])[0], dtype=np.float64)
    ours = np.asarray(probe(PROBE_TEXT), dtype=np.float64)
    if theirs.shape != ours.shape:
        raise ArgusInputError(
            f"{where} returns {theirs.size}-dimensional document vectors, argus's retriever "
            f"{ours.size}-dimensional: a setting such as truncate_dim, or another model; the "
            "store would hold vectors of two sizes. Build the store's embeddings with the "
            "transformer's retriever and no such setting, or use embed=False"
        )
    norms = float(np.linalg.norm(theirs) * np.linalg.norm(ours)) or 1.0
    cosine = float(theirs @ ours) / norms
    if cosine < MIN_PROBE_COSINE:
        raise ArgusInputError(
            f"{where} embeds a test sentence {cosine:.3f} cosine away from argus's retriever "
            f"(at least {MIN_PROBE_COSINE} for one model): another model, a prompt or another "
            "precision. Build the store's embeddings with the transformer's retriever, or use "
            "embed=False; embeddings(base, verify=False) skips this check"
        )
