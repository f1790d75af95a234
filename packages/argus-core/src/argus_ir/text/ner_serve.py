"""The NER worker's side of :mod:`argus_ir.text.ner_workers` (run as ``python -m``).

It loads :class:`~argus_ir.text.mentions.SpacyMentions` in this process, says so on its first
line, then answers each JSON line of texts with one JSON line of ``[start, end, label]`` lists
per text (or ``{"error": ...}`` for a call it could not read). Anything else printed goes to
stderr, so it cannot reach the protocol.

Given a retriever's tokenizer (a file of :func:`~argus_ir.encoder.tokens.backend_json`'s text),
it also answers ``{"texts": [...], "width": w}``: each text tokenised, cut at its first window of
``w`` tokens (``null``: not cut), NER on what is left, and
``{"ents": [...], "ends": [...], "tokens": [...]}`` back (the cuts, and each text's tokens
packed by :func:`~argus_ir.encoder.tokens.pack`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["serve"]


def serve(model: str, labels: list[str], batch_size: int, tokenizer: str | None = None) -> None:
    """Answer NER calls on stdin until it closes (the first three arguments are
    ``SpacyMentions``'; ``tokenizer``: the file of a retriever's tokenizer)."""
    protocol = sys.stdout
    sys.stdout = sys.stderr  # anything else printed must not reach the protocol
    backend = None
    try:
        from argus_ir.text.mentions import ZONE_TEXTS, SpacyMentions

        if tokenizer is not None:
            from argus_ir.encoder.tokens import load_backend

            with open(tokenizer, encoding="utf-8") as fh:
                backend = load_backend(fh.read())
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
            request = json.loads(line)
            if isinstance(request, dict):
                answer: Any = _tokenized(ner, backend, request["texts"], request["width"])
            else:
                answer = _entities(ner.extract(request))
        except Exception as exc:  # the parent reads these texts itself, where it raises
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()


def _entities(found: list) -> list:
    return [[[m.start, m.end, m.label] for m in ms] for ms in found]


def _tokenized(ner: Any, backend: Any, texts: list[str], width: int | None) -> dict[str, Any]:
    from argus_ir.encoder.tokens import first_window_end, pack, tokenize

    if backend is None:
        raise ValueError("this worker was started without a tokenizer")
    tokens = tokenize(backend, texts)
    ends = [
        len(t) if width is None else first_window_end(t, offsets, width)
        for t, (_, offsets) in zip(texts, tokens, strict=True)
    ]
    found = ner.extract([t[:end] for t, end in zip(texts, ends, strict=True)])
    return {"ents": _entities(found), "ends": ends, "tokens": [pack(*t) for t in tokens]}


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
