"""The one rule for every path argus writes: ``--out`` files and folders, ``--stats``, checkpoints,
KB and probe folders, cache files.

- never an input or another output of the run (compared as resolved paths and as the same file on
  disk, so ``new/../c.jsonl`` or a hard link is caught before ``new/`` exists), never a folder
  that holds one (a folder argus replaces must not contain its input), and never a path whose
  lock file (``OUT.lock``, written and removed by the run) is one;
- never an existing file, or a non-empty folder, without ``--overwrite`` (``overwrite=True`` from
  Python); a non-empty folder that is not the kind of folder the command writes (a KB, a probe,
  a Ray output) is refused even with it;
- checked once before any model loads (:func:`check_output`, so a bad path costs nothing) and
  again under the output's lock right before the first write (:func:`claim_output`), so a second
  run that started while the first was loading cannot replace what the first wrote.

The lock is the operating system's (``flock`` on ``OUT.lock`` beside the output): a killed run
releases it, and a second run on the same output stops at once naming the process that holds it.
A process may claim an output it already holds (the command claims it, then the library function
it calls claims it again and checks again). Where ``fcntl`` does not exist (Windows) no lock is
taken; the checks still run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from argus_ir.errors import ArgusInputError

__all__ = [
    "check_output",
    "claim_output",
    "hold_output",
    "lock_path",
    "resolved",
]

PathLike = str | os.PathLike[str]


def resolved(path: PathLike) -> Path:
    """``path`` made absolute, links and ``..`` resolved; ``..`` after a folder that does not exist
    yet is resolved as the operating system will once the folder is made."""
    return Path(os.path.realpath(os.path.abspath(path)))


def lock_path(out: PathLike) -> Path:
    """The lock file a run writing ``out`` holds for as long as it runs."""
    target = resolved(out)
    return target.with_name(target.name + ".lock")


def _same(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _hint(flag: str) -> str:
    return "--overwrite" if flag.startswith("--") else "overwrite=True"


def _check_writable(target: Path, shown: str) -> None:
    """Refuse a file whose folder takes no new file (read-only, or not ours), before any work:
    a file is made there and removed at once. A folder still to be made is not checked."""
    folder = target.parent
    if not folder.is_dir():
        return
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ArgusInputError(f"{shown}: cannot write in {folder} ({reason})") from None


def check_output(
    path: PathLike,
    *,
    flag: str = "--out",
    taken: Mapping[str, PathLike | None] | None = None,
    inputs: Iterable[PathLike] = (),
    overwrite: bool = False,
    folder: bool = False,
    kind: str = "",
    is_kind: Callable[[Path], bool] | None = None,
    writable: bool = False,
) -> Path:
    """Refuse a path argus must not write; return it resolved.

    Args:
        path: The file or folder to write.
        flag: How the user named it (``--out``, ``--stats``; a bare name for a Python argument).
        taken: Other paths of the run by what they are (``{"the input corpus": corpus, "--out":
            out}``): ``path`` must be none of them, and a folder ``path`` must hold none of them.
        inputs: More inputs, named "an input" in the message (dumps, say).
        overwrite: Replace an existing file, or a folder of ``kind``.
        folder: ``path`` is a folder to write (else a file).
        kind: What a folder of this command is ("KB folder"), for the messages.
        is_kind: Whether an existing non-empty folder is of ``kind`` (and so may be replaced with
            ``overwrite``). ``None``: no folder may be replaced.
        writable: Also refuse a file whose existing folder takes no new file (one is made there
            and removed at once): for a file written only at the end of a run (``--stats``).

    Raises:
        ArgusInputError: ``path`` is an input or another output of the run, holds an input, is a
            folder where a file is written (or the reverse), exists without ``overwrite``, or is a
            non-empty folder that is not of ``kind``.
    """
    shown = f"{flag} {path}" if flag.startswith("--") else str(path)
    target = resolved(path)
    named = [*(taken or {}).items(), *(("an input", p) for p in inputs)]
    lock = lock_path(target)
    for what, other in named:
        if other is None:
            continue
        other_path = resolved(other)
        if _same(target, other_path):
            raise ArgusInputError(f"{shown} is {what}; write the output somewhere else")
        if _same(lock, other_path):  # the lock is written, then removed: never over an input
            raise ArgusInputError(
                f"{shown} would be locked through {lock.name}, which is {what}; write the "
                "output somewhere else"
            )
        if folder and target in other_path.parents:
            raise ArgusInputError(
                f"{shown} holds {what} ({other}); write the output somewhere else"
            )
    if not folder:
        if target.is_dir():
            raise ArgusInputError(f"{shown} is a folder; name the file to write")
        if target.exists() and not overwrite:
            raise ArgusInputError(f"{path} exists; pass {_hint(flag)} to replace it")
        if writable:
            _check_writable(target, shown)
        return target
    if target.exists() and not target.is_dir():
        raise ArgusInputError(f"{shown} is a file; name a folder to write")
    if target.is_dir() and any(target.iterdir()):
        if is_kind is None or not is_kind(target):
            what = f" and is not a {kind}" if kind else ""
            raise ArgusInputError(f"{path} is a folder that is not empty{what}; not replacing it")
        if not overwrite:
            raise ArgusInputError(f"{path} exists; pass {_hint(flag)} to replace it")
    return target


_HELD: dict[Path, int] = {}  # outputs this process holds the lock of, and how many claims


@contextlib.contextmanager
def hold_output(path: PathLike) -> Iterator[Path]:
    """Hold ``path``'s lock, checking nothing (yields the resolved path): for a caller that must
    read something under the lock before it knows how to check the path (whether an earlier run
    on it was stopped while committing), then checks it with :func:`claim_output` inside.

    Raises:
        ArgusInputError: Another process holds the lock (the message names it).
    """
    target = resolved(path)
    if target in _HELD:  # held already by this process (a command, then its library function)
        _HELD[target] += 1
        try:
            yield target
        finally:
            _HELD[target] -= 1
        return
    with _locked(target, str(path)):
        _HELD[target] = 1
        try:
            yield target
        finally:
            del _HELD[target]


@contextlib.contextmanager
def claim_output(path: PathLike, **check: object) -> Iterator[Path]:
    """Hold ``path``'s lock and check it again (:func:`check_output`, same arguments) under it.

    Yields the resolved path. The lock goes with the block (or the process).

    Raises:
        ArgusInputError: Another process holds the lock (the message names it), or
            :func:`check_output` refuses the path now.
    """
    with hold_output(path) as target:
        check_output(path, **check)  # type: ignore[arg-type]
        yield target


@contextlib.contextmanager
def _locked(target: Path, shown: str) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = lock_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise ArgusInputError(
                f"{shown} is being written by another argus run ({holder}); wait for it to "
                "finish or choose another output"
            ) from None
        try:  # the holder before us may have removed the file after we opened it: lock anew
            if os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        fh.close()
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
        fh.flush()
        yield
    finally:
        path.unlink(missing_ok=True)  # still held: nobody else can be inside
        fh.close()
