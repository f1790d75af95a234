"""Keeping an ``IngestionPipeline``'s state between runs without a half-written file:
:func:`persist_pipeline` and :func:`load_pipeline`.

``IngestionPipeline.persist`` truncates each file and then writes it: a process killed in between
leaves an empty or cut file, and ``IngestionPipeline.load`` then fails with a bare
``JSONDecodeError`` that names no file. :func:`persist_pipeline` writes the files beside the
folder's and moves each into place (``os.replace``: a reader sees the old file or the new one);
:func:`load_pipeline` names the file it cannot read and says how to recover.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from llama_index.core.ingestion.cache import DEFAULT_CACHE_NAME, IngestionCache
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.storage_context import DOCSTORE_FNAME

__all__ = ["PipelineStateError", "load_pipeline", "persist_pipeline"]

_STAGING = ".persist-"  # a staging folder: .persist-PID@HOST.RANDOM
_HOST = socket.gethostname()
_in_use: set[str] = set()  # this process's staging folders being written now (by any thread)
_lock = threading.Lock()


class PipelineStateError(ValueError):
    """A pipeline state file that cannot be read (``path``: the file)."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(
            f"cannot load the ingestion pipeline's state: {path} {reason}. A process killed "
            f"while writing it (IngestionPipeline.persist) leaves such a file. To recover, "
            f"delete {path.parent} and run the pipeline again over the same documents: with a "
            "vector store that upserts by node id (UpsertingPGVectorStore, Chroma, Qdrant) "
            "nothing is stored twice."
        )


def persist_pipeline(pipeline: Any, folder: str | os.PathLike[str]) -> None:
    """``pipeline.persist(folder)``, each file replaced whole or not at all.

    The files are written into a temporary folder inside ``folder``, flushed to disk, then moved
    over the old ones one by one; a kill at any moment leaves every file either as it was or as
    this call wrote it (the cache and the docstore may be from different runs, which the pipeline
    tolerates: the cache only saves work). The temporary folder a killed call left behind is
    removed by the next call on ``folder``.

    Args:
        pipeline: An ``IngestionPipeline``.
        folder: Where ``load_pipeline`` (or ``pipeline.load``) will read it.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    with _lock:  # another thread's folder is in _in_use before this one looks
        _remove_abandoned(target)
        staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}@{_HOST}.", dir=target))
        _in_use.add(staging.name)
    try:
        pipeline.persist(str(staging))
        # the cache first, as IngestionPipeline.persist writes them: a kill between the two
        # leaves a newer cache beside the older docstore, which only costs work
        for written in sorted(staging.iterdir(), key=lambda p: p.name == DOCSTORE_FNAME):
            _fsync(written)
            os.replace(written, target / written.name)
        _fsync(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with _lock:
            _in_use.discard(staging.name)


def load_pipeline(pipeline: Any, folder: str | os.PathLike[str]) -> bool:
    """``pipeline.load(folder)`` for a folder that may hold no state yet, refusing an empty or
    cut file by name.

    Args:
        pipeline: An ``IngestionPipeline``.
        folder: A folder :func:`persist_pipeline` (or ``pipeline.persist``) wrote, or one that
            does not exist yet (the first run).

    Returns:
        Whether a cache or docstore was loaded (``False``: the pipeline is left as it was).

    Raises:
        PipelineStateError: A file of the state is empty or not JSON (the message names it and
            says how to recover).
    """
    cache, docstore = Path(folder) / DEFAULT_CACHE_NAME, Path(folder) / DOCSTORE_FNAME
    present = [p for p in (cache, docstore) if p.is_file()]
    for path in present:
        try:
            with path.open("rb") as f:
                json.load(f)
        except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
            size = path.stat().st_size
            reason = "is empty" if size == 0 else f"is not JSON ({size} bytes; {exc})"
            raise PipelineStateError(path, reason) from exc
    if cache in present:  # as IngestionPipeline.load reads them
        pipeline.cache = IngestionCache.from_persist_path(str(cache))
    if docstore in present:
        pipeline.docstore = SimpleDocumentStore.from_persist_path(str(docstore))
    return bool(present)


def _remove_abandoned(target: Path) -> None:
    """Remove the staging folders that killed :func:`persist_pipeline` calls left in ``target``.

    A staging folder is named ``.persist-PID@HOST.RANDOM``; it is abandoned when PID runs no
    longer on this host, or is this process (a container restarted under the same PID) and no
    call of it is writing there. Folders of other hosts (a shared file system) and of other
    processes still running (another pipeline persisting at this moment) are left alone.
    """
    for entry in target.glob(f"{_STAGING}*@*"):
        pid, _, rest = entry.name[len(_STAGING) :].partition("@")
        if not (entry.is_dir() and pid.isdigit() and rest.rpartition(".")[0] == _HOST):
            continue
        if not _running(int(pid)) or (int(pid) == os.getpid() and entry.name not in _in_use):
            shutil.rmtree(entry, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
