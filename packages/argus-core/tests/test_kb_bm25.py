"""The KB's BM25 index (argus_ir.kb.bm25) against bm25s, and argus never starting JAX (issue 49).

bm25s is the independent implementation here: argus's index must hold its very numbers and read
and write its folders. The JAX test runs a whole ``argus augment`` in a fresh interpreter with a
stand-in ``jax`` package first on the path that writes down who imported it.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.kb.bm25 import STOPWORDS_EN, BM25Index, tokenize, words
from argus_ir.kb.reference import SHIPPED_LEADS

bm25s = pytest.importorskip("bm25s")

ODD = [
    "",
    "the of and",  # stopwords only: a passage with no word
    "Ünïcödé Straße 北京 x y zz 42 4",
    "aaa aaa aaa bbb",
    "Hyphen-ated words, under_scored_ones and O'Brien's.",
]


def _shipped_texts(limit: int | None = None) -> list[str]:
    texts = []
    with gzip.open(SHIPPED_LEADS, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if limit is not None and n >= limit:
                break
            record = json.loads(line)
            texts.append(f"{record['title']} {record['text']}")
    return texts


def _oracle(texts: list[str]):
    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    return index


def test_the_index_holds_bm25s_own_numbers_to_the_bit():
    texts = _shipped_texts() + ODD
    ours, theirs = BM25Index.build(texts), _oracle(texts)
    assert ours.vocab_dict == theirs.vocab_dict
    for key in ("data", "indices", "indptr"):
        assert ours.scores[key].dtype == theirs.scores[key].dtype, key
        assert ours.scores[key].tobytes() == theirs.scores[key].tobytes(), key
    assert ours.scores["num_docs"] == len(texts)


def test_words_and_ids_are_bm25s_tokenize():
    texts = _shipped_texts(300) + ODD
    ids, vocab = tokenize(texts)
    theirs = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    assert vocab == theirs.vocab
    assert [row.tolist() for row in ids] == theirs.ids
    assert set(STOPWORDS_EN) == set(bm25s.stopwords.STOPWORDS_EN)
    assert words("The Lucknow Pact, of 1916") == ["lucknow", "pact", "1916"]


def test_bm25s_reads_what_argus_writes_and_argus_reads_what_bm25s_wrote(tmp_path):
    texts = _shipped_texts(500)
    ours = BM25Index.build(texts)
    ours.save(tmp_path / "ours")
    read_by_bm25s = bm25s.BM25.load(str(tmp_path / "ours"), mmap=True)
    query = ["einstein", "physics"]
    _oracle(texts).save(str(tmp_path / "theirs"))
    read_by_argus = BM25Index.load(tmp_path / "theirs")
    assert read_by_argus.vocab_dict == ours.vocab_dict
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(read_by_argus.scores[key], ours.scores[key]), key
    from argus_ir.kb.reference import postings_scores

    rows, scores = postings_scores(read_by_argus, query)
    full = read_by_bm25s.get_scores(query)
    assert rows.tolist() == full.nonzero()[0].tolist()
    assert scores.tobytes() == full[rows].tobytes()


def test_a_cut_or_foreign_index_is_refused_by_name(tmp_path):
    BM25Index.build(["Niels Bohr", "Lucknow"]).save(tmp_path / "cut")
    data = tmp_path / "cut" / "data.csc.index.npy"
    data.write_bytes(data.read_bytes()[:20])
    with pytest.raises(ArgusInputError, match=r"cut.*cannot read the BM25 index"):
        BM25Index.load(tmp_path / "cut")
    foreign = bm25s.BM25(method="bm25+")
    foreign.index(bm25s.tokenize(["Niels Bohr"], show_progress=False), show_progress=False)
    foreign.save(str(tmp_path / "plus"))
    with pytest.raises(ArgusInputError, match=r"params.index.json: a bm25\+ index"):
        BM25Index.load(tmp_path / "plus")


STAND_IN = '''\
"""A stand-in for JAX: writes down where it was imported from, then fails like a missing JAX."""
import os, traceback
with open(os.environ["JAX_IMPORT_LOG"], "a", encoding="utf-8") as fh:
    fh.write("".join(traceback.format_stack()) + "\\n----\\n")
raise ImportError("the stand-in jax records its import and offers nothing")
'''


def test_argus_never_imports_jax(tmp_path):
    """Issue 49: bm25s imports JAX where it is installed, and JAX takes three quarters of a GPU.
    A whole ``argus augment`` (models, the shipped KB built from scratch and its lookups) runs with
    a stand-in ``jax`` first on the path: nothing may import it."""
    pytest.importorskip("spacy")
    pytest.importorskip("sentence_transformers")
    (tmp_path / "standin" / "jax").mkdir(parents=True)
    (tmp_path / "standin" / "jax" / "__init__.py").write_text(STAND_IN, encoding="utf-8")
    log = tmp_path / "jax-imports.txt"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"_id": str(i), "text": text})
            for i, text in enumerate(
                [
                    "Humphrey Bogart once filmed a scene in Lucknow.",
                    "Niels Bohr lectured at the Aligarh Muslim University in 1960.",
                ]
            )
        ),
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(tmp_path / "standin"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        "JAX_IMPORT_LOG": str(log),
        "ARGUS_CACHE_DIR": str(tmp_path / "cache"),  # the shipped KB's index is built here
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    check = textwrap.dedent(
        """
        import importlib.util, sys
        assert importlib.util.find_spec("jax").origin.startswith(sys.argv[1]), "stand-in not first"
        from argus_ir.cli.main import main
        sys.exit(main(sys.argv[2:]))
        """
    )
    out = tmp_path / "out.jsonl"
    run = subprocess.run(
        [sys.executable, "-c", check, str(tmp_path / "standin"), "augment", str(corpus),
         "--out", str(out), "-q"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert out.is_file() and (tmp_path / "cache" / "kb").is_dir()  # the KB was built and read
    assert not log.exists(), "JAX was imported:\n" + log.read_text(encoding="utf-8")


def _tamper(folder, name, change):
    path = folder / name
    arr = np.load(path)
    np.save(path, change(arr.copy()), allow_pickle=False)


@pytest.mark.parametrize(
    ("name", "change", "says"),
    [
        # data and indices agree, the last column start does not: loaded, it cut one posting
        ("indptr", lambda a: np.concatenate([a[:-1], a[-1:] - 1]), r"ends at 6, .* hold 7"),
        ("indptr", lambda a: np.concatenate([a[:2], a[1:2] - 1, a[3:]]), r"decreases"),
        ("indptr", lambda a: a[:-1], r"5 entries for 5 words"),
        ("indptr", lambda a: a + 1, r"starts at 1"),
        ("indptr", lambda a: a.astype(np.float64), r"float64.*integers"),
        ("indices", lambda a: np.where(a == a.max(), 7, a).astype(a.dtype), r"passage row 7.*3"),
        ("indices", lambda a: a[::-1].copy(), r"not ascending"),
        ("data", lambda a: a.astype(np.int32), r"int32.*floating"),
        ("data", lambda a: a.reshape(7, 1), r"2 dimensions"),
    ],
)
def test_an_index_whose_arrays_disagree_is_refused_naming_the_file(tmp_path, name, change, says):
    """Issue 54: the load check was ``indptr[-1] != data.size != indices.size``, chained, so an
    ``indptr`` that disagreed with equal data and indices loaded and cut postings short."""
    folder = tmp_path / "kb"
    BM25Index.build(["Niels Bohr lectured", "Bohr in Lucknow", "Lucknow pact"]).save(folder)
    BM25Index.load(folder)  # the untouched folder reads
    _tamper(folder, f"{name}.csc.index.npy", change)
    with pytest.raises(ArgusInputError, match=rf"{name}\.csc\.index\.npy.*{says}"):
        BM25Index.load(folder)


def test_a_vocabulary_naming_a_missing_column_is_refused(tmp_path):
    folder = tmp_path / "kb"
    BM25Index.build(["Niels Bohr lectured", "Bohr in Lucknow"]).save(folder)
    vocab = json.loads((folder / "vocab.index.json").read_text("utf-8"))
    vocab["bohr"] = 99
    (folder / "vocab.index.json").write_text(json.dumps(vocab), "utf-8")
    with pytest.raises(ArgusInputError, match=r"vocab.index.json.*'bohr'.*column 99"):
        BM25Index.load(folder)


def test_argus_requires_the_numpy_under_which_bm25s_gives_argus_numbers():
    """Issue 54: argus's scores are array arithmetic, the same bytes under NumPy 1.26 and 2 (its
    shipped KB's 425,604 scores were compared under both). bm25s adds a float64 scalar to a float32
    array, which NumPy 1.x computes in float32 (value-based promotion): there 164,558 of those
    scores differ from argus's, and a bm25s folder would rank otherwise than argus's own. Only NumPy
    2 gives the numbers the bit-for-bit test above holds, so the package must not allow 1.x."""
    from pathlib import Path

    import tomllib
    from packaging.requirements import Requirement

    import argus_ir

    pyproject = Path(argus_ir.__file__).parents[2] / "pyproject.toml"
    needs = [
        Requirement(r)
        for r in tomllib.loads(pyproject.read_text("utf-8"))["project"]["dependencies"]
    ]
    (numpy_req,) = [r for r in needs if r.name == "numpy"]
    assert not any(numpy_req.specifier.contains(v) for v in ("1.26.4", "1.99.0")), numpy_req
    assert numpy_req.specifier.contains(np.__version__), (numpy_req, np.__version__)
