"""Small file helpers shared by every writer: atomic writes and content fingerprints."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from argus_ir.errors import ArgusInputError

__all__ = [
    "SNIPPET",
    "atomic_path",
    "folder_hash",
    "iter_jsonl",
    "json_text",
    "naming_file",
    "replace_folder",
    "sha256_file",
    "text_hash",
]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place only if the block succeeds.

    A crash or an exception inside the block leaves no partial file behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def naming_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """Give an OS error raised inside the block without a file name (a write to a full disk says
    only "File too large") the name of ``path``, the file being written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = os.fspath(path)
        raise


def replace_folder(tmp: Path, target: Path) -> None:
    """Move the finished folder ``tmp`` into place as ``target`` with the usual folder mode (a
    temporary folder is made ``0700``); an existing ``target`` is moved aside first and removed
    only once the new one is in place, so a failure leaves the old folder as it was."""
    os.chmod(tmp, 0o777 & ~_umask())
    old: Path | None = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / "previous")
    try:
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.replace(old / "previous", target)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def text_hash(text: str) -> str:
    """Short stable hash of a text (used as cache key together with the model id)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON, non-ASCII text as is; a string holding a lone surrogate (which UTF-8
    cannot encode: an id or text read from a JSON escape) makes the whole text use JSON escapes
    instead, so it can be written as UTF-8 and reads back to the same strings."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, indent=indent)
    return text


SNIPPET = 60
"""Characters of a bad line quoted in its error message."""


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSONL file (``.gz``: gzipped).

    The one JSONL line reader of the package. A byte-order mark on the first line is skipped.

    Raises:
        ArgusInputError: A line that is not UTF-8 or not JSON (the message names file and line).
    """
    opener = gzip.open if os.fspath(path).lower().endswith(".gz") else open
    with opener(path, "rb") as fh:  # bytes, decoded line by line: a bad byte has its line
        for n, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise ArgusInputError(
                    f"{path}:{n}: not UTF-8 (byte {raw[exc.start : exc.start + 1]!r} at "
                    f"column {exc.start + 1})"
                ) from None
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                snippet = line.strip()[:SNIPPET]
                raise ArgusInputError(
                    f"{path}:{n}: not valid JSON ({exc.msg}): {snippet!r}"
                ) from None
            except RecursionError:  # a value nested deeper than Python's parser goes
                raise ArgusInputError(
                    f"{path}:{n}: JSON nested too deep to read (more than about "
                    f"{sys.getrecursionlimit():,} levels of arrays or objects)"
                ) from None
            yield n, value


def folder_hash(folder: Path) -> str:
    """SHA-256 over a folder's file names and bytes (sorted; short)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
