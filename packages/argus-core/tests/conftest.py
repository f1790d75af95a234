from __future__ import annotations

import os
from pathlib import Path

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
