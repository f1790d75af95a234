from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[3]


def shared_data_dir() -> Path:
    """The shared research data folder (beside the repo, or $ARGUS_SHARED_DATA)."""
    return Path(os.environ.get("ARGUS_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "kb" / "wiki_vital10k_en.jsonl").exists():
        pytest.skip(f"shared research data not found at {path}")
    return path


@pytest.fixture(scope="session")
def minilm():
    """The offline MiniLM retriever, loaded once per test session."""
    pytest.importorskip("sentence_transformers")
    from argus_ir.encoder import SentenceTransformerEncoder

    return SentenceTransformerEncoder("minilm", device="cpu", batch_size=16)


@pytest.fixture(scope="session")
def load_benchmark() -> Iterator[Callable[[str], ModuleType]]:
    """Import a script of the repo's ``benchmarks/`` folder (no package) by path: ``load("name")``
    runs ``benchmarks/name.py`` as module ``name_bench``; the modules leave ``sys.modules`` when
    the session ends."""
    loaded: list[str] = []

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"{name}_bench", REPO / "benchmarks" / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
        loaded.append(spec.name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)


@pytest.fixture(scope="session")
def kill_at_checkpoint() -> Callable[..., int]:
    """``kill(proc, ckpt, done)``: SIGKILL a running ``argus augment`` once its checkpoint says at
    least ``done`` documents are written (no cleanup of any kind); returns the checkpoint's count.
    Fails when the run ends before it can be killed."""
    import json
    import signal
    import subprocess
    import time

    def kill(proc: subprocess.Popen, ckpt: Path, done: int, poll: float = 0.02) -> int:
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and proc.poll() is None:
                if ckpt.is_file() and json.loads(ckpt.read_text("utf-8"))["documents_done"] >= done:
                    break
                time.sleep(poll)
            assert proc.poll() is None, "the run ended before it could be killed"
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
        return int(json.loads(ckpt.read_text("utf-8"))["documents_done"])

    return kill
