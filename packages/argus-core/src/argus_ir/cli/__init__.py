"""The ``argus`` command: one module per command, the shared options in :mod:`.options`.

argus demo                       # audit the embedded sample, train a probe, write the report
argus audit --data shared --shared-data ../shared/data --retriever minilm --out runs/minilm
argus train-probe --audit runs/minilm --k 10 --out runs/minilm/probe-k10
argus report --audit runs/minilm --probe runs/minilm/probe-k10 --out runs/minilm/report

``argus_ir.cli:main`` is the console entry point and ``python -m argus_ir.cli`` runs it too.
"""

from __future__ import annotations

from argus_ir.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
