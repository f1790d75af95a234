"""Reading documents by id from a LangChain vector store, for the retriever and the docstore.

A batch read fails as a whole when the store refuses one id for its format (PostgreSQL's
"invalid input syntax for type uuid" for an id a hit's metadata names): one forged or foreign
``argus_source_id`` would then fail every query that hits it. Here such a batch is read again one
id at a time, the refused ids are dropped and named, and any other failure (an outage) is raised
as before.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

__all__ = ["aread_by_ids", "is_rejection", "read_by_ids"]

logger = logging.getLogger("langchain_argus.retriever")


def is_rejection(exc: BaseException) -> bool:
    """Whether a failed read is the store refusing what it was asked (an id not of its format:
    a PostgreSQL ``DataError`` such as "invalid input syntax for type uuid", an HTTP 400 or 422)
    rather than failing to answer (an outage, a damaged entry)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(c.__name__ == "DataError" for c in type(current).__mro__):
            return True
        response = getattr(current, "response", None)
        status = getattr(current, "status_code", None) or getattr(response, "status_code", None)
        if status in (400, 422):
            return True
        current = current.__cause__ or getattr(current, "orig", None)
    return False


_Answer = tuple[Sequence[Document] | None, BaseException | None]


def _reading(store: VectorStore, ids: list[str]) -> Generator[list[str], _Answer, list[Document]]:
    """The steps of :func:`read_by_ids` (sync and async alike): each yields the ids to read and
    gets back what the store returned or the error it raised."""
    docs, error = yield ids
    if error is None:
        return list(docs or ())
    if not is_rejection(error):
        raise error
    if len(ids) == 1:
        _warn_rejected(store, [(ids[0], error)])
        return []
    found: list[Document] = []
    rejected: list[tuple[str, BaseException]] = []
    for one in ids:
        docs, error = yield [one]
        if error is None:
            found.extend(docs or ())
        elif is_rejection(error):
            rejected.append((one, error))
        else:
            raise error
    _warn_rejected(store, rejected)
    return found


def read_by_ids(store: VectorStore, ids: list[str]) -> list[Document]:
    """``store.get_by_ids(ids)``; when the store refuses the batch for what one id is (see
    :func:`is_rejection`), each id is read alone and the refused ones are dropped, named in a
    warning. Any other failure is raised: only an outage fails the query."""
    steps = _reading(store, ids)
    try:
        wanted = next(steps)
        while True:
            try:
                answer: _Answer = (store.get_by_ids(wanted), None)
            except Exception as exc:
                answer = (None, exc)
            wanted = steps.send(answer)
    except StopIteration as done:
        return list(done.value)


async def aread_by_ids(store: VectorStore, ids: list[str]) -> list[Document]:
    """:func:`read_by_ids` through ``aget_by_ids``."""
    steps = _reading(store, ids)
    try:
        wanted = next(steps)
        while True:
            try:
                answer: _Answer = (await store.aget_by_ids(wanted), None)
            except Exception as exc:
                answer = (None, exc)
            wanted = steps.send(answer)
    except StopIteration as done:
        return list(done.value)


def _warn_rejected(store: VectorStore, rejected: list[tuple[str, BaseException]]) -> None:
    if rejected:
        first = rejected[0][1]
        logger.warning(
            "%s refused %d id(s) that hits name as their source (%s; first: %s: %s): those "
            "sources are dropped, the rest of the query is answered",
            type(store).__name__,
            len(rejected),
            _shown_ids([i for i, _ in rejected]),
            type(first).__name__,
            str(first).splitlines()[0] if str(first) else "",
        )


def _shown_ids(ids: list[str]) -> str:
    """The first five ids, and how many more, for an error message."""
    return ", ".join(map(repr, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
