"""The write rule (argus_ir.outputs), second audit: paths that went around it.

Each test names the path that bypassed the rule and fails on the code that let it: a lock file
that is the input, ``argus demo``'s folder, the dry run's rows file, a ``--stats`` another run is
writing, the LLM reply cache, the assembled model folder, the Ray engine's partial folder."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from argus_ir.cli import main

CLI = [sys.executable, "-m", "argus_ir.cli", "--quiet"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def _corpus(path: Path) -> Path:
    rows = [
        {"_id": "d0", "text": "Humphrey Bogart once filmed a scene in Lucknow."},
        {"_id": "d1", "text": "Ada Lovelace met Charles Babbage in London."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_an_output_whose_lock_file_is_the_input_is_refused_and_the_input_kept(tmp_path, capsys):
    # `--out d.jsonl` is locked through d.jsonl.lock: a corpus of that name was truncated to the
    # lock's pid line, then deleted when the lock was released
    corpus = _corpus(tmp_path / "d.jsonl.lock")
    before = corpus.read_bytes()
    out = tmp_path / "d.jsonl"
    for args in (
        ["diagnose", "--corpus", str(corpus), "--out", str(out)],
        ["augment", str(corpus), "--out", str(out)],
    ):
        assert main(["--quiet", *args]) == 1
        err = capsys.readouterr().err
        assert "d.jsonl.lock, which is the input corpus" in err, err
        assert corpus.read_bytes() == before and not out.exists()
    dump = tmp_path / "kb.lock"  # kb build --out kb is locked through kb.lock
    dump.write_text("<feed></feed>\n")
    args = ["--quiet", "kb", "build", "--wikipedia-abstracts", str(dump), "--out"]
    assert main([*args, str(tmp_path / "kb")]) == 1
    assert "kb.lock, which is an input" in capsys.readouterr().err
    assert dump.read_text() == "<feed></feed>\n"


def test_demo_refuses_a_non_empty_out_folder_without_overwrite(tmp_path, capsys):
    mine = tmp_path / "work"
    mine.mkdir()
    (mine / "augmented.jsonl").write_text("my own file\n")
    assert main(["--quiet", "demo", "--out", str(mine)]) == 1
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert (mine / "augmented.jsonl").read_text() == "my own file\n"
    assert sorted(p.name for p in mine.iterdir()) == ["augmented.jsonl"]


def test_a_dry_run_never_touches_a_file_named_like_its_rows(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl")
    stats = tmp_path / "plan.json"
    rows = tmp_path / "plan.json.rows"  # the name the dry run used to write its rows into
    rows.write_text("my notes\n")
    done = subprocess.run(
        [*CLI, "augment", str(corpus), "--dry-run", "--stats", str(stats)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert rows.read_text() == "my notes\n"
    assert json.loads(stats.read_text())["totals"]["documents"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "plan.json", "plan.json.rows"]


_HOLD = """
import sys, time
from argus_ir.outputs import claim_output
with claim_output(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_stats_another_run_is_writing_is_refused(tmp_path, capsys):
    # two runs on different --out but one --stats: the second used to write it too (last one won)
    corpus = _corpus(tmp_path / "c.jsonl")
    stats = tmp_path / "stats.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(stats)], env=ENV, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        out = tmp_path / "o.jsonl"
        code = main(["--quiet", "augment", str(corpus), "--out", str(out), "--stats", str(stats)])
    finally:
        holder.kill()
        holder.wait()
    assert code == 1
    assert "is being written by another argus run" in capsys.readouterr().err
    assert not stats.exists() and not (tmp_path / "o.jsonl").exists()


# -- the LLM reply cache ----------------------------------------------------------------------------


def test_a_reply_cache_cut_mid_line_is_read_on_and_appended_to(tmp_path, caplog):
    from argus_ir.llm import CallCache

    cache = CallCache(tmp_path)
    cache.put([("k1", "v1", "first"), ("k2", "v1", "second")])
    with open(cache.path, "ab") as fh:  # a run killed mid-write (or a full disk)
        fh.write(b'{"format": 1, "key": "k3", "prompt": "v1", "rep')
    with caplog.at_level(logging.WARNING, logger="argus_ir.llm.cache"):
        again = CallCache(tmp_path)  # it used to refuse the whole cache: every rerun stopped
    assert (again.get("k1"), again.get("k2"), again.get("k3")) == ("first", "second", None)
    assert "1 damaged line(s) skipped (first: line 3" in caplog.text
    again.put([("k3", "v1", "third")])  # starts a line of its own after the cut one
    third = CallCache(tmp_path)
    assert [third.get(k) for k in ("k1", "k2", "k3")] == ["first", "second", "third"]
    (tmp_path / "calls.jsonl").write_text('{"rows": []}\n')  # a foreign file is still refused
    with pytest.raises(Exception, match="not an argus LLM cache record"):
        CallCache(tmp_path)


def test_sira_cache_is_never_the_corpus(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    corpus = folder / "calls.jsonl"
    corpus.write_text(json.dumps({"_id": "d0", "text": "Lyon is a city."}) + "\n")
    before = corpus.read_bytes()
    args = ["--quiet", "sira", "index", str(corpus), "--out", str(tmp_path / "idx")]
    assert main([*args, "--cache", str(folder), "--llm", "openai:http://127.0.0.1:9/v1"]) == 1
    assert "--cache" in (err := capsys.readouterr().err) and "is an input" in err
    assert corpus.read_bytes() == before


# -- folders argus replaces -------------------------------------------------------------------------


def test_the_model_folder_is_replaced_only_when_argus_assembled_it(tmp_path):
    from argus_ir.encoder.models import assemble_mpnet
    from argus_ir.errors import ArgusInputError

    target = tmp_path / "models"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    with pytest.raises(ArgusInputError, match="not a model folder assembled by argus"):
        assemble_mpnet(target)  # it used to delete the folder before unpacking into its place
    assert (target / "thesis.tex").read_text() == "years of work"


def test_the_ray_partial_folder_is_never_the_input(tmp_path):
    pytest.importorskip("ray")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from argus_ir.errors import ArgusInputError
    from argus_ir.runners.ray_data import augment_files

    corpus = tmp_path / ".out.partial"  # a Parquet corpus in the engine's partial folder's name
    corpus.mkdir()
    pq.write_table(pa.table({"_id": ["d0"], "text": ["Lyon is a city."]}), corpus / "a.parquet")
    before = (corpus / "a.parquet").read_bytes()
    with pytest.raises(ArgusInputError, match="is an input"):  # it was deleted as a stale partial
        augment_files(corpus, tmp_path / "out", None)  # type: ignore[arg-type]
    assert (corpus / "a.parquet").read_bytes() == before
