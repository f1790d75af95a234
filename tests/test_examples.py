"""The scripts in examples/ run as users run them, and show the rescue: the quickstarts, and one
example beside each framework's own parent-document pattern."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FRAMEWORKS = ["langchain", "haystack", "llamaindex"]


def _run(script: Path) -> str:
    """The script's standard output, run offline in a fresh interpreter; it must exit 0."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_quickstart_runs_and_argus_finds_the_document(name):
    stdout = _run(EXAMPLES / f"{name}_quickstart.py")
    lines = {line.split(":")[0].strip(): line for line in stdout.splitlines()}
    assert "film-1" in lines["with argus"]
    if "without argus" in lines:
        assert "film-1" not in lines["without argus"]


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_the_parent_documents_example_runs_and_argus_ranks_the_document_first(name):
    """``examples/<framework>_parent_documents.py``: argus beside ``ParentDocumentRetriever``,
    ``SentenceWindowRetriever`` and ``AutoMergingRetriever``."""
    stdout = _run(EXAMPLES / f"{name}_parent_documents.py")
    lines = dict(line.split(":", 1) for line in stdout.splitlines() if ":" in line)
    assert lines["without argus"].split()[0] != "film-1", stdout
    assert lines["with argus"].split()[0] == "film-1", stdout
    if name == "haystack":  # its windows are built around originals only
        assert lines["contexts are originals"].strip() == "True", stdout
