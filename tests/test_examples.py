"""The quickstart scripts in examples/ run as users run them, and show the rescue."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("name", ["langchain", "haystack", "llamaindex"])
def test_quickstart_runs_and_argus_finds_the_document(name):
    script = EXAMPLES / f"{name}_quickstart.py"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = {line.split(":")[0].strip(): line for line in proc.stdout.splitlines()}
    assert "film-1" in lines["with argus"]
    if "without argus" in lines:
        assert "film-1" not in lines["without argus"]
