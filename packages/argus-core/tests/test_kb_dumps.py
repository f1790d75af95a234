"""argus_ir.kb.dumps and argus_ir.kb.disk: dumps in their real formats into a disk KB, and back.

The three fixtures under ``tests/data/kb-dumps/`` are small files in each dump's own format
(Wikipedia abstracts XML, Wikidata JSON, DBpedia Turtle), with text written for the tests.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from argus_ir.errors import ArgusInputError
from argus_ir.kb import KnowledgeBase, Passage, ReferenceKB
from argus_ir.kb.disk import DiskKB, build_disk_kb, load_kb_folder
from argus_ir.kb.dumps import (
    merge,
    read_dbpedia,
    read_dump,
    read_wikidata,
    read_wikipedia_abstracts,
)

DATA = Path(__file__).parent / "data" / "kb-dumps"
ABSTRACTS = DATA / "enwiki-abstract-sample.xml"
WIKIDATA = DATA / "wikidata-sample.json"
DBPEDIA = DATA / "dbpedia-abstracts-sample.ttl"


def test_wikipedia_abstracts_are_read_without_prefix_residue_or_stubs():
    records = list(read_wikipedia_abstracts(ABSTRACTS))
    assert [p.title for p, _ in records] == ["Bled", "Douglas Adams"]
    bled, adams = (p for p, _ in records)
    assert bled.id == "enwiki:Bled" and bled.text.startswith("Bled is a small lakeside town")
    assert "radio series & its novels" in adams.text  # the XML entity is decoded


def test_wikidata_entities_give_label_description_aliases_and_sitelink():
    rows = list(read_wikidata(WIKIDATA))
    assert [(p.id, enwiki) for (p, _), enwiki in rows] == [
        ("wikidata:Q42", "Douglas Adams"),  # Q1 has no English label
        ("wikidata:Q999001", ""),
        ("wikidata:Q999002", "Bled Castle"),
    ]
    (adams, aliases), _ = rows[0]
    assert adams.description == "English writer and humorist"
    assert aliases == ["Douglas Noel Adams", "DNA"]
    assert adams.text == (
        "Douglas Adams: English writer and humorist. Also known as Douglas Noel Adams, DNA."
    )


def test_dbpedia_triples_are_read_in_english_with_escapes_and_prefixes():
    records = list(read_dbpedia(DBPEDIA))
    assert [(p.id, p.title) for p, _ in records] == [
        ("dbpedia:Bled_Castle", "Bled Castle"),  # the German literal is skipped
        ("dbpedia:Caf%C3%A9_Vienna", "Café Vienna"),  # a prefixed name, percent-decoded
        ("dbpedia:Lake_Bled", "Lake Bled"),
    ]
    assert (
        records[1][0].text
        == 'Café Vienna is a made-up coffee house used in this test, with a "quoted" name.'
    )


def test_compressed_dumps_read_the_same(tmp_path):
    gz = tmp_path / "a.xml.gz"
    gz.write_bytes(gzip.compress(ABSTRACTS.read_bytes()))
    bz = tmp_path / "w.json.bz2"
    bz.write_bytes(bz2.compress(WIKIDATA.read_bytes()))
    assert list(read_wikipedia_abstracts(gz)) == list(read_wikipedia_abstracts(ABSTRACTS))
    assert list(read_wikidata(bz)) == list(read_wikidata(WIKIDATA))


def test_bad_dump_lines_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[\n{"id":"Q1","labels":{}},\nnot json\n]\n', encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"bad\.json:3: not a Wikidata entity"):
        list(read_wikidata(bad))
    ttl = tmp_path / "bad.ttl"
    ttl.write_text('<http://x/a> <http://x/p> "ok"@en .\nthis is no triple\n', encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"bad\.ttl:2: not a DBpedia triple line"):
        list(read_dbpedia(ttl))
    xml = tmp_path / "bad.xml"
    xml.write_text("<feed><doc><title>x</title>\n<abstract>unclosed\n</feed>", encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"bad\.xml:\d+: not a Wikipedia abstracts dump"):
        list(read_wikipedia_abstracts(xml))
    with pytest.raises(ArgusInputError, match="not found"):
        list(read_dbpedia(tmp_path / "missing.ttl"))
    with pytest.raises(ArgusInputError, match="unknown KB input format"):
        read_dump("freebase", DBPEDIA)


def _many_entities(n: int) -> bytes:
    """A Wikidata dump of ``n`` entities (enough lines that a cut gzip gets past the first)."""
    rows = [
        json.dumps({"id": f"Q{i}", "labels": {"en": {"language": "en", "value": f"Thing {i}"}}})
        for i in range(n)
    ]
    return ("[\n" + ",\n".join(rows) + "\n]\n").encode("utf-8")


@pytest.mark.parametrize(
    ("fmt", "name", "data"),
    [
        ("wikipedia-abstracts", "a.xml.gz", gzip.compress(ABSTRACTS.read_bytes())),
        ("wikidata", "w.json.bz2", bz2.compress(WIKIDATA.read_bytes())),
        ("wikidata", "many.json.gz", gzip.compress(_many_entities(2000))),
        ("dbpedia", "d.ttl.bz2", bz2.compress(DBPEDIA.read_bytes())),
    ],
)
def test_a_dump_cut_short_is_named_with_the_line_reached(tmp_path, capsys, fmt, name, data):
    from argus_ir.cli import main

    dump = tmp_path / name
    dump.write_bytes(data[: len(data) * 2 // 3])  # a download that stopped two thirds in
    out = tmp_path / "kb"
    assert main(["--quiet", "kb", "build", f"--{fmt}", str(dump), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    found = re.search(
        rf"error: {re.escape(str(dump))}:(\d+): cannot read on, the file is cut short", err
    )
    assert found, err
    if name == "many.json.gz":  # the lines before the cut were read: the line reached says so
        assert int(found.group(1)) > 100
    assert not out.exists()
    # a damaged file (its header overwritten) is named the same way
    dump.write_bytes(b"damaged!" + data[8:])
    assert main(["--quiet", "kb", "build", f"--{fmt}", str(dump), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert re.search(
        rf"error: {re.escape(str(dump))}:\d+: cannot read on, the file is damaged", err
    ), err


@pytest.mark.parametrize(
    ("fields", "wrong"),
    [
        ({"labels": "notadict"}, "'labels' is text, not an object"),
        ({"labels": {"en": "Douglas Adams"}}, "'labels.en' is text, not an object"),
        ({"labels": {"en": {"value": 42}}}, "'labels.en.value' is int, not text"),
        ({"descriptions": ["writer"]}, "'descriptions' is a list, not an object"),
        ({"descriptions": {"en": {"value": None}}}, "'descriptions.en.value' is null, not text"),
        ({"aliases": "DNA"}, "'aliases' is text, not an object"),
        ({"aliases": {"en": "DNA"}}, "'aliases.en' is text, not a list"),
        ({"aliases": {"en": ["DNA"]}}, "'aliases.en[0]' is text, not an object"),
        ({"sitelinks": 7}, "'sitelinks' is int, not an object"),
        ({"sitelinks": {"enwiki": "Douglas Adams"}}, "'sitelinks.enwiki' is text, not an object"),
    ],
)
def test_a_wikidata_entity_with_wrong_typed_fields_is_named(tmp_path, fields, wrong):
    good = {"id": "Q42", "labels": {"en": {"value": "Douglas Adams"}}}
    bad = tmp_path / "bad.json"
    rows = [json.dumps(good), json.dumps({**good, "id": "Q7", **fields})]
    bad.write_text("[\n" + ",\n".join(rows) + "\n]\n", encoding="utf-8")
    with pytest.raises(
        ArgusInputError, match=rf"bad\.json:3: Wikidata entity Q7: {re.escape(wrong)}"
    ):
        list(read_wikidata(bad))
    # empty maps written as [] (as the dumps write some) are empty, not wrong
    empty = {**good, "descriptions": [], "aliases": [], "sitelinks": []}
    bad.write_text(json.dumps(empty) + "\n", encoding="utf-8")
    [((passage, aliases), enwiki)] = read_wikidata(bad)
    assert (passage.text, aliases, enwiki) == ("Douglas Adams.", [], "")


def test_merge_gives_text_passages_wikidata_names_and_keeps_the_rest():
    texts = [*read_wikipedia_abstracts(ABSTRACTS), *read_dbpedia(DBPEDIA)]
    merged = list(merge(texts, read_wikidata(WIKIDATA)))
    by_title = {p.title: (p, aliases) for p, aliases in merged}
    adams, aliases = by_title["Douglas Adams"]
    assert adams.id == "enwiki:Douglas Adams" and adams.description == "English writer and humorist"
    assert aliases == ["Douglas Noel Adams", "DNA"]
    castle, aliases = by_title["Bled Castle"]  # DBpedia's text, Wikidata's label as an alias
    assert castle.id == "dbpedia:Bled_Castle" and castle.description == "castle above Lake Bled"
    assert aliases == ["Blejski Grad", "Bled Castle"]
    # the entity without a Wikipedia page is a passage of its own; Q42 is not repeated
    assert by_title["Kranjska Gora Ski Jump"][0].id == "wikidata:Q999001"
    assert [p.id for p, _ in merged].count("wikidata:Q42") == 0
    assert len(merged) == 6


def test_a_disk_kb_answers_as_the_in_memory_kb_does(tmp_path):
    records = list(
        merge(
            [*read_wikipedia_abstracts(ABSTRACTS), *read_dbpedia(DBPEDIA)], read_wikidata(WIKIDATA)
        )
    )
    folder = build_disk_kb(records, tmp_path / "kb", sources={"test": "fixtures"})
    kb = load_kb_folder(folder)
    assert isinstance(kb, DiskKB) and isinstance(kb, KnowledgeBase) and len(kb) == 6
    memory = ReferenceKB.from_passages([p for p, _ in records])
    for form in ("Bled", "Lake Bled", "castle", "Douglas Adams", "coffee house", "nothing"):
        got = [(p, round(s, 4)) for p, s in kb.lookup(form, 2)]
        want = [(p, round(s, 4)) for p, s in memory.lookup(form, 2)]
        assert got == want, form
    # aliases are exact names too, which the in-memory KB does not have
    assert kb.lookup("DNA", 1)[0][0].title == "Douglas Adams"
    assert kb.titled("blejski grad").title == "Bled Castle" and kb.knows("Douglas Noel Adams")
    assert kb.passage("wikidata:Q999001").title == "Kranjska Gora Ski Jump"
    assert kb.passage("enwiki:Nowhere") is None
    card = json.loads((folder / "kb.json").read_text())
    assert card["layout"] == "disk" and card["counts"]["passages"] == 6
    assert card["sources"] == {"test": "fixtures"}


def test_build_counts_duplicates_and_empties_and_refuses_nothing(tmp_path):
    records = [
        (Passage("a", "A", "first"), []),
        (Passage("a", "A again", "second"), []),
        (Passage("b", " ", " "), []),
    ]
    kb = DiskKB(build_disk_kb(records, tmp_path / "kb"))
    assert kb.card["counts"] == {"passages": 1, "aliases": 0, "duplicate_ids": 1, "empty": 1}
    assert kb.passage("a").text == "first"
    with pytest.raises(ArgusInputError, match="no passage"):
        build_disk_kb([], tmp_path / "none")
    assert not (tmp_path / "none").exists()


def test_a_damaged_disk_kb_is_named(tmp_path):
    folder = build_disk_kb(read_wikipedia_abstracts(ABSTRACTS), tmp_path / "kb")
    cut = tmp_path / "cut"
    shutil.copytree(folder, cut)
    data = (cut / "passages.arrow").read_bytes()
    (cut / "passages.arrow").write_bytes(data[: len(data) // 2])
    with pytest.raises(ArgusInputError, match=r"passages\.arrow: cannot read"):
        DiskKB(cut)
    card = json.loads((folder / "kb.json").read_text())
    (folder / "kb.json").write_text(json.dumps({**card, "format_version": 99}))
    with pytest.raises(ArgusInputError, match="format 99"):
        DiskKB(folder)


def test_argus_opens_a_disk_kb_folder(tmp_path):
    from argus_ir.pipeline import Argus

    folder = build_disk_kb(read_wikipedia_abstracts(ABSTRACTS), tmp_path / "kb")
    argus = Argus(kb=str(folder))
    kb = argus._load_kb_source()
    assert isinstance(kb, DiskKB)
    assert argus.settings_card()["kb"] == kb.fingerprint


def test_cli_kb_build_writes_a_folder_argus_opens(tmp_path, capsys):
    from argus_ir.cli import main

    out = tmp_path / "kb"
    argv = ["--quiet", "kb", "build", "--wikipedia-abstracts", str(ABSTRACTS)]
    argv += ["--wikidata", str(WIKIDATA), "--dbpedia", str(DBPEDIA), "--out", str(out)]
    assert main(argv) == 0
    assert "6 passages, 3 aliases" in capsys.readouterr().out
    card = json.loads((out / "kb.json").read_text())
    assert {v["format"] for v in card["sources"].values()} == {
        "wikipedia-abstracts",
        "wikidata",
        "dbpedia",
    }
    assert card["sources"][str(WIKIDATA)]["licence"] == "Wikidata, CC0 1.0"
    assert load_kb_folder(out).lookup("DNA", 1)[0][0].title == "Douglas Adams"
    assert main(["--quiet", "kb", "build", "--out", str(tmp_path / "x")]) == 1
    assert "give at least one input" in capsys.readouterr().err
    limited = tmp_path / "two"
    assert (
        main(
            [
                "--quiet",
                "kb",
                "build",
                "--dbpedia",
                str(DBPEDIA),
                "--out",
                str(limited),
                "--limit",
                "2",
            ]
        )
        == 0
    )
    assert len(load_kb_folder(limited)) == 2


def test_KB11_a_rebuild_removes_what_a_killed_build_left_and_puts_a_cut_swap_back(tmp_path):
    """Issue 48, KB11: 2 of 10 killed ``kb build`` runs left hidden ``.kb.*`` temporary folders
    that the rerun never removed. A build of the folder removes them first (under the folder's
    lock); one cut during the swap (the old KB moved aside, the new not yet in place) has its old
    KB put back first, so the rerun replaces it as it would have."""
    from argus_ir.kb import Passage
    from argus_ir.kb.disk import DiskKB, build_disk_kb

    def records(text: str):
        return [(Passage("b", "Bled", text), ["Lake Bled"])]

    kb = build_disk_kb(records("A town in Slovenia."), tmp_path / "kb")
    (tmp_path / ".kb.zz12ab34").mkdir()  # a build killed while writing
    (tmp_path / ".kb.zz12ab34" / "passages.arrow").write_bytes(b"half")
    (tmp_path / ".kbx.zz12ab34").mkdir()  # another folder's: not touched
    build_disk_kb(records("A lake town in Slovenia."), kb, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kbx.zz12ab34", "kb"]

    aside = tmp_path / ".kb.qq12ab34.old"  # killed right after the old KB was moved aside
    aside.mkdir()
    os.replace(kb, aside / "previous")
    build_disk_kb(records("An alpine lake town."), kb, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kbx.zz12ab34", "kb"]
    assert DiskKB(kb).passage("b").text == "An alpine lake town."


def test_C2_the_build_summary_counts_the_abstracts_it_left_out(tmp_path, capsys):
    """Issue 48, C2: ``kb build``'s summary did not count the 123 short passages it dropped;
    it names how many abstracts were left out as short, untitled or table residue."""
    from argus_ir.cli import main

    kept = len(list(read_wikipedia_abstracts(ABSTRACTS)))
    docs = ABSTRACTS.read_text(encoding="utf-8").count("<doc>")
    argv = ["--quiet", "kb", "build", "--wikipedia-abstracts", str(ABSTRACTS)]
    assert main([*argv, "--out", str(tmp_path / "kb")]) == 0
    out = capsys.readouterr().out
    assert f"{kept} passages" in out and docs - kept == 2
    assert "2 short, untitled or table-residue abstracts skipped" in out
