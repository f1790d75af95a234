"""Could NER read less? Two gates measured on a real ingest, neither adopted (issue 60, item 1).

NER is about nine tenths of argus's own CPU work per document (``cpu_path.py``). A remedy that
writes views only for flagged entities the KB describes needs NER only where such an entity may
be written, so two cheap gates were tried, each over the spans an entity of NER's labels can be
written as (runs of capitalised or digit-led words, a connective such as "of" allowed between two):

- **probe first**: the retriever's pass already gives every token's state, so the probe can score
  a candidate span before NER finds it; NER would read only the sentences with a candidate under
  tau. Reported: the share of candidate spans under tau (if most are, the gate skips nothing);
- **KB names first**: NER would read only the sentences with a candidate holding a word that some
  KB name has (the shipped Wikipedia titles and aliases, the gazetteer's names; common words
  aside). Reported: the share of characters NER would read, and how many of the entities that
  got a view at the defaults sit in those sentences (each one outside is a view lost);
- **near a name**: NER reads only the words within ``--margin`` words of a word with a capital
  letter (a sentence-initial function word aside), the rest blanked with spaces so that every
  offset holds. Reported: the share of words read, NER's CPU time on the window the diagnosis
  reads, full and gated, and the entities lost and gained.

``python benchmarks/ner_gate.py --shared-data ../shared/data --corpus <corpus.jsonl> --limit 1000``
(``nox -s bench -- ner-gate ...``); rows appended to ``benchmarks/results/ner-gate.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
_CONNECT = r"(?:of|the|de|del|della|di|da|du|des|la|le|van|von|der|den|and|&|for|on|y)"
_NAME_WORD = r"(?:[A-Z0-9][\w'’.\-]*\w|[A-Z])"
_CONNECTED = re.compile(rf"\b{_NAME_WORD}(?:(?:\s+{_CONNECT})?\s+{_NAME_WORD})*")
_RUN = re.compile(rf"\b{_NAME_WORD}(?:\s+{_NAME_WORD})*")
_WORD = re.compile(r"\w+")


def candidate_spans(text: str) -> list[tuple[int, int]]:
    """Every span that may be a named entity: connected runs ("Bank of America"), the same
    without a leading "The", and plain runs ("Bank", "America")."""
    found: set[tuple[int, int]] = set()
    for m in _CONNECTED.finditer(text):
        found.add((m.start(), m.end()))
        lead = re.match(r"The\s+", m.group(0))
        if lead and lead.end() < len(m.group(0)):
            found.add((m.start() + lead.end(), m.end()))
    for m in _RUN.finditer(text):
        found.add((m.start(), m.end()))
    return sorted(s for s in found if any(c.isalpha() for c in text[s[0] : s[1]]))


_FUNCTION = frozenset(
    [
        "the",
        "a",
        "an",
        "in",
        "on",
        "at",
        "for",
        "of",
        "to",
        "by",
        "with",
        "from",
        "as",
        "and",
        "but",
        "or",
        "if",
        "when",
        "while",
        "where",
        "which",
        "who",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "it",
        "its",
        "we",
        "our",
        "they",
        "their",
        "he",
        "she",
        "his",
        "her",
        "however",
        "moreover",
        "furthermore",
        "therefore",
        "thus",
        "although",
        "because",
        "since",
        "after",
        "before",
        "during",
        "between",
        "among",
        "within",
        "all",
        "both",
        "each",
        "some",
        "many",
        "most",
        "no",
        "not",
        "only",
        "also",
        "such",
        "one",
        "two",
        "first",
        "finally",
        "then",
        "using",
    ]
)


def near_names(text: str, margin: int) -> str:
    """``text`` with only the words within ``margin`` words of a word holding a capital letter
    (a sentence-initial function word aside); every other character but newlines a space."""
    words = list(re.finditer(r"\S+", text))
    keep = [False] * len(words)
    for i, w in enumerate(words):
        core = w.group(0).strip("\"'([{.,;:!?)]}")
        first = (
            i == 0
            or words[i - 1].group(0)[-1:] in ".!?:"
            or "\n" in text[words[i - 1].end() : w.start()]
        )
        if any(c.isupper() for c in core) and not (first and core.lower() in _FUNCTION):
            for j in range(max(0, i - margin), min(len(words), i + margin + 1)):
                keep[j] = True
    out = ["\n" if c == "\n" else " " for c in text]
    for w, kept in zip(words, keep, strict=True):
        if kept:
            out[w.start() : w.end()] = w.group(0)
    return "".join(out)


def kb_vocabulary() -> set[str]:
    from argus_ir.kb.forms import fold
    from argus_ir.kb.places import Gazetteer
    from argus_ir.kb.reference import ReferenceKB

    vocab: set[str] = set()
    for name in ReferenceKB.default().names():
        vocab.update(_WORD.findall(fold(name)))
    names = Gazetteer()._load()
    for i in range(len(names)):
        vocab.update(_WORD.findall(names._form(i).decode("utf-8")))
    return vocab


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--margin", type=int, default=5, help="words kept around a name")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "ner-gate.jsonl")
    args = parser.parse_args()

    from argus_ir import Argus
    from argus_ir.audit.loaders import read_documents
    from argus_ir.errors import ArgusInputError
    from argus_ir.kb.forms import fold, is_common_word
    from argus_ir.remedy.texts import sentence_spans

    docs = read_documents(args.corpus)[: args.limit]
    vocab = kb_vocabulary()
    argus = Argus()
    out = list(argus.process(docs))
    diagnoser = argus.diagnoser
    texts = [d.index_text for d in docs]
    under = spans = 0
    for enc in diagnoser.encoder.encode(texts, first_window=True):
        rows = []
        for a, b in candidate_spans(enc.text):
            try:
                rows.append(enc.pool_span(a, b))
            except ArgusInputError:
                continue  # past the window
        if rows:
            scores = diagnoser.probe.predict(np.stack(rows))
            under += int((scores < diagnoser.tau).sum())
            spans += len(rows)
    chars = kept = entities = entities_in = viewed = viewed_in = 0
    for text, (diagnosis, views) in zip(texts, out, strict=True):
        named = [
            (a, b)
            for a, b in candidate_spans(text)
            if any(w in vocab and not is_common_word(w) for w in _WORD.findall(fold(text[a:b])))
        ]
        keep = [(x, y) for x, y in sentence_spans(text) if any(x < b and a < y for a, b in named)]
        chars += len(text)
        kept += sum(y - x for x, y in keep)
        with_view = {v.metadata.get("argus_entity") for v in views[1:]}
        for entity in diagnosis.entities:
            m = entity.mentions[0]
            inside = any(x <= m.start and m.end <= y for x, y in keep)
            entities += 1
            entities_in += inside
            if entity.surface in with_view:
                viewed += 1
                viewed_in += inside
    import time

    from argus_ir.text.mentions import SpacyMentions

    read = [t[:end] for t, end in zip(texts, diagnoser.encoder.window_ends(texts), strict=True)]
    gated = [near_names(t, args.margin) for t in read]
    ner = SpacyMentions()
    ner.extract(read[:50])  # warm
    clock = time.process_time()
    full = ner.extract(read)
    full_s = time.process_time() - clock
    clock = time.process_time()
    near = ner.extract(gated)
    near_s = time.process_time() - clock
    full_set = [{(m.start, m.end, m.label) for m in ms} for ms in full]
    near_set = [{(m.start, m.end, m.label) for m in ms} for ms in near]
    argus.close()
    row = {
        "corpus": str(args.corpus),
        "documents": len(docs),
        "probe_first": {
            "candidate_spans": spans,
            "under_tau": under,
            "share": round(under / max(spans, 1), 3),
        },
        "kb_names_first": {
            "chars": chars,
            "chars_read": kept,
            "share_read": round(kept / max(chars, 1), 3),
            "entities": entities,
            "entities_read": entities_in,
            "entities_with_views": viewed,
            "entities_with_views_read": viewed_in,
        },
        "near_names": {
            "margin": args.margin,
            "share_of_words_read": round(
                sum(len(g.split()) for g in gated) / max(sum(len(t.split()) for t in read), 1), 3
            ),
            "ner_ms_per_document": round(1000 * full_s / len(read), 2),
            "gated_ner_ms_per_document": round(1000 * near_s / len(read), 2),
            "entities": sum(map(len, full_set)),
            "entities_lost": sum(len(a - b) for a, b in zip(full_set, near_set, strict=True)),
            "entities_gained": sum(len(b - a) for a, b in zip(full_set, near_set, strict=True)),
        },
    }
    print(json.dumps(row))
    with open(args.out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
