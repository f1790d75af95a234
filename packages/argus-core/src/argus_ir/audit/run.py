"""The empirical RPS audit: encode each paragraph once, pool mention vectors, rank, score.

``run_audit`` turns :class:`~argus_ir.audit.entities.AuditData` and an encoder into an :class:`AuditResult`
(per-entity RPS for every k, the exact-expectation label, split-half reliability and the curves of
the report). ``AuditResult.save`` writes a Parquet + CSV table, the vectors (npz) and a JSON summary.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.audit import rps as _rps  # the module: run_audit calls several of its functions
from argus_ir.audit.entities import AuditData
from argus_ir.encoder.base import EncoderInfo, TokenEncoder
from argus_ir.encoder.cache import VectorCache, span_key
from argus_ir.errors import ArgusInputError

__all__ = ["AuditResult", "AuditSettings", "encode_entities", "run_audit"]

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1


@dataclass(frozen=True)
class AuditSettings:
    """Settings of one audit (paper defaults).

    Attributes:
        ks: Top-k budgets to score.
        n_neutrals: Pool size ``N`` (the target plus ``N - 1`` neutrals).
        seed: Seed of the neutral draws and reliability splits.
        n_grid: Pool sizes for the fraction-vs-N curve (paper Fig. 3).
        k_grid: Budgets for the fraction-vs-k curve (paper Fig. 5).
    """

    ks: tuple[int, ...] = (5, 10, 20, 50)
    n_neutrals: int = 800
    seed: int = 0
    n_grid: tuple[int, ...] = (100, 200, 400, 800, 1600)
    k_grid: tuple[int, ...] = (1, 5, 10, 20, 50, 100)

    def __post_init__(self) -> None:
        if not self.ks:
            raise ArgusInputError("ks must name at least one k")
        for k in self.ks:
            if not 1 <= k <= self.n_neutrals:
                raise ArgusInputError(f"every k must be in [1, N={self.n_neutrals}], got k={k}")


@dataclass(frozen=True, eq=False)
class AuditResult:
    """Per-entity RPS and the audit's summary numbers.

    Attributes:
        name: Data source name.
        data_fingerprint: Hash of the audited data (entities, spans, edges).
        encoder: The encoder's identity.
        settings: Audit settings.
        ids: Target entity ids (entities with at least one related entity), in index order.
        labels: Their labels.
        grounding: Their grounding rule.
        n_related: Related entities per target.
        vectors: ``(n_targets, dim)`` mention vectors of the targets (the probes' input).
        rps: ``{k: RPS_k}`` with explicitly sampled neutral pools.
        expected: ``{k: E[RPS_k]}`` over the neutral draw (noise-free label).
        reliability: ``{k: split-half reliability}`` of the expected label.
        curves: Fractions with RPS > 0.5 against N and against k.
        load_summary: The loader's report, as text.
    """

    name: str
    data_fingerprint: str
    encoder: EncoderInfo
    settings: AuditSettings
    ids: list[str]
    labels: list[str]
    grounding: list[str]
    n_related: np.ndarray
    vectors: np.ndarray
    rps: dict[int, np.ndarray]
    expected: dict[int, np.ndarray]
    reliability: dict[int, _rps.Reliability]
    curves: dict[str, Any] = field(default_factory=dict)
    load_summary: str = ""

    def label(self, k: int, kind: str = "empirical") -> np.ndarray:
        """The RPS label for ``k``: ``"empirical"`` (sampled) or ``"expected"``."""
        source = {"empirical": self.rps, "expected": self.expected}.get(kind)
        if source is None:
            raise ArgusInputError(f"label kind must be 'empirical' or 'expected', got {kind!r}")
        if k not in source:
            raise ArgusInputError(f"this audit has k in {sorted(source)}, not {k}")
        return source[k]

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable summary (what ``audit.json`` holds)."""
        return {
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "data_fingerprint": self.data_fingerprint,
            "encoder": asdict(self.encoder),
            "settings": asdict(self.settings),
            "n_targets": len(self.ids),
            "mean_rps": {str(k): float(v.mean()) for k, v in self.rps.items()},
            "mean_expected_rps": {str(k): float(v.mean()) for k, v in self.expected.items()},
            "reliability": {
                str(k): {f: _json_float(v) for f, v in asdict(r).items()}
                for k, r in self.reliability.items()
            },
            "curves": self.curves,
            "load_summary": self.load_summary,
        }

    def save(self, folder: str | Path) -> Path:
        """Write ``entities.parquet``, ``entities.csv``, ``vectors.npz`` and ``audit.json``.

        Files are written into a temporary folder and moved into place together, so a failure
        leaves no partial audit behind.
        """
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        folder = Path(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        columns: dict[str, Any] = {
            "id": self.ids,
            "label": self.labels,
            "grounding": self.grounding,
            "n_related": self.n_related.astype(np.int64),
        }
        for k in sorted(self.rps):
            columns[f"rps_{k}"] = self.rps[k]
            columns[f"expected_rps_{k}"] = self.expected[k]
        table = pa.table(columns)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            pq.write_table(table, tmp / "entities.parquet")
            pacsv.write_csv(table, tmp / "entities.csv")
            np.savez(tmp / "vectors.npz", ids=np.array(self.ids, dtype=str), vectors=self.vectors)
            (tmp / "audit.json").write_text(json.dumps(self.summary(), indent=2))
            folder.mkdir(exist_ok=True)
            for f in tmp.iterdir():
                f.replace(folder / f.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> AuditResult:
        """Read an audit written by :meth:`save`."""
        import pyarrow.parquet as pq

        folder = Path(folder)
        for name in ("audit.json", "entities.parquet", "vectors.npz"):
            if not (folder / name).exists():
                raise FileNotFoundError(f"{folder} is not an audit folder: {name} is missing")
        meta = json.loads((folder / "audit.json").read_text())
        if meta.get("format_version") != FORMAT_VERSION:
            raise ArgusInputError(
                f"{folder}/audit.json has format version {meta.get('format_version')}, "
                f"this argus reads {FORMAT_VERSION}"
            )
        table = pq.read_table(folder / "entities.parquet").to_pydict()
        with np.load(folder / "vectors.npz", allow_pickle=False) as z:
            vectors = z["vectors"]
            ids = z["ids"].tolist()
        if ids != table["id"]:
            raise ArgusInputError(f"{folder}: vectors.npz and entities.parquet disagree on ids")
        raw = meta["settings"]
        settings = AuditSettings(
            ks=tuple(raw["ks"]),
            n_neutrals=int(raw["n_neutrals"]),
            seed=int(raw["seed"]),
            n_grid=tuple(raw["n_grid"]),
            k_grid=tuple(raw["k_grid"]),
        )
        ks = settings.ks
        return cls(
            name=meta["name"],
            data_fingerprint=meta["data_fingerprint"],
            encoder=EncoderInfo(**meta["encoder"]),
            settings=settings,
            ids=table["id"],
            labels=table["label"],
            grounding=table["grounding"],
            n_related=np.asarray(table["n_related"]),
            vectors=vectors,
            rps={k: np.asarray(table[f"rps_{k}"], dtype=np.float64) for k in ks},
            expected={k: np.asarray(table[f"expected_rps_{k}"], dtype=np.float64) for k in ks},
            reliability={
                int(k): _rps.Reliability(
                    half_r=_float(r["half_r"]),
                    spearman_brown=_float(r["spearman_brown"]),
                    ceiling=_float(r["ceiling"]),
                    n_entities=int(r["n_entities"]),
                    all_reliability=_float(r.get("all_reliability")),
                    all_ceiling=_float(r.get("all_ceiling")),
                )
                for k, r in meta["reliability"].items()
            },
            curves=meta.get("curves", {}),
            load_summary=meta.get("load_summary", ""),
        )


def encode_entities(
    data: AuditData,
    encoder: TokenEncoder,
    *,
    cache_dir: str | Path | None = None,
    show_progress: bool = True,
) -> np.ndarray:
    """Mention vector of every entity: each distinct paragraph is encoded once.

    With ``cache_dir`` the vectors are persisted as they are computed, and a rerun (after an
    interruption, say) encodes only what is missing.
    """
    info = encoder.info
    keys = [span_key(info.retriever_id, e.text, e.start, e.end) for e in data.entities]
    cache = None
    if cache_dir is not None:
        cache = VectorCache.for_model(cache_dir, info.retriever_id, info.dim)
    out = np.zeros((len(keys), info.dim), dtype=np.float32)
    todo: dict[str, list[int]] = {}
    for i, (key, ent) in enumerate(zip(keys, data.entities)):
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            out[i] = hit
        else:
            todo.setdefault(ent.text, []).append(i)
    if todo:
        texts = list(todo)
        pending: dict[str, np.ndarray] = {}
        for text, enc in zip(texts, encoder.encode(texts, show_progress=show_progress)):
            for i in todo[text]:
                ent = data.entities[i]
                out[i] = enc.pool_span(ent.start, ent.end)
                pending[keys[i]] = out[i]
            if cache is not None and len(pending) >= 1024:
                cache.add(pending)
                pending = {}
        if cache is not None:
            cache.add(pending)
    return out


def run_audit(
    data: AuditData,
    encoder: TokenEncoder,
    settings: AuditSettings | None = None,
    *,
    cache_dir: str | Path | None = None,
    vectors: np.ndarray | None = None,
    show_progress: bool = True,
) -> AuditResult:
    """Run the RPS audit (paper §3.2, App. B.3).

    Args:
        data: Entities and relations; every entity is a candidate, every entity with a related
            entity is a target.
        encoder: The retriever under audit.
        settings: ``k``, ``N``, seed and curve grids.
        cache_dir: Folder for the resumable vector cache.
        vectors: Precomputed mention vectors (skips encoding).
        show_progress: Progress bars.

    Raises:
        ValueError: When no entity has a related entity, or the pool is too small for ``N``.
    """
    settings = settings or AuditSettings()
    if data.graph.n_edges == 0:
        raise ArgusInputError(f"{data.name}: no entity has a related entity, nothing to audit")
    if vectors is None:
        vectors = encode_entities(data, encoder, cache_dir=cache_dir, show_progress=show_progress)
    stats = _rps.pair_stats(vectors, data.graph)
    short = int(np.count_nonzero(stats.n_eligible < settings.n_neutrals - 1))
    if short:
        logger.warning(
            "%d of %d pairs have fewer than N-1=%d eligible neutrals; their whole pool is used",
            short,
            len(stats),
            settings.n_neutrals - 1,
        )
    ks = tuple(sorted(set(settings.ks)))
    sampled = _rps.sampled_hits(
        vectors, data.graph, stats, ks, settings.n_neutrals, seed=settings.seed
    )
    targets, _ = _rps.rps_by_target(stats, sampled[ks[0]], data.graph.n)
    rps_k: dict[int, np.ndarray] = {}
    exp_k: dict[int, np.ndarray] = {}
    rel: dict[int, _rps.Reliability] = {}
    for k in ks:
        rps_k[k] = _rps.rps_by_target(stats, sampled[k], data.graph.n)[1]
        hits = _rps.expected_hits(stats, k, settings.n_neutrals)
        exp_k[k] = _rps.rps_by_target(stats, hits, data.graph.n)[1]
        half = _rps.split_half_reliability(stats, hits, seed=settings.seed)
        pooled = _rps.variance_reliability(stats, hits)
        rel[k] = replace(half, all_reliability=pooled, all_ceiling=float(np.sqrt(pooled)))
    curves = _curves(stats, data.graph.n, settings)
    ents = [data.entities[int(i)] for i in targets]
    return AuditResult(
        name=data.name,
        data_fingerprint=data.fingerprint(),
        encoder=encoder.info,
        settings=settings,
        ids=[e.id for e in ents],
        labels=[e.label for e in ents],
        grounding=[e.grounding for e in ents],
        n_related=data.graph.degree()[targets],
        vectors=vectors[targets],
        rps=rps_k,
        expected=exp_k,
        reliability=rel,
        curves=curves,
        load_summary=data.report.summary(),
    )


def _curves(stats: _rps.PairStats, n: int, settings: AuditSettings) -> dict[str, Any]:
    """Fraction of targets with expected RPS > 0.5 against N (at the largest k) and against k."""
    k_max = max(settings.ks)
    by_n = []
    for n_pool in settings.n_grid:
        if k_max > n_pool:
            continue
        hits = _rps.expected_hits(stats, k_max, n_pool)
        by_n.append((n_pool, float((_rps.rps_by_target(stats, hits, n)[1] > 0.5).mean())))
    by_k = []
    for k in settings.k_grid:
        if k > settings.n_neutrals:
            continue
        hits = _rps.expected_hits(stats, k, settings.n_neutrals)
        by_k.append((k, float((_rps.rps_by_target(stats, hits, n)[1] > 0.5).mean())))
    return {
        "fraction_vs_n": {"k": k_max, "n": [a for a, _ in by_n], "fraction": [b for _, b in by_n]},
        "fraction_vs_k": {
            "n": settings.n_neutrals,
            "k": [a for a, _ in by_k],
            "fraction": [b for _, b in by_k],
        },
    }


def _json_float(value: Any) -> Any:
    """NaN is not JSON: write it as null."""
    if isinstance(value, float) and value != value:
        return None
    return value


def _float(value: float | None) -> float:
    """A float read back from JSON, where NaN was written as null."""
    return float("nan") if value is None else float(value)
