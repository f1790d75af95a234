"""The ``argus`` command: help a newcomer can follow, the real audit → probe → report path on a user
corpus, and bad input that stops with a message naming the place and leaves nothing behind."""

from __future__ import annotations

import gzip
import json
import os
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from argus_ir.cli import main

COMMANDS = (
    "demo", "audit", "train-probe", "report", "diagnose", "augment", "evaluate", "sira", "bias"
)  # fmt: skip


def _sample_records() -> tuple[list[dict], list[dict]]:
    data = resources.files("argus_ir") / "data"
    with gzip.open(data / "sample_entities.jsonl.gz", "rt", encoding="utf-8") as fh:
        entities = [json.loads(line) for line in fh]
    with gzip.open(data / "sample_edges.jsonl.gz", "rt", encoding="utf-8") as fh:
        edges = [json.loads(line) for line in fh]
    return entities, edges


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    """A user corpus cut from the embedded sample: ~150 linked entities, edges as a CSV."""
    entities, edges = _sample_records()
    keep = {e["source"] for e in edges[:160]} | {e["target"] for e in edges[:160]}
    folder = tmp_path_factory.mktemp("corpus")
    ents = _write_jsonl(
        folder / "entities.jsonl",
        [
            {"id": e["id"], "label": e["label"], "paragraph": e["text"]}
            for e in entities
            if e["id"] in keep
        ],
    )
    rows = ["source,target"] + [f'"{e["source"]}","{e["target"]}"' for e in edges[:160]]
    (folder / "edges.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return ents, folder / "edges.csv"


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for command in COMMANDS:
        assert command in text
    assert "argus demo" in text


@pytest.mark.parametrize(
    "command", [*[[c] for c in COMMANDS if c != "sira"], ["sira", "index"], ["sira", "evaluate"]]
)
def test_each_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    assert "--out" in capsys.readouterr().out


def test_sira_help_lists_its_steps(capsys):
    with pytest.raises(SystemExit):
        main(["sira", "--help"])
    text = capsys.readouterr().out
    assert all(step in text for step in ("index", "search", "evaluate"))


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_audit_train_probe_and_report_on_a_user_corpus(corpus, tmp_path, capsys):
    ents, edges = corpus
    audit_dir, probe_dir, report_dir = tmp_path / "audit", tmp_path / "probe", tmp_path / "report"
    base = ["--quiet"]
    assert (
        main(
            [
                *base,
                "audit",
                "--data",
                str(ents),
                "--edges",
                str(edges),
                "--k",
                "5,10",
                "--n-neutrals",
                "60",
                "--out",
                str(audit_dir),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "entities read:" in err
    table = pq.read_table(audit_dir / "entities.parquet").to_pydict()
    assert {"rps_5", "rps_10", "expected_rps_5", "expected_rps_10"} <= set(table)
    rps = np.asarray(table["rps_10"])
    assert rps.size > 50 and ((rps >= 0) & (rps <= 1)).all()
    assert (np.asarray(table["rps_10"]) >= np.asarray(table["rps_5"])).all()

    args = ["train-probe", "--audit", str(audit_dir), "--k", "10", "--label", "expected"]
    args += ["--families", "ridge", "--budget", "tiny", "--out", str(probe_dir)]
    assert main([*base, *args]) == 0
    card = json.loads((probe_dir / "card.json").read_text())
    assert card["k"] == 10 and card["n_neutrals"] == 60 and card["label_kind"] == "expected"
    assert card["retriever_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "best probe: ridge" in capsys.readouterr().out

    assert (
        main(
            [
                "report",
                "--audit",
                str(audit_dir),
                "--probe",
                str(probe_dir),
                "--out",
                str(report_dir),
            ]
        )
        == 0
    )
    text = (report_dir / "report.md").read_text()
    assert "Ridge (selected)" in text and "All Zero" in text
    for png in ("rps_histogram", "fraction_vs_n", "fraction_vs_k", "lda_terciles", "calibration"):
        assert (report_dir / f"{png}.png").stat().st_size > 1000


def test_probe_from_other_data_is_refused_by_report(corpus, tmp_path, capsys):
    ents, edges = corpus
    common = ["--quiet", "audit", "--edges", str(edges), "--k", "10", "--n-neutrals", "40"]
    assert main([*common, "--data", str(ents), "--out", str(tmp_path / "a")]) == 0
    # the same corpus less its first ten entities is other data
    rows = [json.loads(line) for line in ents.read_text().splitlines()][10:]
    other = _write_jsonl(tmp_path / "other.jsonl", rows)
    assert main([*common, "--data", str(other), "--out", str(tmp_path / "b")]) == 0
    probe_args = ["--families", "ridge", "--budget", "tiny", "--label", "expected"]
    assert (
        main(
            [
                "--quiet",
                "train-probe",
                "--audit",
                str(tmp_path / "a"),
                *probe_args,
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    code = main(
        [
            "report",
            "--audit",
            str(tmp_path / "b"),
            "--probe",
            str(tmp_path / "p"),
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert code == 1
    assert "was trained on data" in capsys.readouterr().err


def _bad_corpus(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "ents.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _ok(i: int) -> str:
    return json.dumps(
        {
            "id": f"Q{i}",
            "label": f"Thing {i}",
            "paragraph": f"Thing {i} is a thing of some renown in its home town.",
        }
    )


def test_malformed_kb_line_names_file_and_line_and_writes_nothing(tmp_path, capsys):
    ents = _bad_corpus(tmp_path, [_ok(1), _ok(2), '{"id": "Q3", "label": '])
    edges = tmp_path / "edges.csv"
    edges.write_text("Q1,Q2\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["audit", "--data", str(ents), "--edges", str(edges), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "ents.jsonl:3" in err and "Traceback" not in err
    assert not out.exists()


def test_dropped_records_are_named_in_the_audit_report(tmp_path, capsys):
    lines = [_ok(i) for i in range(1, 40)]
    lines.append(json.dumps({"id": "Q5", "label": "Again", "paragraph": "Again is a duplicate."}))
    lines.append(json.dumps({"id": "Q77", "label": "Empty", "paragraph": ""}))
    ents = _bad_corpus(tmp_path, lines)
    edges = tmp_path / "edges.csv"
    edges.write_text(
        "".join(f"Q{i},Q{i + 1}\n" for i in range(1, 38)) + "Q1,Q404\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    args = ["--quiet", "audit", "--data", str(ents), "--edges", str(edges), "--k", "5"]
    code = main([*args, "--n-neutrals", "20", "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    assert "dropped (duplicate id): 1, e.g. 'Q5' (" in err and "ents.jsonl:40" in err
    assert "dropped (empty paragraph): 1, e.g. 'Q77'" in err
    assert "'Q404'" in err  # the edge to an unknown id
    # an entity without neighbours stays a candidate (a possible neutral) but is not a target
    ids = pq.read_table(out / "entities.parquet").column("id").to_pylist()
    assert "Q39" not in ids and "Q38" in ids and "Q77" not in ids


def test_entities_without_any_neighbour_stop_the_audit(tmp_path, capsys):
    ents = _bad_corpus(tmp_path, [_ok(i) for i in range(1, 5)])
    edges = tmp_path / "edges.csv"
    edges.write_text("Q1,Q99\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["audit", "--data", str(ents), "--edges", str(edges), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "no entity has a related entity, nothing to audit" in err
    assert "dropped (unknown id): 1, e.g. 'Q99'" in err and "edges.csv:1" in err
    assert not out.exists()


def test_train_probe_on_a_k_that_was_not_audited(corpus, tmp_path, capsys):
    ents, edges = corpus
    audit = tmp_path / "audit"
    args = ["--quiet", "audit", "--data", str(ents), "--edges", str(edges), "--k", "5"]
    assert main([*args, "--n-neutrals", "30", "--out", str(audit)]) == 0
    capsys.readouterr()
    assert (
        main(["train-probe", "--audit", str(audit), "--k", "10", "--out", str(tmp_path / "p")]) == 1
    )
    assert "this audit has k in [5], not 10" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_missing_audit_folder_is_a_clear_error(tmp_path, capsys):
    assert (
        main(["train-probe", "--audit", str(tmp_path / "nope"), "--out", str(tmp_path / "p")]) == 1
    )
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err


def test_diagnose_lists_documents_with_blind_spots(tmp_path, capsys):
    pytest.importorskip("spacy")
    corpus = _write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            {"_id": "d1", "title": "", "text": "Humphrey Bogart once filmed a scene in Lucknow."},
            {"_id": "d2", "title": "", "text": "Rain fell all day."},
            {"_id": "d3", "title": "", "text": None},
        ],
    )
    out = tmp_path / "diag.jsonl"
    assert main(["--quiet", "diagnose", "--corpus", str(corpus), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 of 3 documents hold entities below tau = 0.3" in text
    assert "d1: Humphrey Bogart (0." in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["d1", "d2", "d3"]
    assert rows[0]["flagged"] == ["Humphrey Bogart"]
    assert {e["surface"] for e in rows[0]["entities"]} == {"Humphrey Bogart", "Lucknow"}
    assert rows[2] == {"id": "d3", "min_rps": 1.0, "flagged": [], "entities": []}


def test_diagnose_refuses_duplicate_document_ids(tmp_path, capsys):
    corpus = _write_jsonl(
        tmp_path / "corpus.jsonl", [{"_id": "a", "text": "x"}, {"_id": "a", "text": "y"}]
    )
    out = tmp_path / "diag.jsonl"
    assert main(["diagnose", "--corpus", str(corpus), "--out", str(out)]) == 1
    assert "corpus.jsonl:2: duplicate document id 'a' (first at" in capsys.readouterr().err
    assert not out.exists()


AUGMENT_CORPUS = [
    {
        "_id": "d1",
        "title": "Film history",
        "text": "Humphrey Bogart once filmed a scene in Lucknow.",
    },
    {"_id": "d2", "title": "", "text": "Rain fell all day."},
    {"_id": "d3", "title": "", "text": None},
]


def test_augment_writes_originals_views_and_stats(tmp_path, capsys):
    pytest.importorskip("spacy")
    beir = tmp_path / "beir"
    beir.mkdir()
    _write_jsonl(beir / "corpus.jsonl", AUGMENT_CORPUS)  # a BEIR folder
    out = tmp_path / "augmented.jsonl"
    args = ["--quiet", "augment", str(beir), "--out", str(out), "--remedy", "expansion"]
    # the paper's expansion: two passages for the entity, the second a BM25 neighbour
    assert main([*args, "--kb-match", "bm25"]) == 0
    printed = capsys.readouterr().out
    assert (
        "3 documents, 1 flagged entities; added 2 expansion views (index growth 1.667x)" in printed
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["_id"] for r in rows if r["metadata"]["argus_view"] == "original"] == [
        "d1",
        "d2",
        "d3",
    ]
    assert rows[0] == {
        **AUGMENT_CORPUS[0],
        "metadata": {"argus_source_id": "d1", "argus_view": "original"},
    }
    # a null text is diagnosed as "" and written back as read
    assert rows[-1] == {
        **AUGMENT_CORPUS[2],
        "metadata": {"argus_source_id": "d3", "argus_view": "original"},
    }
    views = [r for r in rows if r["metadata"]["argus_view"] == "expansion"]
    assert len(views) == 2 and [r["_id"] for r in rows[:3]] == ["d1"] + [v["_id"] for v in views]
    for view in views:
        meta = view["metadata"]
        assert meta["argus_source_id"] == "d1" and meta["argus_entity"] == "Humphrey Bogart"
        assert meta["argus_kb_id"] and 0 <= meta["argus_rps"] < 0.3
        assert view["text"].startswith("Film history\nHumphrey Bogart once filmed")
    stats = json.loads((tmp_path / "augmented.jsonl.stats.json").read_text())
    assert stats["totals"]["views"] == 2 and stats["totals"]["index_growth"] == pytest.approx(5 / 3)
    assert stats["documents"][0]["flagged"][0]["surface"] == "Humphrey Bogart"
    assert [d["views"] for d in stats["documents"]] == [2, 0, 0]
    from argus_ir.encoder.base import native_bf16

    # the default precision is recorded as what ran, never as "auto"
    assert stats["settings"]["precision"] == ("bf16" if native_bf16("cpu") else "fp32")
    # same input and settings: the same bytes
    again = tmp_path / "again.jsonl"
    args = ["--quiet", "augment", str(beir / "corpus.jsonl"), "--out", str(again)]
    assert main([*args, "--remedy", "expansion", "--kb-match", "bm25"]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_augment_dry_run_projects_without_writing(tmp_path, capsys):
    pytest.importorskip("spacy")
    corpus = _write_jsonl(tmp_path / "c.jsonl", AUGMENT_CORPUS)
    stats_path = tmp_path / "plan.json"
    args = ["--quiet", "augment", str(corpus), "--dry-run", "--stats", str(stats_path)]
    assert main([*args, "--remedy", "synthesis"]) == 0
    printed = capsys.readouterr().out
    assert "would add 1 synthesis views (index growth 1.333x), 1 LLM calls" in printed
    plan = json.loads(stats_path.read_text())
    assert plan["dry_run"] is True and plan["totals"]["llm_calls"] == 1
    assert not list(tmp_path.glob("*.jsonl.stats.json"))


def test_augment_bad_input(tmp_path, capsys):
    assert main(["augment", str(tmp_path / "missing.jsonl"), "--out", "x.jsonl"]) == 1
    assert "missing.jsonl" in capsys.readouterr().err
    assert main(["augment", str(tmp_path), "--out", "x.jsonl"]) == 1
    assert "without corpus.jsonl (not a BEIR dataset)" in capsys.readouterr().err
    corpus = _write_jsonl(tmp_path / "c.jsonl", AUGMENT_CORPUS)
    assert main(["augment", str(corpus)]) == 1
    assert "--out is required" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "text": 3}\n')
    assert main(["augment", str(bad), "--out", str(tmp_path / "o.jsonl")]) == 1
    assert "bad.jsonl:2: 'text' of document 'b' is int" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_augment_and_diagnose_never_overwrite_their_input_or_an_output(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    _write_jsonl(corpus, AUGMENT_CORPUS)
    before = corpus.read_bytes()

    def run(command, source, out, *extra):
        where = [str(source)] if command == "augment" else ["--corpus", str(source)]
        return main(["--quiet", command, *where, "--out", str(out), *extra])

    for command in ("augment", "diagnose"):
        # the output is the input: refused before any model loads
        assert run(command, corpus, corpus) != 0
        assert "is the input corpus" in capsys.readouterr().err
        assert corpus.read_bytes() == before
        # an existing output is kept unless --overwrite
        out = tmp_path / f"{command}.jsonl"
        out.write_text("keep me\n")
        assert run(command, corpus, out) != 0
        assert "exists; pass --overwrite" in capsys.readouterr().err
        assert out.read_text() == "keep me\n"
        # a folder as --out: refused up front, nothing left behind
        folder = tmp_path / f"{command}-folder"
        folder.mkdir()
        assert run(command, corpus, folder) != 0
        assert "is a folder" in capsys.readouterr().err
        assert list(folder.iterdir()) == [] and not list(tmp_path.glob("*.partial"))
    # a BEIR folder's corpus file counts as the input too
    beir = tmp_path / "beir"
    beir.mkdir()
    _write_jsonl(beir / "corpus.jsonl", AUGMENT_CORPUS)
    assert run("augment", beir, beir / "corpus.jsonl") != 0
    assert "is the input corpus" in capsys.readouterr().err
    pytest.importorskip("spacy")
    out = tmp_path / "augment.jsonl"
    assert run("augment", corpus, out, "--overwrite") == 0
    assert out.read_text() != "keep me\n"


def test_the_summary_names_descriptor_fallbacks_of_a_synthesis_run(tmp_path, capsys):
    pytest.importorskip("spacy")
    corpus = tmp_path / "c.jsonl"
    _write_jsonl(corpus, AUGMENT_CORPUS)
    out = tmp_path / "out.jsonl"
    dead = "openai:http://127.0.0.1:9/v1@nothing"  # nothing listens: every call fails
    args = ["--quiet", "augment", str(corpus), "--out", str(out), "--remedy", "synthesis"]
    assert main([*args, "--llm", dead]) == 0
    printed = capsys.readouterr().out
    assert "added 1 views (0 synthesis, 1 descriptor fallbacks)" in printed
    assert "synthesis views" not in printed
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    (view,) = [r for r in rows if r["metadata"]["argus_view"] != "original"]
    assert view["metadata"]["argus_view"] == "descriptor" and view["metadata"]["argus_fallback"]


def test_llm_timeout_and_retries_reach_the_backend(tmp_path, capsys):
    import http.server
    import threading

    pytest.importorskip("spacy")
    calls: list[str] = []

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            calls.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"openai:http://127.0.0.1:{server.server_address[1]}/v1@m"
        corpus = tmp_path / "c.jsonl"
        _write_jsonl(corpus, AUGMENT_CORPUS)
        base = ["--quiet", "augment", str(corpus), "--remedy", "synthesis", "--llm", url]
        out = tmp_path / "zero.jsonl"
        assert main([*base, "--out", str(out), "--llm-retries", "0"]) == 0
        zero = len(calls)  # one flagged document: a first try and the remedy's second try
        calls.clear()
        out = tmp_path / "two.jsonl"
        assert main([*base, "--out", str(out), "--llm-retries", "2", "--llm-timeout", "5"]) == 0
        assert zero == 2 and len(calls) == 3 * zero  # each try now retried twice
    finally:
        server.shutdown()
    assert (
        main(
            [
                "--quiet",
                "augment",
                str(corpus),
                "--out",
                str(tmp_path / "x.jsonl"),
                "--llm-retries",
                "1",
            ]
        )
        != 0
    )
    assert "apply to an openai: backend" in capsys.readouterr().err
    # --llm-cool-down reaches the backend too: it refuses a negative one, naming the option
    args = [*base, "--out", str(tmp_path / "y.jsonl"), "--llm-cool-down"]
    assert main([*args, "-1"]) != 0
    err = capsys.readouterr().err
    assert "--llm-cool-down" in err and "cool_down >= 0" in err and "-1.0)" in err
    no_server = ["--quiet", "augment", str(corpus), "--out", str(tmp_path / "z.jsonl")]
    assert main([*no_server, "--llm-cool-down", "5"]) != 0
    assert "apply to an openai: backend" in capsys.readouterr().err


def test_an_os_error_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys):
    pytest.importorskip("spacy")
    corpus = tmp_path / "c.jsonl"
    _write_jsonl(corpus, AUGMENT_CORPUS)
    out = "/sys/argus-test-out.jsonl"  # sysfs is read-only, even for root
    assert main(["--quiet", "augment", str(corpus), "--out", out]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"argus augment: error: {out}.lock: Permission denied"
    assert "Traceback" not in err
    with pytest.raises(PermissionError):
        main(["--quiet", "--debug", "augment", str(corpus), "--out", out])


def test_augment_loads_the_kb_before_diagnosing_any_document(tmp_path, capsys):
    """A KB folder whose passages file is cut is named before any document is diagnosed (the
    corpus itself is read once before any model loads: a broken line there is named first)."""
    from argus_ir.kb import Passage, ReferenceKB

    kb = tmp_path / "kb"
    ReferenceKB.from_passages([Passage("b", "Bled", "A town in Slovenia.", "town")]).save(kb)
    (kb / "passages.jsonl").write_text('{"id": "b", "tit', "utf-8")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "Bled is a town."}\n', "utf-8")
    out = tmp_path / "out" / "out.jsonl"
    assert main(["augment", str(corpus), "--out", str(out), "--kb", str(kb)]) == 1
    err = capsys.readouterr().err
    assert "passages.jsonl:1" in err
    assert not list(out.parent.glob("out.jsonl*"))  # nothing diagnosed, nothing written


def _broken_beir(root: Path) -> Path:
    """A BEIR folder whose corpus breaks on line 2: reading it at all would say so."""
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "a", "text": "Bled."}\n{"_id": "b", "te\n')
    (root / "queries.jsonl").write_text('{"_id": "q", "text": "a town in Slovenia"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t1\n")
    return root


def test_evaluate_checks_extras_and_kbs_before_reading_any_data(tmp_path, capsys, monkeypatch):
    beir = _broken_beir(tmp_path / "beir")
    out = tmp_path / "out"
    missing = str(tmp_path / "no-such-kb.jsonl")
    args = ["evaluate", str(beir), "--out", str(out), "--variant", f"descriptor kb={missing}"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "no-such-kb.jsonl" in err and "corpus.jsonl:2" not in err
    monkeypatch.setitem(sys.modules, "ir_measures", None)
    assert main(["evaluate", str(beir), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "argus-ir[eval]" in err and "corpus.jsonl:2" not in err


# -- renamed flags: the old spelling works for one more release, hidden, with a note -----------


class _Stop(Exception):
    pass


def _recording(monkeypatch, target: str) -> list:
    """Patch ``target`` (``module.attr``) to record its first argument and stop the command."""
    from argus_ir.errors import ArgusInputError

    seen: list = []

    def fake(first, *args, **kwargs):
        seen.append(first)
        raise ArgusInputError("stopped by the test")

    monkeypatch.setattr(target, fake)
    return seen


@pytest.mark.parametrize("flag", ["--retriever", "--model"])
def test_retriever_flag_and_its_old_name_model(flag, tmp_path, monkeypatch, capsys):
    seen = _recording(monkeypatch, "argus_ir.encoder.load_encoder")
    args = ["audit", "--data", "sample", "--out", str(tmp_path / "a"), flag, "mpnet"]
    assert main(args) == 1
    assert seen == ["mpnet"]
    err = capsys.readouterr().err
    note = "--model is deprecated and will be removed in the next release; use --retriever"
    assert (note in err) == (flag == "--model")
    assert "argus audit: error: stopped by the test" in err


def test_the_repeatable_retriever_flag_of_bias_keeps_its_old_name(tmp_path, monkeypatch, capsys):
    got: list = []

    def fake(data, retrievers, **kwargs):
        got.append(list(retrievers))
        raise _Stop

    monkeypatch.setattr("argus_ir.bias.audit_biases", fake)
    base = ["bias", str(tmp_path / "dev.json"), "--out", str(tmp_path / "b")]
    with pytest.raises(_Stop):
        main([*base, "--retriever", "minilm", "--model", "mpnet", "--model", "x/y"])
    err = capsys.readouterr().err
    assert err.count("--model is deprecated") == 1 and "use --retriever" in err
    for extra in (["--retriever", "mpnet"], []):
        with pytest.raises(_Stop):
            main([*base, *extra])
        assert "deprecated" not in capsys.readouterr().err
    assert got == [["minilm", "mpnet", "x/y"], ["mpnet"], ["minilm"]]


@pytest.mark.parametrize("flag", ["--df-share", "--tau"])
def test_sira_df_share_and_its_old_name_tau(flag, tmp_path, capsys):
    from argus_ir.sira import SiraIndex

    corpus = _write_jsonl(
        tmp_path / "c.jsonl",
        [{"_id": f"d{i}", "text": f"document {i} about statins and plaque"} for i in range(4)],
    )
    idx = tmp_path / "idx"
    args = ["-q", "sira", "index", str(corpus), "--out", str(idx), "--no-llm", flag, "0.5"]
    assert main(args) == 0
    assert SiraIndex.load(idx).tau == 0.5
    err = capsys.readouterr().err
    note = "argus sira index: --tau is deprecated and will be removed in the next release; "
    note += "use --df-share"
    assert (note in err) == (flag == "--tau")


def test_old_flag_names_are_hidden_from_help(capsys):
    for command in (["audit"], ["augment"], ["diagnose"], ["evaluate"], ["demo"], ["bias"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        assert "--retriever" in text and "--model" not in text, command
    for step in ("index", "evaluate"):
        with pytest.raises(SystemExit):
            main(["sira", step, "--help"])
        text = capsys.readouterr().out
        assert "--df-share" in text and "--tau" not in text, step


def test_max_chars_reaches_argus_from_augment_and_evaluate():
    """--max-chars is parsed by both commands that build an Argus, and reaches its settings."""
    from argus_ir.cli.common import argus_settings
    from argus_ir.cli.main import build_parser
    from argus_ir.diagnose import DEFAULT_MAX_CHARS

    parser = build_parser()
    for argv in (["augment", "c.jsonl", "--out", "o.jsonl"], ["evaluate", "d", "--out", "o"]):
        assert argus_settings(parser.parse_args(argv))["max_chars"] == DEFAULT_MAX_CHARS
        limited = parser.parse_args([*argv, "--max-chars", "5000"])
        assert argus_settings(limited)["max_chars"] == 5000
    assert (
        argus_settings(parser.parse_args(["augment", "c", "--max-chars", "off"]))["max_chars"]
        is None
    )


def test_quiet_and_the_other_global_flags_work_after_the_command_too():
    from argus_ir.cli.main import build_parser

    parser = build_parser()
    for argv in (
        ["-q", "augment", "c.jsonl", "--out", "o"],
        ["augment", "c.jsonl", "--out", "o", "-q"],
    ):
        assert parser.parse_args(argv).quiet is True
    assert parser.parse_args(["augment", "c.jsonl", "--out", "o"]).quiet is False
    args = parser.parse_args(["--debug", "augment", "c.jsonl", "--out", "o", "--verbose"])
    assert (args.debug, args.verbose, args.quiet) == (True, True, False)


def test_a_quiet_augment_prints_no_bar_at_all(tmp_path):
    """In its own process: model loading bars are switched off through the environment."""
    import subprocess

    corpus = _write_jsonl(
        tmp_path / "c.jsonl",
        [{"_id": "1", "text": "Humphrey Bogart once filmed a scene in Lucknow."}],
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "argus_ir.cli",
            "augment",
            str(corpus),
            "--out",
            str(tmp_path / "o.jsonl"),
            "-q",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "Loading weights" not in run.stderr and "%|" not in run.stderr, run.stderr
    assert "1 documents" in run.stdout


def test_C1_global_options_follow_every_step():
    """Issue 48, C1: ``argus kb build -q`` was rejected while ``argus augment ... -q`` worked;
    the global options follow every step of a command now."""
    from argus_ir.cli.main import build_parser

    parser = build_parser()
    for argv in (
        ["kb", "build", "--out", "kb", "-q"],
        ["sira", "index", "c.jsonl", "--out", "o", "-q", "--debug"],
        ["augment", "c.jsonl", "--out", "o.jsonl", "-q"],
    ):
        args = parser.parse_args(argv)
        assert args.quiet is True, argv
    assert parser.parse_args(["-q", "kb", "build", "--out", "kb"]).quiet is True
    assert parser.parse_args(["kb", "build", "--out", "kb"]).quiet is False


def test_F3b_stats_in_a_read_only_folder_is_refused_before_any_model_loads(
    tmp_path, capsys, monkeypatch
):
    """Issue 48, F3b: ``--stats`` in a folder that takes no file was refused only after the
    33 s model load (it is written last); it is refused with the other path checks now."""
    from argus_ir.pipeline import Argus

    def no_load(self, *args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(Argus, "load", no_load)
    monkeypatch.setattr(Argus, "_get", no_load)
    corpus = tmp_path / "c.jsonl"
    _write_jsonl(corpus, AUGMENT_CORPUS)
    stats = "/sys/argus-test-stats.json"  # sysfs takes no new file, even from root
    argv = ["-q", "augment", str(corpus), "--out", str(tmp_path / "o.jsonl"), "--stats", stats]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"argus augment: error: --stats {stats}: cannot write in /sys (Permission denied)"
    assert not (tmp_path / "o.jsonl").exists()


def test_every_command_that_calls_an_llm_takes_the_call_options():
    """Issue 48: the same --llm-timeout and --llm-retries on every command that calls an LLM
    (augment, evaluate, every sira step, coverage), reaching an openai: backend."""
    from argus_ir.cli.common import llm_arg
    from argus_ir.cli.main import build_parser
    from argus_ir.llm import OpenAICompatibleLLM

    parser = build_parser()
    llm = ["--llm", "openai:http://127.0.0.1:9/v1@m", "--llm-timeout", "7", "--llm-retries", "1"]
    for argv in (
        ["augment", "c.jsonl", "--out", "o.jsonl"],
        ["evaluate", "d", "--out", "o"],
        ["sira", "index", "c.jsonl", "--out", "o"],
        ["sira", "search", "idx", "q"],
        ["sira", "evaluate", "d", "--out", "o"],
        ["coverage", "d", "--out", "o"],
    ):
        backend = llm_arg(parser.parse_args([*argv, *llm]))
        assert isinstance(backend, OpenAICompatibleLLM), argv
        assert (backend.timeout, backend.max_retries) == (7.0, 1), argv
