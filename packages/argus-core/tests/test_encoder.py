"""Encoder: span pooling, character->token mapping, windowing, document vectors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argus_ir.encoder import EncodedText, assign_tokens, plan_windows


def _manual_states(encoder, text: str) -> tuple[np.ndarray, np.ndarray]:
    """Hidden states and offsets straight from the HF model (specials dropped)."""
    import torch

    tok = encoder.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = tok.pop("offset_mapping")[0].numpy()
    with torch.inference_mode():
        hidden = encoder.model(**tok).last_hidden_state[0].numpy()
    keep = offsets[:, 1] > offsets[:, 0]
    return hidden[keep], offsets[keep]


def test_span_pooling_is_the_mean_over_every_word_piece(minilm):
    text = "Yesterday the Brahmaputra flooded Guwahati again."
    start = text.index("Brahmaputra")
    end = start + len("Brahmaputra")
    enc = next(minilm.encode([text]))
    hidden, offsets = _manual_states(minilm, text)
    pieces = np.nonzero((offsets[:, 0] < end) & (offsets[:, 1] > start))[0]
    assert pieces.size > 1, "the test needs a word split into several pieces"
    np.testing.assert_allclose(enc.pool_span(start, end), hidden[pieces].mean(0), atol=1e-5)
    # a different span must give a different vector (catches pooling over the wrong tokens)
    other = enc.pool_span(text.index("Guwahati"), text.index("Guwahati") + 8)
    assert not np.allclose(other, enc.pool_span(start, end))


def test_document_vector_equals_sentence_transformers(minilm):
    texts = ["Short one.", "A somewhat longer sentence about the river Danube and Vienna.", ""]
    ours = minilm.embed_documents(texts)
    ref = minilm.sentence_transformer.encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(ours, ref, atol=1e-5)


def test_long_text_is_windowed_and_no_mention_is_lost(minilm):
    words = [f"w{i}" for i in range(700)]
    words[500] = "Kathmandu"
    text = " ".join(words)
    enc = next(minilm.encode([text]))
    assert enc.n_windows > 1
    start = text.index("Kathmandu")
    vec = enc.pool_span(start, start + len("Kathmandu"))
    assert vec.shape == (minilm.dim,) and np.isfinite(vec).all()
    # the document vector is what the retriever indexes: its truncated first window
    ref = minilm.sentence_transformer.encode([text], convert_to_numpy=True)[0]
    np.testing.assert_allclose(enc.doc_vector, ref, atol=1e-5)


def test_window_token_states_come_from_the_assigned_window(minilm):
    small = dataclasses.replace(minilm.info, max_length=18)  # 16 content tokens per window
    enc_small = type(minilm).__new__(type(minilm))
    enc_small.__dict__.update(minilm.__dict__)
    enc_small.info = small
    text = " ".join(f"token{i}" for i in range(30))
    enc = next(enc_small.encode([text]))
    ids = minilm.tokenizer(text, add_special_tokens=False)["input_ids"]
    windows = plan_windows(len(ids), 16)
    win, pos = assign_tokens(len(ids), windows)
    assert enc.n_windows == len(windows) > 1
    for w_idx, w in enumerate(windows):
        content, _ = enc_small._forward([ids[w.start : w.end]])
        sel = np.nonzero(win == w_idx)[0]
        np.testing.assert_allclose(enc.states[sel], content[0][pos[sel]], atol=1e-5)
    # a mention straddling a window border still pools all its pieces
    border = windows[1].start
    start = int(enc.offsets[border - 1, 0])
    end = int(enc.offsets[border + 1, 1])
    t0, t1 = enc.token_span(start, end)
    assert t0 <= border - 1 and t1 >= border + 2


@pytest.mark.parametrize(
    ("n", "width", "stride"), [(0, 4, None), (3, 4, None), (10, 4, 2), (101, 16, None), (50, 7, 7)]
)
def test_windows_cover_every_token(n, width, stride):
    windows = plan_windows(n, width, stride)
    covered = np.zeros(n, dtype=bool)
    for w in windows:
        assert 0 <= w.start <= w.end <= n and w.length <= width
        covered[w.start : w.end] = True
    assert covered.all()
    win, pos = assign_tokens(n, windows)
    for i in range(n):
        w = windows[win[i]]
        assert w.start + pos[i] == i


_PIECES = [*"abcxyzABC éüßİı ", "\u0301", "\u0308", "🚀", "👍🏽", "中", "文", "\t", "\n", "ﬁ", "Å"]
_UNICODE = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=30).map("".join)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_UNICODE, data=st.data())
def test_char_to_token_mapping_on_unicode(minilm, text, data):
    tok = minilm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = np.asarray(tok["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    enc = EncodedText(text, offsets, np.zeros((len(offsets), 2), np.float32), np.zeros(2))
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    overlapping = [
        i for i, (a, b) in enumerate(offsets.tolist()) if b > a and a < end and b > start
    ]
    if not overlapping:
        with pytest.raises(ValueError, match="covers no token"):
            enc.token_span(start, end)
        return
    t0, t1 = enc.token_span(start, end)
    assert (t0, t1) == (overlapping[0], overlapping[-1] + 1)
    assert (offsets[:, 0] <= offsets[:, 1]).all() and offsets.max(initial=0) <= len(text)


def test_token_span_rejects_spans_outside_the_text():
    enc = EncodedText("abc", np.array([[0, 3]]), np.zeros((1, 2), np.float32), np.zeros(2))
    with pytest.raises(ValueError, match="not inside"):
        enc.pool_span(2, 9)
    with pytest.raises(ValueError, match="not inside"):
        enc.pool_span(2, 2)


def test_bf16_precision_stays_close_to_fp32_and_differs_from_it(minilm):
    from argus_ir.encoder import SentenceTransformerEncoder

    fast = SentenceTransformerEncoder("minilm", device="cpu", batch_size=16, precision="bf16")
    texts = ["Yesterday the Brahmaputra flooded Guwahati again.", "Marie Curie kept her notes."]
    ref = list(minilm.encode(texts))
    out = list(fast.encode(texts))
    for r, o in zip(ref, out):
        assert o.states.dtype == np.float32 and o.doc_vector.dtype == np.float32
        cos = float(r.doc_vector @ o.doc_vector) / float(
            np.linalg.norm(r.doc_vector) * np.linalg.norm(o.doc_vector)
        )
        assert cos > 0.99
        assert not np.array_equal(r.states, o.states)  # the pass really ran in bf16


def test_unknown_precision_is_refused():
    from argus_ir import Argus
    from argus_ir.encoder import SentenceTransformerEncoder

    with pytest.raises(ValueError, match="precision"):
        SentenceTransformerEncoder("minilm", precision="fp8")
    with pytest.raises(ValueError, match="precision"):
        Argus(precision="int4")


@pytest.mark.parametrize(
    ("flags", "device", "expected"),
    [
        ({"avx2", "avx512f"}, "cpu", "fp32"),
        ({"avx512f", "avx512_bf16"}, "cpu", "bf16"),
        ({"amx_tile", "amx_bf16"}, "cpu", "bf16"),
        (set(), "cpu", "fp32"),
        ({"amx_bf16"}, "mps", "fp32"),
    ],
)
def test_auto_precision_follows_native_bf16(monkeypatch, flags, device, expected):
    from argus_ir.encoder import base

    monkeypatch.setattr(base, "_cpu_flags", lambda: flags)
    assert base.resolve_precision("auto", device) == expected
    assert base.resolve_precision("fp32", device) == "fp32"  # explicit values stand
    assert base.resolve_precision("bf16", device) == "bf16"
    with pytest.raises(ValueError, match="precision"):
        base.resolve_precision("fp16", device)


def test_auto_precision_resolves_on_this_machine_and_in_the_settings_card():
    from argus_ir import Argus
    from argus_ir.encoder import SentenceTransformerEncoder
    from argus_ir.encoder.base import native_bf16

    here = "bf16" if native_bf16("cpu") else "fp32"
    enc = SentenceTransformerEncoder("minilm", device="cpu", precision="auto")
    assert enc.precision == here
    assert Argus().precision == "auto"  # the default
    assert Argus(device="cpu").settings_card()["precision"] == here  # what actually runs
    assert Argus(device="cpu", precision="fp32").settings_card()["precision"] == "fp32"


_MIXED_TEXTS = [
    "Marie Curie kept her notes in a lead-lined box.",
    "The Brahmaputra flooded Guwahati again. " * 3,
    "Lucknow is the capital of Uttar Pradesh.",
    "Short.",
    "A long report on rivers. " * 90,  # several windows
    "Humphrey Bogart starred in Casablanca, shot in Burbank.",
    "Nine.",
]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_texts_output_does_not_depend_on_its_batch(precision):
    from argus_ir.encoder import SentenceTransformerEncoder
    from argus_ir.encoder.base import native_bf16

    if precision == "bf16" and not native_bf16("cpu"):
        pytest.skip("bf16 is emulated on this CPU; invariance is only promised where it is native")
    big = SentenceTransformerEncoder("minilm", device="cpu", batch_size=64, precision=precision)
    small = SentenceTransformerEncoder("minilm", device="cpu", batch_size=3, precision=precision)
    together = list(big.encode(_MIXED_TEXTS))
    for i, text in enumerate(_MIXED_TEXTS):
        for alone in (next(big.encode([text])), next(small.encode([text]))):
            assert np.array_equal(alone.states, together[i].states), (precision, i)
            assert np.array_equal(alone.doc_vector, together[i].doc_vector), (precision, i)
    reordered = list(small.encode(_MIXED_TEXTS[::-1], chunk_size=2))[::-1]
    for a, b in zip(reordered, together):
        assert np.array_equal(a.states, b.states) and np.array_equal(a.doc_vector, b.doc_vector)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in a one-CPU worker process
    try:
        single = list(small.encode(_MIXED_TEXTS))
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(single, together):
        assert np.array_equal(a.states, b.states) and np.array_equal(a.doc_vector, b.doc_vector)


def test_a_plain_sentence_transformers_folder_loads_without_importing_it():
    """Importing sentence-transformers costs seconds before the first record; a folder of a
    transformer, a pooling and a normalisation is read directly, with the same settings."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from argus_ir.encoder.backends import SentenceTransformerEncoder\n"
        "e = SentenceTransformerEncoder('minilm', device='cpu')\n"
        "print('sentence_transformers' in sys.modules, e.info.doc_pooling, e.info.normalize,"
        " e.info.max_length)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "mean", "True", "256"]


def test_a_folder_with_other_modules_loads_through_sentence_transformers(tmp_path):
    import json
    import shutil

    from argus_ir.encoder.backends import _plain_layout
    from argus_ir.encoder.models import resolve_model

    source = resolve_model("minilm")
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("modules.json", "sentence_bert_config.json"):
        shutil.copy(source / name, folder / name)
    shutil.copytree(source / "1_Pooling", folder / "1_Pooling")
    assert _plain_layout(folder) == ("mean", True, 256)
    modules = json.loads((folder / "modules.json").read_text())
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (folder / "modules.json").write_text(json.dumps([*modules, dense]))
    assert _plain_layout(folder) is None  # a dense layer after pooling: not argus's to read
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 256, "do_lower_case": true}'
    )
    assert _plain_layout(folder) is None  # sentence-transformers lower-cases the text
    assert _plain_layout(tmp_path / "absent") is None


def test_no_model_loading_bar_when_no_progress_is_asked():
    """transformers draws a "Loading weights" bar on stderr; Argus(show_progress=False) hides it
    for the load, and gives the setting back."""
    import os
    import subprocess
    import sys

    code = (
        "import transformers.utils.logging as l; before = l.is_progress_bar_enabled(); "
        "from argus_ir import Argus; Argus(show_progress={show})._get('encoder'); "
        "print(before, l.is_progress_bar_enabled())"
    )
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    for show in (False, True):
        out = subprocess.run(
            [sys.executable, "-c", code.format(show=show)], capture_output=True, text=True, env=env
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["True", "True"]  # on before, on again after
        assert ("Loading weights" in out.stderr) is show  # the bar is there to hide


def test_a_batch_is_tokenised_once_for_its_window_ends_and_its_pass(minilm, monkeypatch):
    """Issue 49: the diagnosis asks where each text's first window ends (before NER) and then
    encodes the same batch; the tokenizer reads the batch once, and the pass is the same as
    from a fresh encoder."""
    import copy

    texts = [f"Niels Bohr visited Lucknow in {1900 + i}. " * (1 + i % 40) for i in range(12)]
    fresh = copy.copy(minilm)
    fresh.__dict__.pop("_token_memo", None)
    calls = []

    class Counted:
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, batch, *args, **kwargs):
            if isinstance(batch, list):
                calls.append(len(batch))
            return self.inner(batch, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(fresh, "tokenizer", Counted(fresh.tokenizer))
    ends = fresh.window_ends(texts)
    memo = list(fresh.encode(texts, first_window=True))
    assert calls == [len(texts)]
    minilm.__dict__.pop("_token_memo", None)
    plain = list(minilm.encode(texts, first_window=True))
    assert ends == minilm.window_ends(texts)
    for a, b in zip(memo, plain, strict=True):
        assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.states, b.states)
