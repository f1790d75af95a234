"""Re-DocRED input of the bias audit: the relation templates, the documents with their entity
mentions and labels, and the detokenised text of a sentence or of an entity's names. A bad file
raises :class:`~argus_ir.errors.ArgusInputError`; a malformed mention or label inside a good one is
dropped and counted, so one odd document does not stop an audit.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from argus_ir.errors import ArgusInputError


@dataclass(frozen=True)
class Mention:
    name: str
    sent: int
    start: int
    end: int


@dataclass
class RedocDoc:
    """One Re-DocRED document: tokenised sentences, entities (lists of mentions) and labels."""

    title: str
    sents: list[list[str]]
    entities: list[list[Mention]]
    labels: list[dict[str, Any]]
    where: str = ""


def load_templates(path: str | Path | None = None) -> dict[str, str]:
    """Relation id -> query template with ``{head}``; default: the paper's Table A.5 (51 rows).

    A user file is JSON, either ``{"P17": "...{head}..."}`` or ``{"templates": {...}}``.

    Raises:
        ArgusInputError: A missing file, or a template without ``{head}`` (named).
    """
    if path is None:
        raw = resources.files("argus_ir").joinpath("data/colder_templates.json").read_text("utf-8")
        where = "the shipped templates"
    else:
        p = Path(path)
        if not p.exists():
            raise ArgusInputError(f"{p}: no such templates file")
        raw, where = p.read_text("utf-8"), str(p)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ArgusInputError(f"{where}: not valid JSON ({exc.msg})") from None
    templates = data.get("templates", data) if isinstance(data, dict) else None
    if not isinstance(templates, dict):
        raise ArgusInputError(f"{where}: expected an object of relation id -> template")
    for rid, text in templates.items():
        if not isinstance(text, str) or "{head}" not in text:
            raise ArgusInputError(f"{where}: template of {rid!r} lacks the {{head}} placeholder")
    return dict(templates)


def load_redocred(path: str | Path) -> tuple[list[RedocDoc], Counter[str]]:
    """Read a Re-DocRED-format JSON file (a list of documents with ``title``, ``sents``,
    ``vertexSet`` and ``labels``).

    Malformed mentions and labels are dropped and counted in the returned notes; a document
    without sentences is dropped and counted.

    Raises:
        ArgusInputError: The file is missing, not JSON, not a list, or a document lacks a field
            (named by its position and title).
    """
    p = Path(path)
    if not p.exists():
        raise ArgusInputError(f"{p}: no such Re-DocRED file")
    try:
        data = json.loads(p.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ArgusInputError(f"{p}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, list):
        raise ArgusInputError(f"{p}: expected a JSON list of documents")
    notes: Counter[str] = Counter()
    docs: list[RedocDoc] = []
    for i, rec in enumerate(data):
        where = f"{p}: document {i}"
        if not isinstance(rec, dict):
            raise ArgusInputError(f"{where}: not an object")
        where += f" ({rec.get('title', '?')!r})"
        for key in ("sents", "vertexSet"):
            if not isinstance(rec.get(key), list):
                raise ArgusInputError(f"{where}: no {key!r} list")
        sents = [[str(t) for t in s] for s in rec["sents"]]
        if not sents:
            notes["documents without sentences"] += 1
            continue
        entities: list[list[Mention]] = []
        for ent in rec["vertexSet"]:
            mentions = []
            for m in ent if isinstance(ent, list) else []:
                try:
                    sid, (start, end) = int(m["sent_id"]), m["pos"]
                    ok = 0 <= sid < len(sents) and 0 <= start < end <= len(sents[sid])
                except (KeyError, TypeError, ValueError):
                    ok = False
                if ok:
                    mentions.append(Mention(str(m.get("name", "")), sid, int(start), int(end)))
                else:
                    notes["mentions with a bad sentence or span"] += 1
            if not mentions:
                notes["entities without mentions"] += 1
            entities.append(mentions)
        labels = []
        for lab in rec.get("labels") or []:
            if not isinstance(lab, dict) or not {"r", "h", "t"} <= set(lab):
                notes["labels without r, h or t"] += 1
            elif not (0 <= lab["h"] < len(entities) and 0 <= lab["t"] < len(entities)):
                notes["labels naming an unknown entity"] += 1
            else:
                labels.append(lab)
        if not labels:
            notes["documents without labels"] += 1
        docs.append(RedocDoc(str(rec.get("title", i)), sents, entities, labels, where))
    return docs, notes


def _sentence(tokens: Sequence[str]) -> str:
    """Detokenised text of a token list (spaces before closing punctuation removed)."""
    text = " ".join(tokens)
    text = re.sub(r" (?=[,.;:!?%)\]}]|'s\b|n't\b|’s\b)", "", text)
    return re.sub(r"([(\[{$]) ", r"\1", text)


def _names(mentions: Sequence[Mention], doc: RedocDoc) -> list[str]:
    out: list[str] = []
    for m in mentions:
        name = " ".join(_sentence(doc.sents[m.sent][m.start : m.end]).split())  # no odd spaces
        if name and name not in out:
            out.append(name)
    return out
