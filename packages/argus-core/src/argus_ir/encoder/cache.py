"""On-disk cache of vectors: pooled entity mentions (the audit) and whole documents (coverage).

Vectors are written in shards of ``.npz`` files as encoding proceeds, so an interrupted run resumes
where it stopped: the next run encodes only what no shard holds yet. Loading uses
``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from argus_ir.errors import ArgusInputError

__all__ = ["VectorCache", "cached_vectors", "span_key", "text_key"]


def span_key(retriever_id: str, text: str, start: int, end: int) -> str:
    """Cache key of one mention vector (hex digest)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(retriever_id.encode())
    h.update(b"\x00")
    h.update(text.encode("utf-8"))
    h.update(f"\x00{start}:{end}".encode())
    return h.hexdigest()


def text_key(model_key: str, text: str) -> str:
    """Cache key of one whole-text vector (hex digest); ``model_key`` names the model and its
    settings. The hashed bytes are framed unlike :func:`span_key`'s, so the two kinds of key
    do not meet."""
    h = hashlib.blake2b(digest_size=16)
    h.update(model_key.encode())
    h.update(b"\x00text\x00")
    h.update(text.encode("utf-8"))
    return h.hexdigest()


class VectorCache:
    """A folder of npz shards mapping keys to ``(dim,)`` float32 vectors.

    Args:
        folder: Where the shards live (one folder per encoder is a good habit).
        dim: Vector dimension; shards of another dimension are an error.

    Example:
        >>> cache = VectorCache(tmp_path, dim=4)  # doctest: +SKIP
        >>> cache.add({"k": np.ones(4, np.float32)}); cache.get("k")  # doctest: +SKIP
    """

    def __init__(self, folder: str | Path, dim: int) -> None:
        self.folder = Path(folder)
        self.dim = dim
        self._data: dict[str, np.ndarray] = {}
        self._next = 0
        if self.folder.exists():
            for shard in sorted(self.folder.glob("shard-*.npz")):
                with np.load(shard, allow_pickle=False) as z:
                    keys, vecs = z["keys"], z["vectors"]
                if vecs.ndim != 2 or vecs.shape[1] != dim:
                    raise ArgusInputError(
                        f"{shard} holds vectors of shape {vecs.shape}, expected dim {dim}"
                    )
                self._data.update(zip(keys.tolist(), vecs))
                m = re.match(r"shard-(\d+)\.npz", shard.name)
                if m:
                    self._next = max(self._next, int(m.group(1)) + 1)

    @classmethod
    def for_model(cls, root: str | Path, model_id: str, dim: int) -> VectorCache:
        """The cache of one model: a folder under ``root`` named after ``model_id``."""
        return cls(Path(root) / model_id.replace("/", "__"), dim=dim)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def get(self, key: str) -> np.ndarray | None:
        """The cached vector or ``None``."""
        return self._data.get(key)

    def add(self, items: dict[str, np.ndarray]) -> None:
        """Add vectors and persist them as one new shard (atomically)."""
        if not items:
            return
        keys = np.array(list(items), dtype=str)
        vecs = np.stack([np.asarray(v, dtype=np.float32) for v in items.values()])
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".shard-", suffix=".tmp")
        try:
            with open(fd, "wb") as fh:
                np.savez(fh, keys=keys, vectors=vecs)
            while True:  # a name no shard has: another process on this folder may have taken one
                target = self.folder / f"shard-{self._next:06d}.npz"
                try:
                    os.link(tmp, target)  # never replaces an existing shard
                    break
                except FileExistsError:
                    self._next += 1
        finally:
            os.unlink(tmp)
        self._next += 1
        self._data.update(zip(keys.tolist(), vecs))


def cached_vectors(
    texts: Sequence[str],
    keys: Sequence[str],
    embed: Callable[[list[str]], np.ndarray],
    cache: VectorCache | None,
    *,
    chunk: int = 256,
    show_progress: bool = False,
    desc: str = "embedding",
) -> np.ndarray:
    """One row per text: from ``cache`` where it holds the key, else from ``embed``.

    The missing texts are embedded once per key, longest first (so each chunk pads little), in
    chunks of ``chunk``; every chunk is saved as a shard before the next starts, so an interrupted
    run loses at most one chunk.

    Args:
        texts: The texts.
        keys: One cache key per text (:func:`text_key`).
        embed: Texts -> vectors, one row each.
        cache: Where vectors are looked up and saved (``None``: embed everything).
        chunk: Texts per call of ``embed`` (and per shard).
        show_progress: A progress bar over the texts.
        desc: The progress bar's label.

    Raises:
        ValueError: ``texts`` and ``keys`` differ in length.
    """
    from tqdm.auto import tqdm

    if len(texts) != len(keys):
        raise ArgusInputError(f"{len(texts)} texts but {len(keys)} keys")
    rows: list[np.ndarray | None] = [cache.get(k) if cache is not None else None for k in keys]
    missing: dict[str, list[int]] = {}  # a text that occurs twice is embedded once
    for i, row in enumerate(rows):
        if row is None:
            missing.setdefault(keys[i], []).append(i)
    order = sorted(missing, key=lambda k: -len(texts[missing[k][0]]))
    done = len(texts) - sum(map(len, missing.values()))
    with tqdm(
        total=len(texts), initial=done, desc=desc, unit="text",
        disable=not show_progress or not texts,
    ) as bar:  # fmt: skip
        for start in range(0, len(order), chunk):
            part = order[start : start + chunk]
            vectors = np.asarray(embed([texts[missing[k][0]] for k in part]), dtype=np.float32)
            for k, v in zip(part, vectors):
                for i in missing[k]:
                    rows[i] = v
            if cache is not None:
                cache.add(dict(zip(part, vectors)))
            bar.update(sum(len(missing[k]) for k in part))
    if not rows:
        return np.asarray(embed([]), dtype=np.float32)
    return np.stack([np.asarray(r, dtype=np.float32) for r in rows])
