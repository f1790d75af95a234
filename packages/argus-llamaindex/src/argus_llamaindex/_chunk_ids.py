"""Ids a splitter's chunks keep from run to run: :func:`stable_chunk_ids`.

LlamaIndex's node parsers name every chunk with a random UUID (``default_id_func``), and argus's
view ids follow the ids of their originals, so the same document split again comes out under new
ids, chunks and views alike. A store that replaces rows by node id (``UpsertingPGVectorStore``,
Chroma, Qdrant) then replaces nothing: a run whose docstore state was lost (killed before
``persist_pipeline``), run again, or a second pipeline with a docstore of its own, stores every
chunk and view a second time. :func:`stable_chunk_ids` names such a chunk after what it is: the
document it was cut from and its text.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Sequence

from llama_index.core.schema import BaseNode, RelatedNodeInfo

from argus_ir.lineage import SOURCE_KEY

__all__ = ["CHUNK_NAMESPACE", "chunk_id", "stable_chunk_ids"]

CHUNK_NAMESPACE = uuid.UUID("8c4e1b7a-2f3d-4a96-b0e5-6d9c3f1a7e42")
"""The UUIDv5 namespace of chunk ids (fixed: changing it changes every chunk's id, and its views')."""


def chunk_id(source_id: str, text: str, nth: int) -> str:
    """The id of the ``nth`` chunk (from 0) of ``source_id`` with ``text``: the UUIDv5 of the
    three, the same on every run and machine.

    The text rather than the place: a chunk an edit elsewhere in its document only moved keeps its
    id (and its views theirs), so its rows are replaced, not left beside new ones. ``nth`` tells
    apart the chunks of one source with the same text, in the order the splitter gave them: a
    sentence repeated, a document given twice in one call, or a short document's levels in
    ``HierarchicalNodeParser`` (each level one node of the whole text).
    """
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    key = json.dumps([source_id, digest, nth], ensure_ascii=False)
    name = key.encode("utf-8", "surrogatepass")  # uuid5 itself refuses a lone surrogate
    sha1 = hashlib.sha1(CHUNK_NAMESPACE.bytes + name, usedforsecurity=False).digest()
    return str(uuid.UUID(bytes=sha1[:16], version=5))  # what uuid.uuid5 computes


def stable_chunk_ids(nodes: Sequence[BaseNode]) -> list[BaseNode]:
    """``nodes``, each chunk a splitter named at random under :func:`chunk_id` instead, and every
    relationship among ``nodes`` that named a renamed chunk (``PREVIOUS``, ``NEXT``, ``PARENT``,
    ``CHILD``, ``SOURCE``) naming its new id. Renamed and rewritten nodes are copies; the others
    are the nodes given. A relationship to a chunk outside ``nodes`` keeps the id it had.

    A node is renamed when it has a ``SOURCE`` other than itself (a splitter's chunk) and a random
    id: a version-4 UUID, which ``default_id_func`` makes, and not an argus original's own id
    (its ``argus_source_id``: argus's output given back, stored under that id). Documents, nodes
    without a source and ids chosen by the caller (a splitter's ``id_func``) are kept.
    """
    seen: Counter[tuple[str, str]] = Counter()
    new_ids: list[str | None] = []
    renamed: dict[str, str] = {}
    for node in nodes:
        source = node.source_node
        if source is None or not _random_chunk_id(node, source.node_id):
            new_ids.append(None)
            continue
        key = (source.node_id, _text(node))
        new_id = chunk_id(*key, seen[key])
        seen[key] += 1
        new_ids.append(new_id)
        renamed.setdefault(node.node_id, new_id)
    if not renamed:
        return list(nodes)
    return [_renamed(node, new, renamed) for node, new in zip(nodes, new_ids, strict=True)]


def _random_chunk_id(node: BaseNode, source_id: str) -> bool:
    """Whether ``node`` is a chunk under an id no later run would give it again."""
    if source_id == node.node_id or node.metadata.get(SOURCE_KEY) == node.node_id:
        return False
    try:
        return uuid.UUID(node.node_id).version == 4
    except ValueError:  # not a UUID: an id of the caller's
        return False


def _text(node: BaseNode) -> str:
    text = getattr(node, "text", None)
    if text is None:  # a Document's text resource; media: none
        resource = getattr(node, "text_resource", None)
        text = None if resource is None else resource.text
    return text or ""


def _renamed(node: BaseNode, new_id: str | None, renamed: dict[str, str]) -> BaseNode:
    """``node`` under ``new_id`` (``None``: its own), its relationships following ``renamed``."""
    relationships = {
        kind: [_follow(info, renamed) for info in related]
        if isinstance(related, list)
        else _follow(related, renamed)
        for kind, related in node.relationships.items()
    }
    if new_id is None and relationships == node.relationships:
        return node
    return node.model_copy(update={"id_": new_id or node.node_id, "relationships": relationships})


def _follow(info: RelatedNodeInfo, renamed: dict[str, str]) -> RelatedNodeInfo:
    new = renamed.get(info.node_id)
    return info if new is None else info.model_copy(update={"node_id": new})
