"""The vector cache: whole-text keys, chunked embedding that resumes, rows in input order."""

from __future__ import annotations

import numpy as np
import pytest

from argus_ir.encoder.cache import VectorCache, cached_vectors, span_key, text_key

TEXTS = ["a", "ccc", "bb", "dddd", "a"]


class Embedder:
    """Texts -> [len, first letter code]; records every call, can fail after ``fail_after``."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_after = fail_after

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("interrupted")
        self.calls.append(list(texts))
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32).reshape(-1, 2)


def expected(texts):
    return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def keys_of(texts):
    return [text_key("model|fp32", t) for t in texts]


def test_text_keys_name_model_and_text_and_differ_from_span_keys():
    assert text_key("m", "x") == text_key("m", "x")
    assert len({text_key("m", "x"), text_key("n", "x"), text_key("m", "y")}) == 3
    assert text_key("m", "x") != span_key("m", "x", 0, 1)


def test_rows_come_back_in_input_order_embedded_longest_first():
    embed = Embedder()
    rows = cached_vectors(TEXTS, keys_of(TEXTS), embed, None, chunk=2)
    np.testing.assert_array_equal(rows, expected(TEXTS))
    assert embed.calls == [["dddd", "ccc"], ["bb", "a"]]  # the second "a" shares the first's row


def test_a_second_run_embeds_nothing(tmp_path):
    cache = VectorCache.for_model(tmp_path, "org/model", dim=2)
    first = cached_vectors(TEXTS, keys_of(TEXTS), Embedder(), cache, chunk=2)
    assert (tmp_path / "org__model").is_dir()
    again_embed = Embedder()
    again = cached_vectors(
        TEXTS, keys_of(TEXTS), again_embed, VectorCache.for_model(tmp_path, "org/model", 2)
    )
    assert again_embed.calls == []
    np.testing.assert_array_equal(again, first)


def test_an_interrupted_run_resumes_with_what_is_missing(tmp_path):
    with pytest.raises(RuntimeError, match="interrupted"):
        cached_vectors(
            TEXTS, keys_of(TEXTS), Embedder(fail_after=1), VectorCache(tmp_path, 2), chunk=2
        )
    resumed = Embedder()
    rows = cached_vectors(TEXTS, keys_of(TEXTS), resumed, VectorCache(tmp_path, 2), chunk=2)
    assert resumed.calls == [["bb", "a"]]  # the first chunk was saved before the stop
    np.testing.assert_array_equal(rows, expected(TEXTS))


def test_no_texts_and_mismatched_keys():
    assert cached_vectors([], [], Embedder(), None).shape == (0, 2)
    with pytest.raises(ValueError, match="2 texts but 1 keys"):
        cached_vectors(["a", "b"], ["k"], Embedder(), None)


def test_two_caches_on_one_folder_never_overwrite_each_others_shards(tmp_path):
    # two runs sharing a cache folder, each opened before the other wrote: both used to write
    # shard-000000.npz, and the second replaced the first's vectors
    first, second = VectorCache(tmp_path, dim=2), VectorCache(tmp_path, dim=2)
    first.add({"a": np.ones(2, np.float32)})
    second.add({"b": np.zeros(2, np.float32)})
    first.add({"c": np.full(2, 2.0, np.float32)})
    again = VectorCache(tmp_path, dim=2)
    assert sorted(again._data) == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "shard-000000.npz",
        "shard-000001.npz",
        "shard-000002.npz",
    ]
