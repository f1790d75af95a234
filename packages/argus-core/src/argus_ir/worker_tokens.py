"""The retriever's tokens from NER's worker processes, for a process that feeds a GPU.

Where NER runs apart from the retriever's pass, in worker processes (a GPU retriever:
:func:`~argus_ir.diagnose.ner_apart`), the workers also tokenise the texts they read, with the
Rust side of the retriever's own fast tokenizer, cut each at its first window where the
diagnosis reads that far only, and send the tokens back with the mentions
(:meth:`~argus_ir.text.mentions.SpacyMentions.tokenized`, :mod:`argus_ir.encoder.tokens`). The
feeding process then tokenises nothing: tokenising was about half of its CPU time per document.
"""

from __future__ import annotations

import logging
from typing import Any

from argus_ir.encoder.base import TokenEncoder
from argus_ir.encoder.tokens import backend_json, unpack
from argus_ir.text.mentions import Mention, Tokenized

__all__ = ["WorkerTokens"]

logger = logging.getLogger(__name__)


class WorkerTokens:
    """Whether NER's workers tokenise a call for ``encoder``, and their answers taken in.

    The first tokens the workers send are compared with this process's own for one text; where
    they differ (a tokenizer whose Python side adds to its Rust side), that is said once and this
    process tokenises from then on.
    """

    def __init__(self, encoder: TokenEncoder, mentions: Any) -> None:
        self.encoder = encoder
        self.mentions = mentions
        self._json: str | None = None  # the tokenizer as the workers load it ("": it has none)
        self.agree: bool | None = None  # the workers' first tokens were ours (None: not yet seen)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_json": None}  # hundreds of KB, read again where needed

    def tokenizer(self, count: int) -> str | None:
        """The tokenizer for the workers to tokenise a call of ``count`` texts with (``None``:
        this process tokenises it: the workers do not take the call, or cannot tokenise)."""
        tokenizes = getattr(self.mentions, "tokenizes", None)
        if self.agree is False or tokenizes is None or not tokenizes(count):
            return None
        if self._json is None:
            self._json = backend_json(self.encoder.tokenizer) or ""
        return self._json or None

    def take(
        self, texts: list[str], answer: Tokenized | None
    ) -> tuple[list[list[Mention]], list[str]] | None:
        """The mentions and what NER read of each text, the tokens given to the encoder; ``None``
        where the workers did not answer (they failed: reported) or tokenise otherwise."""
        if answer is None or self.agree is False:  # a batch started before they were caught
            return None
        found, ends, packed = answer
        tokens = [unpack(p) for p in packed]
        if self.agree is None:
            first = next((i for i, (ids, _) in enumerate(tokens) if ids), None)
            if first is not None:
                self.agree = self.encoder.same_tokens(texts[first], tokens[first])
                if not self.agree:
                    logger.warning(
                        "NER's worker processes tokenise for %r otherwise than this process "
                        "does; this process tokenises from now on",
                        self.encoder.info.retriever_id,
                    )
                    return None
        self.encoder.remember_tokens(texts, tokens)
        return found, [t[:end] for t, end in zip(texts, ends, strict=True)]
