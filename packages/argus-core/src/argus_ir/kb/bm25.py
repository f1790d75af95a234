"""The KB's BM25 index, built and read by argus itself, in ``bm25s``'s folder layout.

A KB folder's ``bm25/`` holds a sparse (passages x words) matrix of per-word BM25 scores, Lucene
variant (``k1 = 1.5``, ``b = 0.75``, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``), stored
column by column: ``data.csc.index.npy`` (float32 scores), ``indices.csc.index.npy`` (int32
passage rows, ascending in each column), ``indptr.csc.index.npy`` (int64 column starts),
``vocab.index.json`` (word -> column) and ``params.index.json``. That is the layout ``bm25s``
writes and reads, and the numbers are the ones it computes, to the bit: folders built before
argus wrote its own load here, and ``bm25s.BM25.load`` reads the ones argus writes.

"To the bit" holds on NumPy 2, which the package requires. argus's arithmetic is array by array,
so its scores are the same bytes under NumPy 1.26 and 2; bm25s adds a float64 scalar to a float32
array, which NumPy 1.x computes in float32 (value-based promotion), so there bm25s gives other
numbers (164,558 of the shipped KB's 425,604 scores) and its folders would rank otherwise.

Why argus does not call ``bm25s`` for this: importing ``bm25s`` imports its ``selection``
module, which imports JAX wherever JAX is installed and runs a top-k on it, and JAX then takes
three quarters of a GPU's memory. argus must not start another framework on a user's GPU, so
it tokenises, scores and reads the index with numpy alone (:func:`tokenize` is
``bm25s.tokenize(texts, stopwords="en")``: the same words, the same ids).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = ["K1", "STOPWORDS_EN", "B", "BM25Index", "tokenize", "words"]

K1 = 1.5
"""BM25's term-frequency saturation."""
B = 0.75
"""BM25's length normalisation."""

STOPWORDS_EN = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
)  # fmt: skip
"""Lucene's English stop set: the 33 words ``bm25s`` drops with ``stopwords="en"``."""

_STOP = frozenset(STOPWORDS_EN)
_WORD = re.compile(r"(?u)\b\w\w+\b")  # two or more word characters, as scikit-learn splits
_FILES = {
    "data": "data.csc.index.npy",
    "indices": "indices.csc.index.npy",
    "indptr": "indptr.csc.index.npy",
}
_VOCAB = "vocab.index.json"
_PARAMS = "params.index.json"
_CHUNK = 20_000  # passages scored at once while building (bounds the working arrays)


def words(text: str) -> list[str]:
    """The index words of one text: lowercased runs of two or more word characters, without
    :data:`STOPWORDS_EN`."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def tokenize(
    texts: Iterable[str], *, show_progress: bool = False, total: int | None = None
) -> tuple[list[np.ndarray], dict[str, int]]:
    """Word ids per text and the vocabulary (word -> id, numbered in order of first use)."""
    from tqdm.auto import tqdm

    vocab: dict[str, int] = {}
    ids: list[np.ndarray] = []
    for text in tqdm(texts, total=total, desc="BM25 words", disable=not show_progress):
        row = [vocab.setdefault(w, len(vocab)) for w in words(text)]
        ids.append(np.asarray(row, dtype=np.int32))
    return ids, vocab


class BM25Index:
    """A KB's BM25 scores: what :func:`argus_ir.kb.reference.postings_scores` reads.

    Attributes:
        vocab_dict: Word -> column (an empty word ``""`` closes it, as ``bm25s`` writes it).
        scores: ``{"data", "indices", "indptr", "num_docs"}``, the matrix column by column.
    """

    def __init__(self, vocab_dict: dict[str, int], scores: dict[str, Any]) -> None:
        self.vocab_dict = vocab_dict
        self.scores = scores

    @classmethod
    def build(
        cls, texts: Sequence[str] | Iterable[str], *, show_progress: bool = False
    ) -> BM25Index:
        """Index texts (one passage each, in row order)."""
        total = len(texts) if isinstance(texts, Sequence) else None
        ids, vocab = tokenize(texts, show_progress=show_progress, total=total)
        return cls.from_ids(ids, vocab, show_progress=show_progress)

    @classmethod
    def from_ids(
        cls, ids: list[np.ndarray], vocab: dict[str, int], *, show_progress: bool = False
    ) -> BM25Index:
        """Index word ids (from :func:`tokenize`); ``ids`` is emptied as it is read."""
        from tqdm.auto import tqdm

        n_docs, n_vocab = len(ids), len(vocab)
        if not n_docs:
            raise ArgusInputError("a BM25 index needs at least one passage")
        lengths = np.array([row.size for row in ids], dtype=np.int64)
        avg_len = lengths.mean()  # a numpy float64, as in bm25s: the scores' rounding follows it
        rows_parts, cols_parts, tf_parts = [], [], []
        for start in tqdm(range(0, n_docs, _CHUNK), desc="BM25 scores", disable=not show_progress):
            chunk = ids[start : start + _CHUNK]
            sizes = np.array([row.size for row in chunk], dtype=np.int64)
            rows = np.repeat(np.arange(start, start + len(chunk), dtype=np.int64), sizes)
            cols = np.concatenate(chunk).astype(np.int64) if sizes.sum() else rows[:0]
            pairs, tf = np.unique((rows << 32) | cols, return_counts=True)
            rows_parts.append((pairs >> 32).astype(np.int32))
            cols_parts.append((pairs & 0xFFFFFFFF).astype(np.int32))
            tf_parts.append(tf)
            ids[start : start + len(chunk)] = [np.empty(0, np.int32)] * len(chunk)
        rows = np.concatenate(rows_parts)
        cols = np.concatenate(cols_parts)
        tf = np.concatenate(tf_parts).astype(np.float32)
        df = np.bincount(cols, minlength=n_vocab)
        idf = np.zeros(n_vocab, dtype=np.float32)
        for col, count in enumerate(df.tolist()):  # math.log, as bm25s, so every bit agrees
            if count:
                idf[col] = math.log(1 + (n_docs - count + 0.5) / (count + 0.5))
        doc_len = lengths[rows]
        # the same operations in the same order and types as bm25s's Lucene scores under NumPy 2;
        # all array by array, so no NumPy's scalar promotion changes them
        denom = K1 * ((1 - B) + B * doc_len / avg_len) + tf
        data = (idf[cols] * (tf / denom)).astype(np.float32)
        order = np.argsort((cols.astype(np.int64) << 32) | rows, kind="stable")
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        scores = {
            "data": data[order],
            "indices": rows[order],
            "indptr": indptr,
            "num_docs": n_docs,
        }
        vocab = dict(vocab)
        if "" not in vocab:
            vocab[""] = n_vocab
        return cls(vocab, scores)

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the index to ``folder`` (created; files replaced)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        for key, name in _FILES.items():
            np.save(out / name, np.asarray(self.scores[key]), allow_pickle=False)
        (out / _VOCAB).write_text(json.dumps(self.vocab_dict, ensure_ascii=False), "utf-8")
        params = {
            "k1": K1,
            "b": B,
            "delta": 0.5,
            "method": "lucene",
            "idf_method": "lucene",
            "dtype": "float32",
            "int_dtype": "int32",
            "num_docs": int(self.scores["num_docs"]),
            "version": "argus",
            "backend": "numpy",
        }
        (out / _PARAMS).write_text(json.dumps(params, indent=4), "utf-8")

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, mmap: bool = True) -> BM25Index:
        """Read an index folder (argus's or ``bm25s``'s, Lucene scores), memory-mapped by default.

        Raises:
            ArgusInputError: A file is missing, cut or of another kind, or the arrays do not
                make one matrix: column starts that are not 0, ascending and ending at the
                postings' count, a word without its column, a passage row out of range or twice
                in a column (names the file and the fault).
        """
        src = Path(folder)
        try:
            params = json.loads((src / _PARAMS).read_text("utf-8"))
            vocab = json.loads((src / _VOCAB).read_text("utf-8"))
            arrays = {
                key: np.load(src / name, mmap_mode="r" if mmap else None, allow_pickle=False)
                for key, name in _FILES.items()
            }
        except (OSError, ValueError) as exc:  # a missing, cut or foreign file
            raise ArgusInputError(
                f"{src}: cannot read the BM25 index ({type(exc).__name__}: {exc})"
            ) from None
        if not isinstance(params, dict) or not isinstance(vocab, dict):
            raise ArgusInputError(f"{src}: {_PARAMS} and {_VOCAB} must hold JSON objects")
        method = params.get("method", "lucene")
        if method != "lucene" or params.get("k1", K1) != K1 or params.get("b", B) != B:
            raise ArgusInputError(
                f"{src / _PARAMS}: a {method} index with k1={params.get('k1')}, "
                f"b={params.get('b')}; argus reads Lucene BM25 with k1={K1}, b={B}"
            )
        num_docs = params.get("num_docs")
        if not isinstance(num_docs, int) or isinstance(num_docs, bool) or num_docs < 1:
            raise ArgusInputError(
                f"{src / _PARAMS}: num_docs must be a passage count, not {num_docs!r}"
            )
        _check(src, arrays, vocab, num_docs)
        return cls(vocab, {**arrays, "num_docs": num_docs})


def _check(src: Path, arrays: dict[str, np.ndarray], vocab: dict[str, Any], num_docs: int) -> None:
    """Refuse arrays that do not make one (passages x words) matrix, naming the file and the fault:
    a column table that does not start at 0, runs backwards or ends short or long of the postings
    would hand a word another word's postings or cut them."""

    def refuse(key: str, what: str) -> ArgusInputError:
        return ArgusInputError(f"{src / _FILES[key]}: {what}; the BM25 index folder is damaged")

    kinds = {"data": ("f", "floating"), "indices": ("iu", "integers"), "indptr": ("iu", "integers")}
    for key, (kind, named) in kinds.items():
        arr = arrays[key]
        if arr.ndim != 1:
            raise refuse(key, f"an array of {arr.ndim} dimensions, not a list")
        if arr.dtype.kind not in kind:
            raise refuse(key, f"holds {arr.dtype}, not {named}")
    data, indices, indptr = arrays["data"], arrays["indices"], arrays["indptr"]
    n_words = sum(1 for word in vocab if word != "")  # "" closes the vocabulary: no column
    if indptr.size != n_words + 1:
        raise refuse(
            "indptr",
            f"{indptr.size} entries for {n_words} words in {_VOCAB} (needs {n_words + 1})",
        )
    if int(indptr[0]) != 0:
        raise refuse("indptr", f"starts at {int(indptr[0])}, not 0")
    steps = np.diff(indptr)
    if steps.size and int(steps.min()) < 0:
        raise refuse("indptr", f"decreases at column {int(np.argmax(steps < 0))}")
    if int(indptr[-1]) != data.size or data.size != indices.size:
        raise refuse(
            "indptr",
            f"ends at {int(indptr[-1])}, but {_FILES['data']} and {_FILES['indices']} hold "
            f"{data.size} and {indices.size} postings",
        )
    for word, column in vocab.items():
        if not isinstance(column, int) or isinstance(column, bool):
            raise ArgusInputError(f"{src / _VOCAB}: {word!r} -> {column!r} is not a column")
        if word != "" and not 0 <= column < n_words:
            raise ArgusInputError(
                f"{src / _VOCAB}: {word!r} names column {column}; the index has {n_words}"
            )
    if len(set(vocab.values())) != len(vocab):
        raise ArgusInputError(f"{src / _VOCAB}: two words share a column")
    # each column's passage rows ascend (no passage twice) and lie in [0, num_docs); read in
    # slices, so a memory-mapped index of any size is checked without a copy of it
    starts = np.zeros(max(indices.size - 1, 0), dtype=bool)
    inner = indptr[1:-1]
    starts[inner[(inner > 0) & (inner < indices.size)] - 1] = True  # step i -> i+1 crosses a column
    for lo in range(0, indices.size, _CHUNK * 50):
        part = np.asarray(indices[lo : lo + _CHUNK * 50 + 1], dtype=np.int64)
        low, high = int(part.min()), int(part.max())
        if low < 0 or high >= num_docs:
            bad = low if low < 0 else high
            raise refuse(
                "indices",
                f"passage row {bad} in an index of {num_docs} passages ({_PARAMS})",
            )
        down = (np.diff(part) <= 0) & ~starts[lo : lo + part.size - 1]
        if down.any():
            at = lo + int(np.argmax(down)) + 1
            column = int(np.searchsorted(indptr, at, side="right")) - 1
            raise refuse("indices", f"passage rows not ascending in column {column} (at {at})")
