"""The embedded entity sample: 1,200 Wikipedia entities with T-REx relations, for demos and tests.

The files live in ``argus_ir/data/`` (``sample_entities.jsonl.gz``, ``sample_edges.jsonl.gz``) and are
rebuilt by ``scripts/build_sample.py``; their sources and licences are in ``SAMPLE_LICENSE.md``
beside them (Wikipedia lead paragraphs, CC BY-SA 4.0; T-REx facts, MIT).
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources

from argus_ir.audit.entities import AuditData
from argus_ir.audit.loaders import build_audit_data, read_edges_file, read_entities_file

__all__ = ["SAMPLE_EDGES", "SAMPLE_ENTITIES", "load_sample"]

SAMPLE_ENTITIES = "sample_entities.jsonl.gz"
SAMPLE_EDGES = "sample_edges.jsonl.gz"


def load_sample(*, max_degree: int | None = None, require_neighbours: bool = False) -> AuditData:
    """Load the embedded sample as audit data (no network, no shared data folder needed).

    About 1,200 entities, of which about 440 have at least one related entity (the audit targets);
    the rest are neutral candidates.

    Args:
        max_degree: Degree cap passed to :func:`argus_ir.audit.loaders.build_audit_data`; ``None`` (the
            default) keeps every edge (the largest degree in the sample is 93).
        require_neighbours: Drop entities without a related entity.

    Returns:
        The sample, named ``"sample"``.

    Example:
        >>> from argus_ir.audit.sample import load_sample
        >>> data = load_sample()
        >>> len(data.entities) > 1000
        True
    """
    folder = resources.files("argus_ir").joinpath("data")
    with (
        resources.as_file(folder.joinpath(SAMPLE_ENTITIES)) as ent_path,
        resources.as_file(folder.joinpath(SAMPLE_EDGES)) as edge_path,
    ):
        records = read_entities_file(ent_path)
        edges = read_edges_file(edge_path)
    data = build_audit_data(
        records,
        edges,
        name="sample",
        max_degree=max_degree,
        require_neighbours=require_neighbours,
    )
    return replace(data, report=replace(data.report, sources=(("T-REx", data.report.n_edges),)))
