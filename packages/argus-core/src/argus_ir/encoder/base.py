"""The encoder contract: token states with character offsets, span pooling and the document vector.

One forward pass per window serves every mention of a text *and* its document embedding. Backends
(sentence-transformers, plain transformers) only differ in how they load the model and how the
retriever pools a document; the windowing, batching and span pooling live here.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from argus_ir.encoder.tokens import Tokens, first_window_end
from argus_ir.encoder.windows import Window, assign_tokens, plan_windows
from argus_ir.errors import ArgusInputError

__all__ = [
    "PRECISIONS",
    "SPAN_POOLING",
    "EncodedText",
    "EncoderInfo",
    "TokenEncoder",
    "native_bf16",
    "resolve_precision",
]

logger = logging.getLogger(__name__)

SPAN_POOLING = "span-mean"
PAD_MULTIPLE = 16
"""Windows are padded to the next multiple of this many tokens (capped at the model's limit), and
only windows of one padded length share a forward pass. How far a window is padded changes its
states in the last bits, so a fixed padding per window makes a text's states the same whatever
else is in its batch (on CPU; see :meth:`TokenEncoder.encode`)."""
MIN_BATCH_TOKENS = 512
"""A forward pass holds at least this many token rows (and two windows): a smaller matrix product
takes other CPU kernels, whose last bits differ, and in bf16 differ again with the thread count;
short batches are filled with copies. (Measured with torch 2.13 on AVX512/AMX CPUs: fp32 is
invariant from 256 rows, bf16 from 512.)"""
TOKEN_MEMO = 4
"""Batches whose tokens an encoder keeps: the diagnosis asks for one batch's twice (where its first
window ends, before NER; its pass, after), and on a GPU another batch is started in between."""
PRECISIONS = ("fp32", "bf16", "auto")
"""Forward-pass precisions: ``"auto"`` is bf16 where the device computes it natively, else fp32."""


def native_bf16(device: str) -> bool:
    """Whether ``device`` runs bfloat16 matrix work natively (so autocast speeds it up).

    CPUs: the ``amx_bf16`` or ``avx512_bf16`` flags (read from ``/proc/cpuinfo``; other systems
    report no). CUDA: compute capability 8.0 (Ampere) or newer. Anything else: no.
    """
    kind = device.split(":")[0]
    if kind == "cpu":
        return bool(_cpu_flags() & {"amx_bf16", "avx512_bf16"})
    if kind == "cuda":
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.get_device_capability(device)[0] >= 8)
    return False


def _cpu_flags() -> set[str]:
    """The CPU feature flags Linux reports (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def resolve_precision(precision: str, device: str) -> str:
    """``"fp32"`` or ``"bf16"``: ``precision`` itself, or what ``"auto"`` means on ``device``."""
    if precision not in PRECISIONS:
        raise ArgusInputError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    return precision


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
            raise ArgusInputError(
                f"character span [{start}, {end}) is not inside a text of length {len(self.text)}"
            )
        tok_start = self.offsets[:, 0]
        tok_end = self.offsets[:, 1]
        hit = np.nonzero((tok_start < end) & (tok_end > start) & (tok_end > tok_start))[0]
        if hit.size == 0:
            raise ArgusInputError(
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
        precision: ``"fp32"`` (default: the retriever's own numbers), ``"bf16"`` (the forward
            pass under bfloat16 autocast, pooling in float32) or ``"auto"`` (bf16 where the device
            has it natively, see :func:`native_bf16`). On CPUs with native bf16 (AVX512-BF16, AMX)
            it roughly halves the pass; the states differ slightly from fp32, so use it for
            diagnosis speed, and keep indexing in the precision your retriever runs at. After
            loading, :attr:`precision` holds the resolved value.
    """

    model: Any
    tokenizer: Any
    info: EncoderInfo
    device: str

    def __init__(
        self, batch_size: int = 64, stride: int | None = None, precision: str = "fp32"
    ) -> None:
        if batch_size < 1:
            raise ArgusInputError(f"batch_size must be positive, got {batch_size}")
        if precision not in PRECISIONS:
            raise ArgusInputError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.batch_size = batch_size
        self.stride = stride
        self._requested_precision = precision

    @property
    def precision(self) -> str:
        """The forward pass's precision, ``"fp32"`` or ``"bf16"`` (``"auto"`` resolved)."""
        resolved = getattr(self, "_precision", None)
        if resolved is None:
            resolved = resolve_precision(self._requested_precision, self.device)
            self._precision = resolved
        return resolved

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
        first_window: bool = False,
    ) -> Iterator[EncodedText]:
        """Encode texts, yielding one :class:`EncodedText` per text, in input order.

        Texts are read ``chunk_size`` at a time; within a chunk, windows are grouped by their
        padded length (:data:`PAD_MULTIPLE`) so a batch pads little. On CPU a text's output does not
        depend on the other texts, their order, the batch size or the chunk size, in fp32 and in
        bf16: every window is padded the same way wherever it goes, and a batch too small for the
        large-matrix kernels is filled with copies (:data:`MIN_BATCH_TOKENS`). GPUs choose
        kernels by shape, so there the last bits may depend on the batch.

        Args:
            texts: Texts to encode (any iterable; consumed lazily).
            chunk_size: Texts held in memory at once.
            show_progress: Show a progress bar over texts.
            total: Number of texts, for the progress bar when ``texts`` has no length.
            first_window: Encode only each text's first window, what the retriever itself reads:
                states (and offsets) of its tokens alone, the same document vector.
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
                    yield from self._encode_chunk(chunk, advance, first_window)
                    chunk = []
            if chunk:
                yield from self._encode_chunk(chunk, advance, first_window)
        finally:
            bar.close()

    def window_ends(self, texts: Sequence[str]) -> list[int]:
        """Where the first window of each text ends: the character offset up to which the
        retriever reads it (the text's length when it fits one window).

        The cut falls between words, never inside one, so the prefix is tokenised as the text's
        first tokens are (a word-piece tokenizer splits words on their own) and a mention found in
        it is whole.
        """
        if not texts:
            return []
        width = self._width
        tokens = self._tokens(texts)
        return [first_window_end(t, o, width) for t, (_, o) in zip(texts, tokens, strict=True)]

    @property
    def first_window_width(self) -> int:
        """Content tokens of a window (the model's limit less its special tokens)."""
        return self._width

    def same_tokens(self, text: str, tokens: Tokens) -> bool:
        """Whether ``tokens`` are the ids and offsets this encoder's tokenizer gives ``text``."""
        ids, offsets = self._tokens([text])[0]
        return list(tokens[0]) == ids and np.array_equal(tokens[1], offsets)

    def remember_tokens(self, texts: Sequence[str], tokens: Sequence[Tokens]) -> None:
        """Take ``texts``' tokens computed elsewhere (:mod:`argus_ir.encoder.tokens`: a worker
        with this tokenizer), kept as :meth:`_tokens` keeps its own: a later call with these
        texts does not tokenise them again."""
        if len(tokens) != len(texts):
            raise ValueError(f"{len(tokens)} tokenised texts for {len(texts)} texts")
        memo: OrderedDict[tuple[str, ...], list[Tokens]]
        memo = self.__dict__.setdefault("_token_memo", OrderedDict())
        memo[tuple(texts)] = list(tokens)
        while len(memo) > TOKEN_MEMO:
            memo.popitem(last=False)

    def embed_documents(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Document vectors only, ``(len(texts), dim)``."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, enc in enumerate(self.encode(texts, show_progress=show_progress)):
            out[i] = enc.doc_vector
        return out

    # -- internals -------------------------------------------------------------------------------

    def _encode_chunk(
        self,
        texts: list[str],
        advance: Callable[[float], None] | None = None,
        first_window: bool = False,
    ) -> list[EncodedText]:
        """Encode one chunk; ``advance`` is told, after each batch, how many texts' worth is done."""
        tokens = self._tokens(texts)
        width = self._width
        plans: list[list[Window]] = []
        jobs: list[tuple[int, int, list[int]]] = []  # (text index, window index, ids)
        for t_idx, (ids, _) in enumerate(tokens):
            windows = plan_windows(len(ids), width, self.stride)
            if first_window:
                windows = windows[:1]
            plans.append(windows)
            for w_idx, w in enumerate(windows):
                jobs.append((t_idx, w_idx, ids[w.start : w.end]))
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][2]), reverse=True)
        groups: dict[int, list[int]] = {}  # padded length -> jobs, longest first
        for j in order:
            groups.setdefault(self._padded_length(len(jobs[j][2])), []).append(j)
        states: dict[tuple[int, int], np.ndarray] = {}
        pooled: dict[int, np.ndarray] = {}
        for pad_to, members in groups.items():
            for b in range(0, len(members), self.batch_size):
                batch = [jobs[j] for j in members[b : b + self.batch_size]]
                content, doc = self._forward([ids for _, _, ids in batch], pad_to=pad_to)
                for (t_idx, w_idx, _), st, dv in zip(batch, content, doc):
                    states[(t_idx, w_idx)] = st
                    if w_idx == 0:
                        pooled[t_idx] = dv
                if advance is not None:
                    advance(len(batch) * len(texts) / len(jobs))
        out: list[EncodedText] = []
        for t_idx, text in enumerate(texts):
            windows = plans[t_idx]
            n_tok = windows[-1].end  # all of the text's tokens unless first_window cut them
            if len(windows) == 1:
                token_states = states[(t_idx, 0)]
            else:
                win, pos = assign_tokens(n_tok, windows)
                token_states = np.empty((n_tok, self.dim), dtype=np.float32)
                for w_idx in range(len(windows)):
                    sel = win == w_idx
                    token_states[sel] = states[(t_idx, w_idx)][pos[sel]]
            offsets = tokens[t_idx][1][:n_tok]
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

    def _tokens(self, texts: Sequence[str]) -> list[Tokens]:
        """Each text's content-token ids and ``(n, 2)`` character offsets (no special tokens, no
        truncation), kept for the last :data:`TOKEN_MEMO` batches."""
        key = tuple(texts)
        memo: OrderedDict[tuple[str, ...], list[Tokens]]
        memo = self.__dict__.setdefault("_token_memo", OrderedDict())
        if key in memo:
            memo.move_to_end(key)
            return memo[key]
        tok = self.tokenizer(
            list(texts),
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        tokens = [
            (list(ids), np.asarray(offsets, dtype=np.int64).reshape(-1, 2))
            for ids, offsets in zip(tok["input_ids"], tok["offset_mapping"], strict=True)
        ]
        self.remember_tokens(texts, tokens)
        return tokens

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_token_memo"}

    def _padded_length(self, n_content: int) -> int:
        """Tokens a window of ``n_content`` content tokens is padded to (specials included)."""
        prefix, suffix = self._special_tokens()
        total = len(prefix) + n_content + len(suffix)
        return min(self.info.max_length, -(-total // PAD_MULTIPLE) * PAD_MULTIPLE)

    def _forward(
        self, batch_ids: list[list[int]], pad_to: int | None = None
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Run one padded batch; return content-token states and pooled document vectors.

        ``pad_to`` fixes the padded length (default: the longest window); a batch below
        :data:`MIN_BATCH_TOKENS` rows or two windows is filled with copies of its first window, so
        it takes the kernels a larger batch takes.
        """
        import torch

        prefix, suffix = self._special_tokens()
        full = [prefix + ids + suffix for ids in batch_ids]
        max_len = max(pad_to or 0, max(len(f) for f in full))
        rows = max(2, -(-MIN_BATCH_TOKENS // max_len))
        if len(full) < rows:
            full += [full[0]] * (rows - len(full))
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
        return content, list(doc_np[: len(batch_ids)])
