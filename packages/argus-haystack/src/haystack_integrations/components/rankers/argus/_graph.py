"""Where an argus component sits in its Haystack pipeline: the one walk of the pipeline's graph.

Several decisions depend on a component's neighbours, which its init parameters do not name:
:class:`~haystack_integrations.components.augmenters.argus.ArgusSourceCleaner` refuses a writer
after it that would not overwrite, and
:class:`~haystack_integrations.components.rankers.argus.ArgusCollapser` reads scores by the
component that feeds it (a pgvector retriever, or something between one and the collapser).
Haystack marks a component it adds to a pipeline with the pipeline and the component's name;
outside a pipeline there are no neighbours.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["linked", "upstream"]


def _placed(component: Any) -> tuple[Any, str] | None:
    """The pipeline ``component`` was added to and its name there, else ``None``."""
    pipeline = getattr(component, "__haystack_added_to_pipeline__", None)
    name = getattr(component, "__component_name__", None)
    if pipeline is None or name is None:
        return None
    return pipeline, name


def _edges(pipeline: Any, name: str, *, into: bool) -> Iterator[tuple[str, str, str]]:
    """The connections of component ``name``: ``(other component, its socket, name's socket)``,
    the ones that feed it (``into``) or the ones it feeds."""
    if into:
        for sender, _, edge in pipeline.graph.in_edges(name, data=True):
            yield sender, edge["from_socket"].name, edge["to_socket"].name
    else:
        for _, receiver, edge in pipeline.graph.out_edges(name, data=True):
            yield receiver, edge["to_socket"].name, edge["from_socket"].name


def linked(component: Any, socket: str, *, feeding: bool) -> list[tuple[str, Any]]:
    """The components wired to one of ``component``'s sockets, with their names.

    Args:
        component: A component, in a pipeline or not.
        socket: The name of its socket.
        feeding: ``True``: the components whose outputs feed its input ``socket``; ``False``:
            those its output ``socket`` feeds.

    Returns:
        ``(name, component)`` pairs, in the graph's order; empty outside a pipeline.
    """
    placed = _placed(component)
    if placed is None:
        return []
    pipeline, name = placed
    return [
        (other, pipeline.get_component(other))
        for other, _, mine in _edges(pipeline, name, into=feeding)
        if mine == socket
    ]


def upstream(component: Any, socket: str) -> list[tuple[str, Any]]:
    """Every component a value on ``component``'s input ``socket`` may come from: the ones that
    feed that socket, then the ones that feed those (through any socket), nearest first.

    Returns:
        ``(name, component)`` pairs, each once; empty outside a pipeline.
    """
    placed = _placed(component)
    if placed is None:
        return []
    pipeline, _ = placed
    found = dict(linked(component, socket, feeding=True))
    queue = list(found)
    while queue:
        name = queue.pop(0)
        for sender, _, _ in _edges(pipeline, name, into=True):
            if sender not in found:
                found[sender] = pipeline.get_component(sender)
                queue.append(sender)
    return list(found.items())
