from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from argus_ir.audit.entities import AuditData
from argus_ir.audit.loaders import (
    RawEdge,
    RawEntity,
    build_audit_data,
    load_user_data,
    read_edges_file,
    read_entities_file,
)
from argus_ir.audit.sample import load_sample
from argus_ir.errors import ArgusInputError

PARIS = "Paris is the capital and largest city of France."
FRANCE = "France is a country in Western Europe with overseas territories."
SEINE = "The Seine is a river in northern France flowing through Paris."
LOIRE = "The Loire is the longest river in France, rising in the Massif Central."


def _records() -> list[dict]:
    return [
        {"id": "Q90", "label": "Paris", "text": PARIS, "description": "capital of France"},
        {"id": "Q142", "label": "France", "paragraph": FRANCE},
        {"id": "Q1471", "label": "Seine", "text": SEINE},
        {"id": "Q1469", "label": "Loire", "text": LOIRE},
    ]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- build_audit_data --------------------------------------------------------------------------


def test_build_basic_graph_and_report() -> None:
    data = build_audit_data(
        _records(), [("Q90", "Q142"), ("Q1471", "Q90"), ("Q142", "Q90")], name="toy"
    )
    assert isinstance(data, AuditData)
    assert data.ids == ["Q90", "Q142", "Q1471", "Q1469"]  # input order
    assert data.graph.n_edges == 2  # the repeated pair counts once
    assert list(data.graph.neighbors(0)) == [1, 2]
    assert data.graph.degree()[3] == 0  # isolated entities stay as candidates
    assert data.report.n_input == 4
    assert data.report.grounded_match == 4
    assert data.report.dropped == ()
    assert data.report.sources == (("toy", 2),)
    assert data.entities[0].description == "capital of France"
    assert data.entities[1].text == FRANCE  # "paragraph" is accepted for the text
    assert data.entities[2].mention == "Seine"


def test_tuple_records_and_where() -> None:
    data = build_audit_data(
        [
            ("a", "Paris", PARIS),
            RawEntity("b", "France", FRANCE, "a country", "f.jsonl:2"),
            ("c", "Nowhere", "A paragraph that never names its subject at all."),
        ],
        [RawEdge("a", "b", "e.csv:1")],
    )
    assert data.entities[1].description == "a country"
    c = data.entities[2]
    assert (c.grounding, c.mention) == ("prepended", "Nowhere")
    assert c.text.startswith("Nowhere: ")
    assert (data.report.grounded_match, data.report.grounded_prepended) == (2, 1)


@pytest.mark.parametrize("text", [None, "", "   \n\t", "\u00a0"])
def test_empty_or_missing_paragraph_is_dropped(text: str | None) -> None:
    rows = _records()
    rows.append({"id": "Q0", "label": "Empty", "text": text, "where": "f.jsonl:5"})
    data = build_audit_data(rows, [])
    assert "Q0" not in data.ids
    (drop,) = data.report.dropped
    assert (drop.id, drop.reason, drop.where) == ("Q0", "empty paragraph", "f.jsonl:5")


def test_record_without_text_key_is_dropped() -> None:
    data = build_audit_data([*_records(), {"id": "Q0", "label": "No text"}], [])
    assert data.report.dropped_by_reason() == {"empty paragraph": 1}


def test_short_paragraph_is_dropped() -> None:
    rows = [*_records(), {"id": "Q7", "label": "Tiny", "text": "Tiny thing."}]
    data = build_audit_data(rows, [])
    assert data.report.dropped_by_reason() == {"paragraph too short": 1}
    kept = build_audit_data(rows, [], min_chars=5)
    assert "Q7" in kept.ids


def test_duplicate_id_keeps_the_first_and_names_both_places() -> None:
    rows = [
        {"id": "Q90", "label": "Paris", "text": PARIS, "where": "a.jsonl:1"},
        {"id": "Q90", "label": "Paris", "text": SEINE, "where": "a.jsonl:7"},
    ]
    data = build_audit_data(rows, [])
    assert data.ids == ["Q90"]
    assert data.entities[0].text == PARIS
    (drop,) = data.report.dropped
    assert drop.reason == "duplicate id"
    assert "a.jsonl:7" in drop.where and "a.jsonl:1" in drop.where


def test_unknown_ids_and_self_loops_are_dropped_edges() -> None:
    edges = [
        ("Q90", "Q142", "e.tsv:1"),
        ("Q90", "Q999", "e.tsv:2"),
        ("Q888", "Q999", "e.tsv:3"),
        ("Q1471", "Q1471", "e.tsv:4"),
    ]
    data = build_audit_data(_records(), edges)
    assert data.graph.n_edges == 1
    by_reason = data.report.dropped_by_reason()
    assert by_reason == {"unknown id": 3, "self-loop": 1}
    unknown = [d for d in data.report.dropped if d.reason == "unknown id"]
    assert [d.id for d in unknown] == ["Q999", "Q888", "Q999"]
    assert unknown[0].where.startswith("e.tsv:2")
    assert "Q90 -- Q999" in str(unknown[0])


def test_edges_to_dropped_entities_count_as_unknown() -> None:
    rows = [*_records(), {"id": "Q0", "label": "Empty", "text": ""}]
    data = build_audit_data(rows, [("Q0", "Q90")])
    assert data.report.dropped_by_reason() == {"empty paragraph": 1, "unknown id": 1}


def test_hub_cap_drops_all_edges_of_hubs_once_per_hub() -> None:
    rows = [
        {"id": f"e{i}", "label": f"Thing{i}", "text": f"Thing{i} is an entity with a paragraph."}
        for i in range(8)
    ]
    edges = [("e0", f"e{i}") for i in range(1, 6)] + [("e6", "e7"), ("e1", "e2")]
    data = build_audit_data(rows, edges, max_degree=3)
    hubs = [d for d in data.report.dropped if d.reason == "hub above degree cap"]
    assert [d.id for d in hubs] == ["e0"]
    assert "degree 5 > 3" in hubs[0].where
    assert "e0" in data.ids  # the hub stays a candidate
    assert data.graph.degree()[0] == 0
    assert data.graph.n_edges == 2
    assert build_audit_data(rows, edges, max_degree=5).graph.n_edges == 7


def test_require_neighbours() -> None:
    data = build_audit_data(
        _records(), [("Q90", "Q142"), ("Q90", "Q1471")], require_neighbours=True
    )
    assert data.ids == ["Q90", "Q142", "Q1471"]
    assert data.report.dropped_by_reason() == {"no neighbours": 1}
    assert data.graph.n == 3
    assert data.graph.n_edges == 2
    assert [data.ids[i] for i in data.graph.neighbors(0)] == ["Q142", "Q1471"]


def test_require_neighbours_with_no_edges_is_an_error() -> None:
    with pytest.raises(ArgusInputError, match="no entity left"):
        build_audit_data(_records(), [], require_neighbours=True)


def test_all_records_dropped_is_an_error() -> None:
    with pytest.raises(ArgusInputError, match="empty paragraph: 2"):
        build_audit_data([("a", "A", ""), ("b", "B", None)], [])


@pytest.mark.parametrize(
    "record",
    [
        {"label": "No id", "text": PARIS},
        {"id": "x", "text": PARIS},
        {"id": "x", "label": "   ", "text": PARIS},
        {"id": "", "label": "Paris", "text": PARIS},
        {"id": "x", "label": "Paris", "text": 42},
        ("only", "two"),
        "a string",
    ],
)
def test_malformed_records_are_errors(record: object) -> None:
    with pytest.raises(ArgusInputError):
        build_audit_data([record], [])  # type: ignore[list-item]


def test_bad_max_degree() -> None:
    with pytest.raises(ArgusInputError, match="max_degree"):
        build_audit_data(_records(), [], max_degree=0)


def test_integer_ids_are_strings() -> None:
    data = build_audit_data([(1, "Paris", PARIS), (2, "France", FRANCE)], [(1, 2)])
    assert data.ids == ["1", "2"]
    assert data.graph.n_edges == 1


# --- reading files ---------------------------------------------------------------------------------


def test_jsonl_round_trip_and_gzip(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "ents.jsonl", _records())
    records = read_entities_file(path)
    assert [r.id for r in records] == ["Q90", "Q142", "Q1471", "Q1469"]
    assert records[0].where == f"{path}:1"
    gz = tmp_path / "ents.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_entities_file(gz) == [
        r._replace(where=r.where.replace(str(path), str(gz))) for r in records
    ]


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(r) for r in _records()[:2]]
    lines.insert(1, "")  # blank lines are skipped but still counted
    lines.append('{"id": "Q1471", "label": "Seine", "text": "unterminated')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ArgusInputError) as err:
        read_entities_file(path)
    msg = str(err.value)
    assert f"{path}:4" in msg
    assert '{"id": "Q1471"' in msg


def test_json_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "list.jsonl"
    path.write_text('["Q90", "Paris"]\n', encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"list\.jsonl:1: expected a JSON object"):
        read_entities_file(path)


def test_missing_required_field_names_file_line_and_field(tmp_path: Path) -> None:
    rows = _records()
    del rows[2]["label"]
    path = _write_jsonl(tmp_path / "ents.jsonl", rows)
    with pytest.raises(ArgusInputError, match=r"ents\.jsonl:3: missing required field 'label'"):
        read_entities_file(path)
    rows = _records()
    del rows[1]["paragraph"]
    path = _write_jsonl(tmp_path / "ents2.jsonl", rows)
    with pytest.raises(ArgusInputError, match=r"ents2\.jsonl:2: .*'paragraph' or 'text'"):
        read_entities_file(path)


def test_custom_field_names(tmp_path: Path) -> None:
    rows = [{"qid": "Q90", "name": "Paris", "lead": PARIS}]
    path = _write_jsonl(tmp_path / "ents.jsonl", rows)
    (rec,) = read_entities_file(path, id_field="qid", label_field="name", text_field="lead")
    assert (rec.id, rec.label, rec.text) == ("Q90", "Paris", PARIS)


def test_csv_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ents.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "label", "text", "description"])
        for r in _records():
            writer.writerow([r["id"], r["label"], r.get("text") or r.get("paragraph"), ""])
        writer.writerow(["Q5", "Multi", "Line one,\nline two of a quoted paragraph.", ""])
    records = read_entities_file(path)
    assert [r.id for r in records] == ["Q90", "Q142", "Q1471", "Q1469", "Q5"]
    assert records[0].where == f"{path}:2"
    assert records[-1].text == "Line one,\nline two of a quoted paragraph."
    assert records[-1].where == f"{path}:6"


def test_csv_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "ents.csv"
    path.write_text("id,name,text\nQ90,Paris,x\n", encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"ents\.csv:1: missing column\(s\) label"):
        read_entities_file(path)


def test_parquet_round_trip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = _records()
    table = pa.table(
        {
            "id": [r["id"] for r in rows],
            "label": [r["label"] for r in rows],
            "paragraph": [r.get("text") or r.get("paragraph") for r in rows],
        }
    )
    ents = tmp_path / "ents.parquet"
    pq.write_table(table, ents)
    edges = tmp_path / "edges.parquet"
    pq.write_table(pa.table({"head": ["Q90", "Q90"], "tail": ["Q142", "Q404"]}), edges)
    data = load_user_data(ents, edges)
    assert data.ids == ["Q90", "Q142", "Q1471", "Q1469"]
    assert data.graph.n_edges == 1
    assert data.report.dropped_by_reason() == {"unknown id": 1}
    assert data.report.dropped[0].where.startswith(f"{edges}:row 2")
    assert data.name == "ents.parquet"


def test_edges_csv_with_and_without_header(tmp_path: Path) -> None:
    with_header = tmp_path / "e.csv"
    with_header.write_text("relation,head,tail\nP1,Q90,Q142\nP2,Q90,Q1471\n", encoding="utf-8")
    assert read_edges_file(with_header) == [
        RawEdge("Q90", "Q142", f"{with_header}:2"),
        RawEdge("Q90", "Q1471", f"{with_header}:3"),
    ]
    bare = tmp_path / "e.tsv"
    bare.write_text("Q90\tQ142\n\nQ1471\tQ1469\n", encoding="utf-8")
    assert [(e.a, e.b, e.where) for e in read_edges_file(bare)] == [
        ("Q90", "Q142", f"{bare}:1"),
        ("Q1471", "Q1469", f"{bare}:3"),
    ]


def test_edges_csv_row_with_one_id(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("Q90,Q142\nQ90\n", encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"e\.csv:2: expected two ids"):
        read_edges_file(path)


def test_edges_jsonl(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "e.jsonl",
        [{"source": "Q90", "target": "Q142", "relation": "P17"}, {"head": "Q1471", "tail": "Q90"}],
    )
    assert read_edges_file(path) == [
        RawEdge("Q90", "Q142", f"{path}:1", "P17"),
        RawEdge("Q1471", "Q90", f"{path}:2", ""),
    ]
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"from": "Q90", "to": "Q142"}])
    with pytest.raises(ArgusInputError, match=r"bad\.jsonl:1: expected keys source/target"):
        read_edges_file(bad)


def test_load_user_data_end_to_end(tmp_path: Path) -> None:
    ents = _write_jsonl(
        tmp_path / "ents.jsonl", [*_records(), {"id": "Q0", "label": "E", "text": ""}]
    )
    edges = tmp_path / "edges.csv"
    edges.write_text("source,target\nQ90,Q142\nQ90,Q0\nQ1469,Q1469\n", encoding="utf-8")
    data = load_user_data(ents, edges, max_degree=10, require_neighbours=True)
    assert data.ids == ["Q90", "Q142"]
    assert data.report.dropped_by_reason() == {
        "empty paragraph": 1,
        "unknown id": 1,
        "self-loop": 1,
        "no neighbours": 2,
    }
    assert data.report.sources == (("edges.csv", 1),)
    assert "edges kept: 1" in data.report.summary()


def test_unsupported_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ArgusInputError, match="no such file"):
        read_entities_file(tmp_path / "absent.jsonl")
    odd = tmp_path / "ents.xml"
    odd.write_text("<x/>", encoding="utf-8")
    with pytest.raises(ArgusInputError, match="unsupported file type"):
        read_entities_file(odd)


def test_nothing_is_written_next_to_the_inputs(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "ents.jsonl", _records())
    load_user_data(path, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ents.jsonl"]


# --- embedded sample and shared data ---------------------------------------------------------------


def test_load_sample_counts() -> None:
    data = load_sample()
    deg = data.graph.degree()
    assert 1000 <= len(data.entities) <= 2000
    assert 300 <= int((deg > 0).sum()) <= 800
    assert data.graph.n_edges > 500
    assert len(set(data.ids)) == len(data.ids)
    assert data.report.dropped == ()
    assert data.report.grounded_match > 0.8 * len(data.entities)
    for e in data.entities:
        assert e.mention.strip()
    assert data.fingerprint() == load_sample().fingerprint()


@pytest.mark.slow
def test_load_shared_union(shared_data: Path) -> None:
    from argus_ir.audit.shared_data import load_shared

    data = load_shared(shared_data)
    deg = data.graph.degree()
    assert len(data.entities) > 10_000
    assert int((deg > 0).sum()) > 1500
    assert int(deg.max()) <= 100
    assert dict(data.report.sources).keys() == {"fb15k237", "trex", "codex"}
    assert all(n > 0 for _, n in data.report.sources)
    ids = data.ids
    # Freebase schema hubs are filtered by relation, not only by the cap: they keep few links.
    for hub in ("Male", "Marriage", "United States dollar"):
        if hub in ids:
            assert deg[ids.index(hub)] < 20, hub
    assert np.median(deg[deg > 0]) >= 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # an unclosed quote used to swallow the rows after it into one cell
        (
            'id,text\na,"hello\nb,world\nc,bye\n',
            r"c\.csv:2: malformed row \(unexpected end of data\)",
        ),
        ('id,text\na,"hello\nb,world\nc,"bye"\n', r"c\.csv:2: malformed row"),
        # a short row used to be read with an empty text
        ("id,text,title\na,hello,t\nb,world\n", r"c\.csv:3: 2 cells but the header has 3 columns"),
    ],
)
def test_csv_quotes_and_short_rows_are_refused_with_their_line(tmp_path, content, message):
    from argus_ir.audit.loaders import iter_documents

    path = tmp_path / "c.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ArgusInputError, match=message):
        list(iter_documents(path))


def test_csv_with_a_quoted_newline_still_reads(tmp_path):
    from argus_ir.audit.loaders import iter_documents

    path = tmp_path / "c.csv"
    path.write_text('id,text\na,"two\nlines"\nb,plain\n', encoding="utf-8")
    assert [(d.id, d.text) for d in iter_documents(path)] == [("a", "two\nlines"), ("b", "plain")]


def test_a_bad_byte_is_reported_on_its_own_line(tmp_path):
    from argus_ir.audit.loaders import iter_documents

    path = tmp_path / "c.jsonl"
    good = b'{"_id": "a", "text": "fine"}\n'
    path.write_bytes(good + b'{"_id": "b", "text": "caf\xe9"}\n' + good.replace(b'"a"', b'"c"'))
    with pytest.raises(ArgusInputError, match=r"c\.jsonl:2: not UTF-8 \(byte b'\\xe9' at column"):
        list(iter_documents(path))
    # a byte-order mark at the start is not an error
    path.write_bytes(b"\xef\xbb\xbf" + good)
    assert [d.id for d in iter_documents(path)] == ["a"]


def test_H9_metadata_nested_too_deep_is_named_with_its_line(tmp_path):
    """Issue 48, H9: metadata nested 100,000 deep ended in a 38-line ``RecursionError``
    traceback; it is one error naming the file and line now."""
    from argus_ir.documents import read_documents

    path = tmp_path / "c.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(
        '{"_id": "a", "text": "ok"}\n{"_id": "b", "text": "x", "metadata": ' + deep + "}\n"
    )
    with pytest.raises(ArgusInputError, match=r"c\.jsonl:2: JSON nested too deep to read"):
        read_documents(path)
