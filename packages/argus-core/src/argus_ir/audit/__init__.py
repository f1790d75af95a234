"""The RPS audit (paper §3, App. B): which entities a retriever's queries never reach.

- :mod:`~argus_ir.audit.entities`: the entities, their graph and the load report;
- :mod:`~argus_ir.audit.loaders`: entity and edge files into :class:`AuditData`, with every drop
  counted; :mod:`~argus_ir.audit.shared_data` and :mod:`~argus_ir.audit.sample` for the offline
  research data and the embedded sample;
- :mod:`~argus_ir.audit.rps`: the Retrieval Probability Score, exact and sampled, and its
  reliability;
- :mod:`~argus_ir.audit.run`: :func:`run_audit`, encoding each paragraph once and scoring every k;
- :mod:`~argus_ir.audit.report`: the Markdown report with the paper's figures.
"""

from argus_ir.audit.run import (
    FORMAT_VERSION,
    AuditResult,
    AuditSettings,
    encode_entities,
    run_audit,
)

__all__ = ["FORMAT_VERSION", "AuditResult", "AuditSettings", "encode_entities", "run_audit"]
