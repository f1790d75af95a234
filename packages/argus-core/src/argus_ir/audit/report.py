"""The audit report: a Markdown page with PNG plots (paper Figs. 2, 3, 5 and 7) and tables."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from argus_ir import plots
from argus_ir.io import atomic_path

if TYPE_CHECKING:
    from argus_ir.audit import AuditResult
    from argus_ir.probes import ProbeTrainingResult

__all__ = ["write_report"]

TAU = 0.3


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "n/a" if math.isnan(x) else f"{x:.3f}"
    return str(x)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines


def write_report(
    audit: AuditResult,
    folder: str | Path,
    *,
    probe: ProbeTrainingResult | None = None,
    k: int | None = None,
) -> Path:
    """Write ``report.md`` and its plots into ``folder``.

    Args:
        audit: A finished audit.
        folder: Output folder (created).
        probe: Optional probe training result: adds the probe table and the calibration plot.
        k: The budget shown in the single-k plots (default: the probe's k, else 10 if audited,
            else the smallest audited k).

    Returns:
        Path of ``report.md``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ks = sorted(audit.rps)
    if k is None:
        k = probe.card.k if probe is not None else (10 if 10 in ks else ks[0])
    s = audit.settings
    lines = [
        f"# argus audit: {audit.name} under `{audit.encoder.retriever_id}`",
        "",
        f"{len(audit.ids)} target entities (entities with at least one related entity), "
        f"N = {s.n_neutrals} candidates per query, k in {list(ks)}, seed {s.seed}. "
        f"Data fingerprint `{audit.data_fingerprint}`. "
        "RPS is the fraction of an entity's related entities whose query ranks it in the top k "
        "against N - 1 KG-disjoint neutrals (empirical = one seeded draw of neutrals; "
        "expected = exact expectation over the draw).",
        "",
        "## RPS per k",
        "",
    ]
    rows = []
    for kk in ks:
        r, e, rel = audit.rps[kk], audit.expected[kk], audit.reliability[kk]
        rows.append(
            [
                kk,
                float(r.mean()),
                float((r < TAU).mean()),
                float((r > 0.5).mean()),
                float(e.mean()),
                kk / s.n_neutrals,
                rel.spearman_brown,
                rel.ceiling,
                rel.all_ceiling,
            ]
        )
    lines += _table(
        [
            "k",
            "mean RPS",
            f"share RPS < {TAU}",
            "share RPS > 0.5",
            "mean expected RPS",
            "chance k/N",
            "split-half reliability",
            "Pearson ceiling (>= 2 related)",
            "Pearson ceiling (all targets)",
        ],
        rows,
    )
    hist = plots.rps_histogram({kk: audit.rps[kk] for kk in ks}, folder / "rps_histogram.png")
    lines += ["", f"![RPS histogram]({hist.name})", ""]
    fvn = audit.curves.get("fraction_vs_n", {})
    if fvn.get("n"):
        p = plots.fraction_vs_n(
            fvn["n"], {"expected RPS": fvn["fraction"]}, folder / "fraction_vs_n.png", k=fvn["k"]
        )
        lines += [
            f"## Fraction with RPS > 0.5 against N (k = {fvn['k']})",
            "",
            f"![]({p.name})",
            "",
        ]
    fvk = audit.curves.get("fraction_vs_k", {})
    if fvk.get("k"):
        p = plots.fraction_vs_k(
            fvk["k"], {"expected RPS": fvk["fraction"]}, folder / "fraction_vs_k.png", n=fvk["n"]
        )
        lines += [
            f"## Fraction with RPS > 0.5 against k (N = {fvk['n']})",
            "",
            f"![]({p.name})",
            "",
        ]
    p = plots.lda_projection(
        audit.vectors, audit.rps[k], folder / "lda_terciles.png", title=f"LDA of RPS_{k} terciles"
    )
    lines += [f"## Embedding geometry: 2-D LDA of RPS_{k} terciles", "", f"![]({p.name})", ""]
    if probe is not None:
        lines += _probe_section(probe, folder)
    lines += ["## Data", "", "```", audit.load_summary or "(no loader report)", "```", ""]
    with atomic_path(folder / "report.md") as tmp:
        tmp.write_text("\n".join(lines))
    return folder / "report.md"


def _probe_section(probe: ProbeTrainingResult, folder: Path) -> list[str]:
    card = probe.card
    lines = [
        f"## Probe: {card.family} (k = {card.k}, {card.label_kind} label)",
        "",
        "Held-out test entities; best configuration by validation RMSE.",
        "",
    ]
    cols = ["rmse", "mae", "pearson", "spearman", "accuracy", "macro_f1", "weighted_f1"]
    rows = []
    for name, metrics in probe.table_rows():
        rows.append([name, *[metrics.get(c, float("nan")) for c in cols]])
    lines += _table(["model", *cols], rows)
    p = plots.calibration(
        np.asarray(probe.test_y), np.asarray(probe.test_pred), folder / "calibration.png"
    )
    lines += ["", f"![calibration]({p.name})", ""]
    return lines
