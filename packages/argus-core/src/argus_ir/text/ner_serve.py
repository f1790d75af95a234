"""The NER worker's side of :mod:`argus_ir.text.ner_workers` (run as ``python -m``).

It loads :class:`~argus_ir.text.mentions.SpacyMentions` in this process, says so on its first
line, then answers each JSON line of texts with one JSON line of ``[start, end, label]`` lists
per text (or ``{"error": ...}`` for a call it could not read). Anything else printed goes to
stderr, so it cannot reach the protocol.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["serve"]


def serve(model: str, labels: list[str], batch_size: int) -> None:
    """Answer NER calls on stdin until it closes (the arguments are ``SpacyMentions``')."""
    protocol = sys.stdout
    sys.stdout = sys.stderr  # anything else printed must not reach the protocol
    try:
        from argus_ir.text.mentions import ZONE_TEXTS, SpacyMentions

        # nothing else uses this pipeline, so one memory zone may span many calls
        ner = SpacyMentions(model, labels=labels, batch_size=batch_size, zone_texts=ZONE_TEXTS)
    except Exception as exc:  # told to the parent, which raises it
        protocol.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        protocol.flush()
        return
    protocol.write(json.dumps({"ready": True}) + "\n")
    protocol.flush()
    for line in sys.stdin:
        try:
            found = ner.extract(json.loads(line))
            answer: Any = [[[m.start, m.end, m.label] for m in ms] for ms in found]
        except Exception as exc:  # the parent reads these texts itself, where it raises
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]))
