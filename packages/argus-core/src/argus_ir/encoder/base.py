"""The encoder contract: token states with character offsets, span pooling and the document vector.

One forward pass per window serves every mention of a text *and* its document embedding. Backends
(sentence-transformers, plain transformers) only differ in how they load the model and how the
retriever pools a document; the windowing, batching and span pooling live here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from argus_ir.encoder.windows import Window, assign_tokens, plan_windows

__all__ = ["PRECISIONS", "SPAN_POOLING", "EncodedText", "EncoderInfo", "TokenEncoder"]

logger = logging.getLogger(__name__)

SPAN_POOLING = "span-mean"
PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class EncoderInfo:
    """What identifies an encoder's embedding space (recorded in probe cards).

    Attributes:
        retriever_id: Canonical model id, e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``.
        dim: Embedding dimension.
        max_length: Most tokens (special tokens included) in one forward pass.
        doc_pooling: How the retriever pools a document (``"mean"`` or ``"cls"``).
        normalize: Whether the retriever L2-normalises document vectors.
        pooling: How mention vectors are pooled (always ``"span-mean"``).
    """

    retriever_id: str
    dim: int
    max_length: int
    doc_pooling: str = "mean"
    normalize: bool = True
    pooling: str = SPAN_POOLING


@dataclass(frozen=True, eq=False)
class EncodedText:
    """Token states of one text with their character offsets, and its document vector.

    Attributes:
        text: The input text.
        offsets: ``(n_tokens, 2)`` character ``[start, end)`` of each content token.
        states: ``(n_tokens, dim)`` float32 hidden state of each content token, taken from the window
            where the token has the most context.
        doc_vector: ``(dim,)`` the retriever's document embedding (what it would index).
        n_windows: Forward-pass windows the text needed.
    """

    text: str
    offsets: np.ndarray
    states: np.ndarray
    doc_vector: np.ndarray
    n_windows: int = 1

    def token_span(self, start: int, end: int) -> tuple[int, int]:
        """Token index range ``[t0, t1)`` of the tokens overlapping characters ``[start, end)``.

        Raises:
            ValueError: When the range is empty, out of the text, or covers no token (only
                whitespace, say).
        """
        if not 0 <= start < end <= len(self.text):
            raise ValueError(
                f"character span [{start}, {end}) is not inside a text of length {len(self.text)}"
            )
        tok_start = self.offsets[:, 0]
        tok_end = self.offsets[:, 1]
        hit = np.nonzero((tok_start < end) & (tok_end > start) & (tok_end > tok_start))[0]
        if hit.size == 0:
            raise ValueError(
                f"character span [{start}, {end}) {self.text[start:end]!r} covers no token"
            )
        return int(hit[0]), int(hit[-1]) + 1

    def pool_span(self, start: int, end: int) -> np.ndarray:
        """Mean of the token states over every word piece of characters ``[start, end)``."""
        t0, t1 = self.token_span(start, end)
        return self.states[t0:t1].mean(axis=0)


class TokenEncoder:
    """Base class: windowed, batched forward passes over a Hugging Face model.

    Subclasses set ``self.model`` (a ``transformers`` model), ``self.tokenizer`` (a fast tokenizer),
    ``self.info`` and ``self.device`` in ``__init__``.

    Args:
        batch_size: Windows per forward pass.
        stride: Step between window starts for long texts (default: a quarter overlap).
        precision: ``"fp32"`` (default: the retriever's own numbers) or ``"bf16"``: the forward pass
            under bfloat16 autocast, pooling in float32. On CPUs with native bf16 (AVX512-BF16, AMX)
            it roughly halves the pass; the states differ slightly from fp32, so use it for
            diagnosis speed, and keep indexing in the precision your retriever runs at.
    """

    model: Any
    tokenizer: Any
    info: EncoderInfo
    device: str

    def __init__(
        self, batch_size: int = 64, stride: int | None = None, precision: str = "fp32"
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.batch_size = batch_size
        self.stride = stride
        self.precision = precision

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return self.info.dim

    @property
    def _width(self) -> int:
        prefix, suffix = self._special_tokens()
        return self.info.max_length - len(prefix) - len(suffix)

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The special token ids the model puts before and after a single text."""
        cached = getattr(self, "_specials", None)
        if cached is None:
            probe = "hello"
            bare = self.tokenizer(probe, add_special_tokens=False)["input_ids"]
            full = self.tokenizer(probe, add_special_tokens=True)["input_ids"]
            for p in range(len(full) - len(bare) + 1):
                if full[p : p + len(bare)] == bare:
                    cached = (list(full[:p]), list(full[p + len(bare) :]))
                    break
            else:
                raise RuntimeError("cannot locate the text among the tokenizer's special tokens")
            self._specials = cached
        return cached

    def encode(
        self,
        texts: Iterable[str],
        *,
        chunk_size: int = 2048,
        show_progress: bool = False,
        total: int | None = None,
    ) -> Iterator[EncodedText]:
        """Encode texts, yielding one :class:`EncodedText` per text, in input order.

        Texts are read ``chunk_size`` at a time; within a chunk windows are sorted by length so a
        batch pads little.

        Args:
            texts: Texts to encode (any iterable; consumed lazily).
            chunk_size: Texts held in memory at once.
            show_progress: Show a progress bar over texts.
            total: Number of texts, for the progress bar when ``texts`` has no length.
        """
        from tqdm.auto import tqdm

        if total is None and isinstance(texts, Sequence):
            total = len(texts)
        bar = tqdm(total=total, disable=not show_progress, unit="text", desc="encoding")
        done = 0.0  # texts' worth of windows encoded; the bar moves in whole texts

        def advance(amount: float) -> None:
            nonlocal done
            before = int(round(done, 6))
            done += amount
            bar.update(int(round(done, 6)) - before)

        chunk: list[str] = []
        try:
            for text in texts:
                if not isinstance(text, str):
                    raise TypeError(f"texts must be str, got {type(text).__name__}")
                chunk.append(text)
                if len(chunk) >= chunk_size:
                    yield from self._encode_chunk(chunk, advance)
                    chunk = []
            if chunk:
                yield from self._encode_chunk(chunk, advance)
        finally:
            bar.close()

    def embed_documents(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Document vectors only, ``(len(texts), dim)``."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, enc in enumerate(self.encode(texts, show_progress=show_progress)):
            out[i] = enc.doc_vector
        return out

    # -- internals -------------------------------------------------------------------------------

    def _encode_chunk(
        self, texts: list[str], advance: Callable[[float], None] | None = None
    ) -> list[EncodedText]:
        """Encode one chunk; ``advance`` is told, after each batch, how many texts' worth is done."""
        tok = self.tokenizer(
            texts,
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        width = self._width
        plans: list[list[Window]] = []
        jobs: list[tuple[int, int, list[int]]] = []  # (text index, window index, ids)
        for t_idx, ids in enumerate(tok["input_ids"]):
            windows = plan_windows(len(ids), width, self.stride)
            plans.append(windows)
            for w_idx, w in enumerate(windows):
                jobs.append((t_idx, w_idx, ids[w.start : w.end]))
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][2]), reverse=True)
        states: dict[tuple[int, int], np.ndarray] = {}
        pooled: dict[int, np.ndarray] = {}
        for b in range(0, len(order), self.batch_size):
            batch = [jobs[j] for j in order[b : b + self.batch_size]]
            content, doc = self._forward([ids for _, _, ids in batch])
            for (t_idx, w_idx, _), st, dv in zip(batch, content, doc):
                states[(t_idx, w_idx)] = st
                if w_idx == 0:
                    pooled[t_idx] = dv
            if advance is not None:
                advance(len(batch) * len(texts) / len(jobs))
        out: list[EncodedText] = []
        for t_idx, text in enumerate(texts):
            windows = plans[t_idx]
            n_tok = len(tok["input_ids"][t_idx])
            if len(windows) == 1:
                token_states = states[(t_idx, 0)]
            else:
                win, pos = assign_tokens(n_tok, windows)
                token_states = np.empty((n_tok, self.dim), dtype=np.float32)
                for w_idx in range(len(windows)):
                    sel = win == w_idx
                    token_states[sel] = states[(t_idx, w_idx)][pos[sel]]
            offsets = np.asarray(tok["offset_mapping"][t_idx], dtype=np.int64).reshape(-1, 2)
            out.append(
                EncodedText(
                    text=text,
                    offsets=offsets,
                    states=token_states,
                    doc_vector=pooled[t_idx],
                    n_windows=len(windows),
                )
            )
        return out

    def _forward(self, batch_ids: list[list[int]]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Run one padded batch; return content-token states and pooled document vectors."""
        import torch

        prefix, suffix = self._special_tokens()
        full = [prefix + ids + suffix for ids in batch_ids]
        max_len = max(len(f) for f in full)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(full), max_len), pad, dtype=torch.long)
        mask = torch.zeros((len(full), max_len), dtype=torch.long)
        for i, f in enumerate(full):
            input_ids[i, : len(f)] = torch.tensor(f, dtype=torch.long)
            mask[i, : len(f)] = 1
        device_type = torch.device(self.device).type
        autocast = torch.autocast(
            device_type, dtype=torch.bfloat16, enabled=self.precision == "bf16"
        )
        with torch.inference_mode():
            with autocast:
                hidden = self.model(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device)
                ).last_hidden_state
            hidden = hidden.float()
            if self.info.doc_pooling == "cls":
                doc = hidden[:, 0]
            else:
                m = mask.to(hidden.device).unsqueeze(-1).to(hidden.dtype)
                doc = (hidden * m).sum(1) / m.sum(1).clamp(min=1)
            if self.info.normalize:
                doc = torch.nn.functional.normalize(doc, dim=-1)
            hidden_np = hidden.float().cpu().numpy()
            doc_np = doc.float().cpu().numpy()
        start = len(prefix)
        content = [hidden_np[i, start : start + len(ids)] for i, ids in enumerate(batch_ids)]
        return content, list(doc_np)
