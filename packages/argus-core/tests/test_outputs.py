"""The one rule for every path argus writes (argus_ir.outputs): never an input, never an existing
file or non-empty folder without --overwrite, checked again under the lock before the first write.

The races run two real ``argus`` processes: the second is stopped (SIGSTOP) once it has passed
its up-front checks and begun loading its models, the first runs to the end, then the second goes
on. Exactly one may win, and the output must be the winner's whole output."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argus_ir.cli import main
from argus_ir.errors import ArgusInputError
from argus_ir.outputs import check_output, claim_output

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
TEXTS = [
    "Humphrey Bogart once filmed a scene in Lucknow.",
    "Ada Lovelace met Charles Babbage in London.",
]


def _corpus(path: Path, prefix: str, *, extra: list[dict] | None = None) -> Path:
    rows = [{"_id": f"{prefix}{i}", "text": t} for i, t in enumerate(TEXTS)] + (extra or [])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "argus_ir.cli", "--quiet", *map(str, args)]


def _stopped_after_its_checks(args: list[str]) -> subprocess.Popen[str]:
    """Start ``args`` and stop it once torch is mapped: it has passed its checks and is loading
    its models (argus imports torch only to load them)."""
    proc = subprocess.Popen(
        args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + 300
    while True:
        try:
            if "/torch/" in maps.read_text(errors="replace"):
                break
        except OSError:
            pass
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the second run ended before loading its models: {out} {err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the second run never loaded its models")
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGSTOP)
    return proc


def _race(first: list[str], second: list[str]) -> tuple[int, str, int, str]:
    """Run ``first`` to its end while ``second`` is stopped after its checks, then let
    ``second`` go on; both exit codes and error outputs."""
    late = _stopped_after_its_checks(second)
    try:
        done = subprocess.run(first, env=ENV, capture_output=True, text=True, timeout=600)
    finally:
        os.kill(late.pid, signal.SIGCONT)
    _, late_err = late.communicate(timeout=600)
    return done.returncode, done.stderr, late.returncode, late_err


def _one_winner(codes_and_errors: tuple[int, str, int, str]) -> str:
    """Which run won ("first" or "second"): exactly one exits 0, the other is refused."""
    first_code, first_err, second_code, second_err = codes_and_errors
    assert sorted((first_code, second_code)) == [0, 1], (first_err, second_err)
    loser = first_err if first_code else second_err
    assert "exists; pass --overwrite" in loser or "being written by another argus run" in loser
    return "second" if first_code else "first"


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_a_second_augment_that_passed_its_checks_never_replaces_the_first_output(tmp_path):
    pytest.importorskip("spacy")
    a, b = _corpus(tmp_path / "a.jsonl", "a"), _corpus(tmp_path / "b.jsonl", "b")
    out = tmp_path / "out.jsonl"
    winner = _one_winner(_race(_cli("augment", a, "--out", out), _cli("augment", b, "--out", out)))
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    sources = {r["metadata"]["argus_source_id"] for r in rows}
    assert sources == ({"a0", "a1"} if winner == "first" else {"b0", "b1"})
    stats = json.loads(out.with_name("out.jsonl.stats.json").read_text("utf-8"))
    assert {d["id"] for d in stats["documents"]} == sources  # the stats are the winner's too


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_a_second_diagnose_that_passed_its_checks_never_replaces_the_first_output(tmp_path):
    pytest.importorskip("spacy")
    a, b = _corpus(tmp_path / "a.jsonl", "a"), _corpus(tmp_path / "b.jsonl", "b")
    out = tmp_path / "diagnosis.jsonl"
    winner = _one_winner(
        _race(
            _cli("diagnose", "--corpus", a, "--out", out),
            _cli("diagnose", "--corpus", b, "--out", out),
        )
    )
    ids = {json.loads(line)["id"] for line in out.read_text("utf-8").splitlines()}
    assert ids == ({"a0", "a1"} if winner == "first" else {"b0", "b1"})


@pytest.mark.parametrize("command", ["augment", "diagnose"])
def test_out_through_a_folder_that_does_not_exist_yet_is_still_the_input(
    command, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    corpus = _corpus(tmp_path / "c.jsonl", "d")
    before = corpus.read_bytes()
    where = ["c.jsonl"] if command == "augment" else ["--corpus", "c.jsonl"]
    assert main(["--quiet", command, *where, "--out", "new/../c.jsonl"]) == 1
    assert "is the input corpus" in capsys.readouterr().err
    os.link(corpus, tmp_path / "link.jsonl")  # the same file under another name
    assert main(["--quiet", command, *where, "--out", "link.jsonl", "--overwrite"]) == 1
    assert "is the input corpus" in capsys.readouterr().err
    assert corpus.read_bytes() == before and not (tmp_path / "new").exists()


def test_stats_is_never_the_corpus_the_output_or_an_existing_file(tmp_path, capsys):
    corpus = _corpus(tmp_path / "c.jsonl", "d")
    before = corpus.read_bytes()
    out = tmp_path / "out.jsonl"

    def augment(*extra: str | Path) -> int:
        return main(["--quiet", "augment", str(corpus), *map(str, extra)])

    assert augment("--out", out, "--stats", corpus) == 1
    assert "--stats" in (err := capsys.readouterr().err) and "is the input corpus" in err
    assert augment("--out", out, "--stats", out) == 1
    assert f"--stats {out} is --out" in capsys.readouterr().err
    assert augment("--out", out, "--stats", f"{out}.checkpoint.json") == 1
    assert "is the run's checkpoint" in capsys.readouterr().err
    kept = tmp_path / "stats.json"
    kept.write_text("keep me\n")
    assert augment("--out", out, "--stats", kept) == 1
    assert f"{kept} exists; pass --overwrite" in capsys.readouterr().err
    assert augment("--dry-run", "--stats", kept) == 1  # a dry run's stats too
    assert f"{kept} exists; pass --overwrite" in capsys.readouterr().err
    assert corpus.read_bytes() == before and kept.read_text() == "keep me\n"
    assert not out.exists()


def test_a_metadata_that_is_not_an_object_is_refused_with_its_line(tmp_path, capsys):
    corpus = _corpus(tmp_path / "c.jsonl", "d", extra=[{"_id": "s", "text": "x", "metadata": "a"}])
    assert main(["--quiet", "augment", str(corpus), "--out", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "c.jsonl:3: 'metadata' of document 's' is str, not an object" in err
    assert not list(tmp_path.glob("o.jsonl*"))


def test_an_earlier_view_without_its_lineage_is_refused_before_any_work(tmp_path, capsys):
    from argus_ir.remedy.texts import view_key

    # a view id of the readable form earlier versions wrote
    old_view = {"_id": view_key("d0", "descriptor", "Humphrey Bogart", "x", "s"), "text": "y"}
    corpus = _corpus(tmp_path / "c.jsonl", "d", extra=[old_view])
    assert main(["--quiet", "augment", str(corpus), "--out", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err
    assert f"c.jsonl:3: document id {old_view['_id']!r} is an argus view id" in err
    assert not list(tmp_path.glob("o.jsonl*"))
    # with its lineage kept it is an earlier run's record, passed through as read
    old_view["metadata"] = {"argus_source_id": "d0", "argus_view": "descriptor"}
    _corpus(corpus, "d", extra=[old_view])
    from argus_ir.runners.stream import scan_corpus

    assert scan_corpus(corpus) == 3


def test_a_duplicate_id_late_in_the_corpus_is_refused_before_any_work(tmp_path, capsys):
    rows = [{"_id": f"d{i}", "text": f"Document {i} is about Lucknow."} for i in range(100)]
    rows.append({"_id": "d7", "text": "again"})
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "o.jsonl"
    args = ["--quiet", "augment", str(corpus), "--out", str(out), "--docs-per-batch", "4"]
    assert main(args) == 1
    assert "c.jsonl:101: duplicate document id 'd7' (first at" in capsys.readouterr().err
    assert not list(tmp_path.glob("o.jsonl*"))  # no batch was processed, nothing to resume


def test_a_checkpoint_cut_mid_json_is_named_with_the_way_out(tmp_path, capsys):
    corpus = _corpus(tmp_path / "c.jsonl", "d")
    out = tmp_path / "o.jsonl"
    ckpt = tmp_path / "o.jsonl.checkpoint.json"
    ckpt.write_text('{"version": 1, "settings": {"remedy": "descr')
    assert main(["--quiet", "augment", str(corpus), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{ckpt}: unreadable checkpoint" in err and "--no-resume" in err


def test_only_augment_promises_to_resume(capsys):
    for command, resumes in (("augment", True), ("diagnose", False)):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert ("resume" in text) is resumes, command


# -- the rule itself -----------------------------------------------------------------------------


def test_check_output_refuses_folders_holding_an_input_and_folders_of_another_kind(tmp_path):
    dump = tmp_path / "work" / "dump.xml"
    dump.parent.mkdir()
    dump.write_text("x")
    with pytest.raises(ArgusInputError, match="holds an input"):
        check_output(tmp_path / "work", inputs=[dump], folder=True, overwrite=True)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(ArgusInputError, match="not empty and is not a KB folder"):
        check_output(mine, folder=True, overwrite=True, kind="KB folder", is_kind=lambda p: False)
    with pytest.raises(ArgusInputError, match="exists; pass --overwrite"):
        check_output(mine, folder=True, kind="KB folder", is_kind=lambda p: True)
    assert check_output(mine, folder=True, overwrite=True, is_kind=lambda p: True) == mine
    assert check_output(tmp_path / "empty-to-be", folder=True) == tmp_path / "empty-to-be"


def test_a_claim_is_checked_again_under_the_lock_and_held_once_per_process(tmp_path):
    out = tmp_path / "o.jsonl"
    with claim_output(out) as target:
        assert target == out and (tmp_path / "o.jsonl.lock").exists()
        with claim_output(out):  # the library function the command calls claims it again
            pass
        out.write_text("written by someone else meanwhile")
        with pytest.raises(ArgusInputError, match="exists; pass --overwrite"), claim_output(out):
            pass
    assert not (tmp_path / "o.jsonl.lock").exists()


# -- argus kb build ------------------------------------------------------------------------------


def _abstracts(path: Path) -> Path:
    """The Wikipedia abstracts fixture of the dump tests, copied to ``path``."""
    source = Path(__file__).parent / "data" / "kb-dumps" / "enwiki-abstract-sample.xml"
    path.write_bytes(source.read_bytes())
    return path


def test_kb_build_never_deletes_a_folder_it_did_not_write(tmp_path, monkeypatch, capsys):
    pytest.importorskip("bm25s")
    dump = _abstracts(tmp_path / "abstracts.xml")
    mine = tmp_path / "mydir"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    mode = stat.S_IMODE(mine.stat().st_mode)

    def build(out: str | Path, *extra: str) -> int:
        return main(
            [
                "--quiet",
                "kb",
                "build",
                "--wikipedia-abstracts",
                str(dump),
                "--out",
                str(out),
                *extra,
            ]
        )

    for extra in ((), ("--overwrite",)):
        assert build(mine, *extra) == 1
        assert "is not a KB folder; not replacing it" in capsys.readouterr().err
        assert (mine / "thesis.tex").read_text() == "years of work"
        assert stat.S_IMODE(mine.stat().st_mode) == mode
    monkeypatch.chdir(tmp_path)  # --out . : the working folder, which holds the dump
    assert build(".", "--overwrite") == 1
    assert "holds an input" in capsys.readouterr().err and dump.exists()
    kb = tmp_path / "kb"
    assert build(kb) == 0
    assert stat.S_IMODE(kb.stat().st_mode) == 0o777 & ~_umask()  # not a temporary folder's 0700
    assert build(kb) == 1
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert build(kb, "--overwrite") == 0  # an existing KB folder is replaced when asked


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- what is written -----------------------------------------------------------------------------


def test_a_lone_surrogate_in_an_id_keeps_every_document_and_its_views(tmp_path, capsys):
    pytest.importorskip("spacy")
    corpus = tmp_path / "c.jsonl"
    rows = [{"_id": "a\ud800", "text": TEXTS[0]}, {"_id": "b", "text": TEXTS[1]}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")  # JSON escapes
    out = tmp_path / "o.jsonl"
    assert main(["--quiet", "augment", str(corpus), "--out", str(out)]) == 0, capsys.readouterr()
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    originals = [r for r in written if r["metadata"]["argus_view"] == "original"]
    assert [(r["_id"], r["text"]) for r in originals] == [(r["_id"], r["text"]) for r in rows]
    views = [r for r in written if r["metadata"]["argus_view"] != "original"]
    assert {v["metadata"]["argus_source_id"] for v in views} == {"a\ud800", "b"}
    stats = json.loads(out.with_name("o.jsonl.stats.json").read_text("utf-8"))
    assert [d["id"] for d in stats["documents"]] == ["a\ud800", "b"]
    assert stats["totals"]["failures"] == []


def test_a_full_disk_names_the_file_and_the_rerun_resumes_to_the_same_output(
    shared_data, tmp_path, capsys
):
    pytest.importorskip("spacy")
    import resource
    from itertools import islice

    with open(shared_data / "beir" / "msmarco5k" / "corpus.jsonl", encoding="utf-8") as fh:
        lines = list(islice(fh, 40))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(lines), "utf-8")
    out, reference = tmp_path / "o.jsonl", tmp_path / "reference.jsonl"
    args = ["augment", str(corpus), "--docs-per-batch", "8"]

    def small_disk() -> None:  # `ulimit -f 16`: no file of this process may pass 16 KiB
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, resource.RLIM_INFINITY))

    full = subprocess.run(
        _cli(*args, "--out", out),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=small_disk,
    )
    assert full.returncode == 1, full.stderr
    error = full.stderr.strip().splitlines()[-2:]
    assert any(f"error: {out}." in line and "File too large" in line for line in error), error
    assert not out.exists()
    assert main(["--quiet", *args, "--out", str(out)]) == 0  # the disk has room again
    assert "resuming an interrupted run after" in capsys.readouterr().err
    assert main(["--quiet", *args, "--out", str(reference)]) == 0
    assert out.read_bytes() == reference.read_bytes()


def test_every_folder_command_refuses_a_non_empty_out_without_overwrite(tmp_path, capsys):
    audit, out = tmp_path / "audit", tmp_path / "report"
    audit.mkdir()
    out.mkdir()
    (out / "notes.md").write_text("mine")
    for command in (
        ["report", "--audit", str(audit)],
        ["train-probe", "--audit", str(audit)],
        ["sira", "index", str(tmp_path / "c.jsonl")],
    ):
        assert main(["--quiet", *command, "--out", str(out)]) == 1
        assert f"{out} exists; pass --overwrite" in capsys.readouterr().err, command
    assert main(["--quiet", "report", "--audit", str(audit), "--out", str(audit)]) == 1
    assert "is an input" in capsys.readouterr().err
    assert (out / "notes.md").read_text() == "mine"


def test_no_file_of_the_run_is_the_input(tmp_path, capsys):
    """The checkpoint, partial, lock and --kb-llm cache beside --out are the run's own: none may
    be the corpus (the run would cut, replace or delete it)."""
    for suffix in (".checkpoint.json", ".partial", ".partial.docs", ".lock", ".kb-llm-cache"):
        corpus = _corpus(tmp_path / f"o.jsonl{suffix}", "d")
        before = corpus.read_bytes()
        out = tmp_path / "o.jsonl"
        assert main(["--quiet", "augment", str(corpus), "--out", str(out)]) == 1
        err = capsys.readouterr().err
        if suffix == ".lock":  # refused by the rule itself, before the run's own files
            assert f"locked through {corpus.name}, which is the input corpus" in err
        else:
            assert f"{corpus} is the input corpus" in err, suffix
        assert corpus.read_bytes() == before
        corpus.unlink()


def _small_disk() -> None:  # `ulimit -f 4`: no file of this process may pass 4 KiB
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (4 * 1024, resource.RLIM_INFINITY))


def test_F8_F10_a_full_disk_in_kb_build_and_diagnose_names_what_was_written(tmp_path):
    """Issue 48, F8/F10: ``kb build`` and ``diagnose`` on a full disk said only "[Errno 28] No
    space left on device" / "File too large"; the message names the KB folder being built or
    the output file now, in one line, and nothing half-written is left."""
    pytest.importorskip("spacy")
    passages = tmp_path / "inputs" / "passages.jsonl"
    passages.parent.mkdir()
    passages.write_text("".join(json.dumps({"id": f"p{i}", "title": f"Place {i}", "text":
                                            f"Place {i} is a town. " * 8}) + "\n"
                                for i in range(500)), "utf-8")  # fmt: skip
    kb = tmp_path / "kbs" / "kb"
    build = subprocess.run(
        _cli("kb", "build", "--passages", passages, "--out", kb),
        env=ENV, capture_output=True, text=True, timeout=300, preexec_fn=_small_disk,
    )  # fmt: skip
    assert build.returncode == 1, build.stderr
    line = build.stderr.strip().splitlines()[-1]
    assert line.startswith(f"argus kb: error: {kb}: ") and "File too large" in line, line
    assert sorted(p.name for p in kb.parent.iterdir()) == []  # no KB, no temporary folder
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": TEXTS[i % 2]}) + "\n"
                              for i in range(120)), "utf-8")  # fmt: skip
    out = tmp_path / "d.jsonl"
    diagnose = subprocess.run(
        _cli("diagnose", "--corpus", corpus, "--out", out),
        env=ENV, capture_output=True, text=True, timeout=600, preexec_fn=_small_disk,
    )  # fmt: skip
    assert diagnose.returncode == 1, diagnose.stderr
    line = diagnose.stderr.strip().splitlines()[-1]
    assert line.startswith(f"argus diagnose: error: {out}") and "File too large" in line, line
    assert not out.exists()
