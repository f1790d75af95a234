"""The docs site's generated pages are current and its navigation covers every page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr  # a changed option means: rerun the script


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    missing = [p for p in pages if f": {p}" not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def _page(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def test_issue_47_docs_say_what_users_of_each_store_must_know():
    """Issue 47's documentation defects (6, 7 and the docs list): each page states the fact a
    user had to read from a store's source."""
    langchain, haystack, llamaindex = (
        _page(p) for p in ("langchain.md", "haystack.md", "llamaindex.md")
    )
    boundaries = _page("adapters.md")
    assert "| PGVector (langchain-postgres), `COSINE` (its default) |" in langchain  # score table
    assert "2·cos − 1" in langchain and "LanceDB" in langchain
    assert "PGVector ids are one namespace per database" in langchain  # defect 7
    assert "deletes by id only" in langchain  # no delete by metadata filter on PGVector
    # issue 48, A3: index() after a lost collection re-added only the documents it did not list
    assert "Clear the record manager together with the store" in langchain
    assert "pgvector_originals" in langchain and "lancedb_originals" in langchain
    assert "documents without scores" in langchain
    assert "`l2_distance`" in haystack and "most others give a" not in haystack
    assert "`recreate_table: true`" in haystack
    assert "`DUPLICATES_ONLY`" in llamaindex and "`UPSERTS_AND_DELETE`" in llamaindex  # defect 6
    for page in (langchain, haystack, llamaindex):
        assert "trust_lineage=True" in page and "(adapters.md)" in page
    assert "Lineage is argus's to write" in boundaries
