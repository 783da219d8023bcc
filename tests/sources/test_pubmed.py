"""PubMed Central (JATS/NLM) and MEDLINE readers on the real samples, corrupt inputs and safety."""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from core.document import Document, Drop
from sources.formats import medline
from sources.formats.pubmed_jats import parse_article, tex_formula
from sources.pubmed import CentralSettings, article_record, iter_central
from sources.samples import pubmed as pubmed_sample

TAG = re.compile(r"</?[A-Za-z][\w:.-]*(\s[^<>]*)?/?>")
TITLES = {
    "PMC6398430.nxml": "Counting crows: population structure and group size variation in an urban population of crows",
    "pone.0000217.nxml": "Quantifying Organismal Complexity using a Population Genetic Approach",
    "ehp-116-1694.nxml": "Dietary Exposure to 2,2′,4,4′-Tetrabromodiphenyl Ether (PBDE-47) Alters Thyroid Status and "
                         "Thyroid Hormone–Regulated Gene Transcription in the Pituitary and Brain",
    "1471-2180-11-174.nxml": "Factors influencing lysis time stochasticity in bacteriophage λ",
}


def _records(path: Path, bounded: bool = False, **kwargs: Any) -> list[Document | Drop]:
    return list(iter_central(path, CentralSettings(**kwargs), bounded=bounded))


def _doc(path: Path, **kwargs: Any) -> Document:
    (record,) = _records(path, **kwargs)
    assert isinstance(record, Document), record
    return record


# -- real PMC articles ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def nxml(realdata: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted((realdata / "pubmed" / "oa_nxml").glob("*.nxml"))}


def test_real_articles_titles_no_tags_no_back_matter(nxml: dict[str, Path]) -> None:
    assert len(nxml) == 7
    for name, path in nxml.items():
        doc = _doc(path)
        if name in TITLES:
            assert doc.meta["title"] == TITLES[name] and doc.text.startswith(TITLES[name] + "\n\n")
        assert not TAG.search(doc.text), (name, TAG.search(doc.text))
        assert "&#x" not in doc.text and "&amp;" not in doc.text
        root = etree.parse(str(path), etree.XMLParser(load_dtd=False, no_network=True, resolve_entities=False))
        gone = [" ".join("".join(n.itertext()).split()) for xpath in (
            "//ref-list//article-title", "//ref-list//source", "//aff", "//funding-source", "//ack//p",
            "//contrib//surname")
            for n in root.xpath(xpath)]
        leaked = [g for g in gone if len(g) > 25 and g in doc.text]
        assert not leaked, (name, leaked[:3])


def test_real_article_sections_in_document_order(nxml: dict[str, Path]) -> None:
    doc = _doc(nxml["PMC6398430.nxml"])
    assert doc.meta["sections"][:6] == ["INTRODUCTION", "METHODS", "Study site and population", "Data collection",
                                        "Analysis", "RESULTS"]
    positions = [doc.text.index("\n\n" + heading + "\n\n") for heading in doc.meta["sections"]]
    assert positions == sorted(positions)
    root = etree.parse(str(nxml["PMC6398430.nxml"]), etree.XMLParser(load_dtd=False, no_network=True))
    expected = [" ".join("".join(t.itertext()).split()) for t in root.xpath("/article/body//sec/title")]
    # a section holding only supplementary files has no text, so no heading either
    assert doc.meta["sections"] == [title for title in expected if title and title != "Supplementary Material"]
    # figure and table captions kept as text, table rows linearised
    assert "Figure 1: The study area within Vienna Zoo is outlined in red." in doc.text
    assert re.search(r"^Table 1: ", doc.text, re.MULTILINE) and " | " in doc.text
    dropped = _doc(nxml["PMC6398430.nxml"], table_mode="drop")
    assert " | " not in dropped.text and "Table 1: " in dropped.text and dropped.meta["tables"] == 4


def test_real_mathml_becomes_linear_text(nxml: dict[str, Path]) -> None:
    doc = _doc(nxml["PMC6398430.nxml"])
    assert doc.meta["math"] == {"tex": 0, "mathml": 2, "image_dropped": 0}
    assert "\nCF = (CM_t − CM_ind)/(CM_t)\n" in doc.text
    assert "FS_e = CM_ind + (CU − CU∗CF)/T" in doc.text


def test_old_nlm_dtd_and_image_only_formulas(nxml: dict[str, Path]) -> None:
    doc = _doc(nxml["pone.0000217.nxml"])
    assert "v2.3" in doc.meta["dtd"] and doc.meta["math"]["image_dropped"] == 24
    assert doc.meta["license"] == "cc-by"  # stated only in the NLM 2.3 copyright statement
    assert doc.meta["open_access"] is True and doc.meta["pmcid"]


def test_licences_abstract_labels_and_stub_article(nxml: dict[str, Path]) -> None:
    licences = {name: _doc(path).meta["license"] for name, path in nxml.items()}
    assert licences["ehp-116-1694.nxml"] == "public-domain" and licences["PMC6398430.nxml"] == "cc-by"
    assert licences["PMC5828200.nxml"] == "cc-by"
    stub = _doc(nxml["cc11003.nxml"])
    assert stub.meta["article_type"] == "abstract" and stub.meta["sections"] == ["Introduction", "Methods",
                                                                               "Results", "Conclusion"]
    bmc = _doc(nxml["1471-2180-11-174.nxml"])
    assert "\n\nBackground: " in bmc.text and "\n\nResults: " in bmc.text  # structured abstract keeps labels
    # the teaser abstract of the Behav Ecol paper is not the abstract
    crows = _doc(nxml["PMC6398430.nxml"])
    assert crows.text.count("Social complexity arises from the formation") == 1


# -- generated samples: tex-math, packages, licence filter, round trip --------------------------
@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return [Path(p) for p in pubmed_sample.write_sample_inputs(tmp_path_factory.mktemp("pubmed"))]


def test_tex_math_preferred_without_wrapper_and_round_trip(sample: list[Path]) -> None:
    doc = _doc(sample[0])
    assert "\n$$k = \\frac{1}{\\tau}$$\n" in doc.text and "documentclass" not in doc.text
    assert "p_0" in doc.text and doc.meta["math"] == {"tex": 1, "mathml": 1, "image_dropped": 0}
    order = ["Mitochondrial turnover in ageing fibroblasts", "Background: ", "Results: ", "\nIntroduction\n",
             "\nMethods\n", "\nStatistics\n", "\nResults\n", "Table 1: Turnover by condition.",
             "Condition | Half-life (days)\nControl | 4.1\nTreated | 2.3", "Figure 1: Membrane potential over time.",
             "\nDiscussion\n"]
    positions = [doc.text.index(part) for part in order]
    assert positions == sorted(positions)
    assert "Footnote of the table" not in doc.text and "Referenceauthor" not in doc.text
    for paragraph in pubmed_sample.PARAGRAPHS:  # every written sentence comes back
        assert paragraph in doc.text


def test_package_members_and_licence_filter(sample: list[Path]) -> None:
    records = _records(sample[2])
    assert [r.meta["pmcid"] for r in records if isinstance(r, Document)] == ["9000003", "9000004"]
    assert len(records) == 2  # the JPEG member is not an article
    strict = _records(sample[2], commercial_only=True)
    assert [type(r).__name__ for r in strict] == ["Document", "Drop"]
    assert strict[1].reason == "license_noncommercial" and "PMC9000004.xml" in strict[1].record  # type: ignore[union-attr]
    assert _records(sample[1], commercial_only=True)[0].reason == "license_noncommercial"  # type: ignore[union-attr]


def test_truncated_package_keeps_what_was_read(tmp_path: Path) -> None:
    articles = {f"PMC009xxxxxx/PMC90001{i:02d}.xml": pubmed_sample.jats_article(f"90001{i:02d}", f"Article number {i}")
                for i in range(6)}
    package = pubmed_sample.write_package(tmp_path / "whole.tar.gz", articles)
    stored = gzip.compress(gzip.decompress(package.read_bytes()), compresslevel=0, mtime=0)  # cut offsets ~ tar offsets
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(stored[: len(stored) * 3 // 4])
    whole = _records(package)
    records = _records(cut)
    kinds = Counter(r.reason if isinstance(r, Drop) else "doc" for r in records)
    assert len(whole) == 6 and kinds["truncated_input"] == 1 and 1 <= kinds["doc"] < 6
    assert [r.text for r in records if isinstance(r, Document)] == [r.text for r in whole if isinstance(r, Document)][: kinds["doc"]]


def test_hostile_tar_members_are_refused_and_nothing_is_extracted(tmp_path: Path) -> None:
    article = pubmed_sample.jats_article("9000005", "A title for the path test")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("../../escape/PMC9000005.nxml")
        info.size = len(article)
        archive.addfile(info, io.BytesIO(article))
        link = tarfile.TarInfo("PMC9000006.nxml")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
        big = tarfile.TarInfo("PMC9000007.nxml")
        big.size = len(article) + 100
        archive.addfile(big, io.BytesIO(b" " * big.size))
    package = tmp_path / "pkg" / "bulk.tar.gz"
    package.parent.mkdir()
    package.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    records = _records(package, max_article_bytes=len(article) + 10)
    # hostile members are refused unread, as docs/reliability.md says; the oversized one is too_large
    assert [(r.reason, r.record) for r in records] == [  # type: ignore[union-attr]
        ("unsafe_archive", "bulk.tar.gz:../../escape/PMC9000005.nxml"),
        ("unsafe_archive", "bulk.tar.gz:PMC9000006.nxml"), ("too_large", "bulk.tar.gz:PMC9000007.nxml")]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bulk.tar.gz", "pkg"]  # nothing extracted


def test_bounded_helper_same_result_and_time_bound(sample: list[Path]) -> None:
    inline = _records(sample[2])
    bounded = _records(sample[2], bounded=True)
    assert [r.text for r in bounded if isinstance(r, Document)] == [r.text for r in inline if isinstance(r, Document)]
    slow = _records(sample[2], bounded=True, max_article_seconds=1e-6)
    assert [r.reason for r in slow] == ["cleaner_timeout", "cleaner_timeout"]  # type: ignore[union-attr]
    assert isinstance(slow[0], Drop) and "PMC9000003.xml" in slow[0].record


# -- hostile XML ---------------------------------------------------------------------------
XXE = b"""<?xml version="1.0"?>
<!DOCTYPE article [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<article><front><article-meta><title-group><article-title>T &xxe;</article-title></title-group></article-meta></front>
<body><p>root:x:0:0 is what a leak would look like &xxe;</p></body></article>"""
BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE article [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
<!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>
<article><body><p>&h;</p></body></article>"""


def test_external_entities_and_bombs_are_never_resolved() -> None:
    for data in (XXE, BOMB):
        record = article_record(data, "hostile.nxml", CentralSettings())
        assert isinstance(record, Drop) and record.reason == "unsafe_xml" and "hostile.nxml" in record.detail


def test_undeclared_named_entities_are_counted_not_fatal() -> None:
    data = pubmed_sample.JATS_DOCTYPE.encode() + (
        b"<article><front><article-meta><title-group><article-title>Heat&nbsp;shock</article-title></title-group>"
        b"</article-meta></front><body><sec><title>Intro</title><p>" + b"Text &beta; continues. " * 20
        + b"</p></sec></body></article>")
    record = article_record(data, "named.nxml", CentralSettings(min_chars=0))
    assert isinstance(record, Document) and record.meta["unresolved_entities"] >= 1
    assert "Text continues." in record.text and "&" not in record.text


def test_broken_xml_and_non_article_are_drops() -> None:
    broken = article_record(b"<article><body><p>unclosed", "broken.nxml", CentralSettings())
    other = article_record(b"<html><body>not jats</body></html>", "page.xml", CentralSettings())
    assert (broken.reason, other.reason) == ("xml_error", "not_an_article")  # type: ignore[union-attr]


def test_parser_is_configured_safely() -> None:
    root = parse_article(b"<article/>")
    assert root.tag == "article"


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="$\\", blacklist_categories=("Cs", "Cc")),
               min_size=1, max_size=40).filter(lambda s: s.strip() == s and s.strip()))
def test_tex_wrapper_removed_for_any_formula(formula: str) -> None:
    assert tex_formula(pubmed_sample.TEX_WRAPPER % formula) == " ".join(formula.split())


# -- MEDLINE -------------------------------------------------------------------------------
def _medline(path: Path, **kwargs: object) -> tuple[list[Document], Counter[str]]:
    docs: list[Document] = []
    drops: Counter[str] = Counter()
    for record in medline.iter_medline(path, **kwargs):  # type: ignore[arg-type]
        if isinstance(record, Document):
            docs.append(record)
        else:
            drops[record.reason] += 1
    return docs, drops


def test_real_medline_2016_old_root_and_delete_citation(realdata: Path) -> None:
    path = realdata / "pubmed" / "baseline" / "medline16n0902.xml.gz"
    docs, drops = _medline(path)
    assert len(docs) + sum(drops.values()) == 604 + 1  # every citation and the deletion accounted for
    assert drops == {"no_abstract": 78, "delete_instruction": 1}
    assert {d.meta["root"] for d in docs} == {"MedlineCitationSet"}
    first = docs[0]
    assert first.meta["pmid"] == "17942999" and first.text.startswith(
        "Neuroplasticity in the processing of pitch dimensions: a multidimensional scaling analysis of the "
        "mismatch negativity.\n\nPURPOSE: An auditory electrophysiological study")
    assert "\nMETHODS: Mismatch negativity" in first.text and "Chandrasekaran" not in first.text
    markup = re.compile(r"</?(?:AbstractText|ArticleTitle|Abstract|PMID|i|b|u|sup|sub|DeleteCitation)\b")
    assert all(not markup.search(d.text) for d in docs)
    assert not any("UNLABELLED" in d.text for d in docs)


def test_real_pubmed_article_set_roots(realdata: Path) -> None:
    docs, drops = _medline(realdata / "pubmed" / "baseline" / "test_current_medline.xml.gz")
    assert len(docs) == 3 and drops == {"no_abstract": 1}
    assert docs[0].meta["root"] == "PubmedArticleSet" and docs[0].text.startswith(
        "Back Pain: Differential Diagnosis and Management.\n\nBack pain is a common condition")
    tabbed, _ = _medline(realdata / "pubmed" / "baseline" / "pubmed-29768149.xml")
    assert tabbed[0].meta["title"] == "Inhaled Combined Budesonide-Formoterol as Needed in Mild Asthma."
    assert "\t" not in tabbed[0].text and "BACKGROUND: In patients with mild asthma" in tabbed[0].text


def test_truncated_real_medline_keeps_records_read(realdata: Path, tmp_path: Path) -> None:
    data = (realdata / "pubmed" / "baseline" / "medline16n0902.xml.gz").read_bytes()
    cut = tmp_path / "medline16n0902.xml.gz"
    cut.write_bytes(data[: len(data) // 2])
    docs, drops = _medline(cut)
    assert drops["truncated_input"] == 1 and 100 < len(docs) < 526


def test_versions_and_deletions_within_a_file(tmp_path: Path) -> None:
    path = tmp_path / "medline16n0001.xml.gz"
    path.write_bytes(gzip.compress(pubmed_sample.medline_2016(26000000), mtime=0))
    docs, drops = _medline(path)
    assert [d.meta["pmid"] for d in docs] == ["26000000", "26000001"]
    assert docs[1].meta["title"] == "A corrected version of this citation."
    assert drops == {"no_abstract": 1, "superseded_version": 1, "delete_instruction": 1, "deleted_citation": 1}
    everything, _ = _medline(path, require_abstract=False)
    assert "26000002" in {d.meta["pmid"] for d in everything}


def test_translated_title_brackets_removed(tmp_path: Path) -> None:
    path = tmp_path / "pubmed24n0002.xml.gz"
    path.write_bytes(gzip.compress(pubmed_sample.pubmed_2024(38000000), mtime=0))
    docs, _ = _medline(path)
    assert docs[0].meta["title"] == "Back pain in adolescents." and "Referenceauthor" not in docs[0].text


def _book_document(pmid: str) -> Any:
    """A ``BookDocument`` as PubMed exports NCBI Bookshelf chapters (e.g. GeneReviews)."""
    book = etree.Element("BookDocument")
    etree.SubElement(book, "PMID", Version="1").text = pmid
    whole = etree.SubElement(book, "Book")
    etree.SubElement(whole, "BookTitle").text = "GeneReviews"
    etree.SubElement(etree.SubElement(whole, "PubDate"), "Year").text = "2021"
    etree.SubElement(book, "ArticleTitle").text = "Hereditary haemochromatosis."
    etree.SubElement(book, "Language").text = "eng"
    etree.SubElement(etree.SubElement(book, "Abstract"), "AbstractText").text = "Iron overload from HFE variants."
    return book


@pytest.mark.parametrize("wrapped", [True, False], ids=["PubmedBookArticle", "BookDocumentSet"])
def test_book_records_are_kept_between_articles(tmp_path: Path, wrapped: bool) -> None:
    """A book chapter is one citation: once it cost an ``unknown_record`` and a ``bad_record`` drop."""
    root = etree.fromstring(pubmed_sample.pubmed_2024(38000000))
    if wrapped:
        article = etree.Element("PubmedBookArticle")
        article.append(_book_document("20301613"))
        etree.SubElement(etree.SubElement(article, "PubmedBookData"), "PublicationStatus").text = "ppublish"
        root.insert(1, article)
    else:
        root = etree.Element("BookDocumentSet")
        root.append(_book_document("20301613"))
    path = tmp_path / "pubmed24n0003.xml.gz"
    path.write_bytes(gzip.compress(etree.tostring(root, xml_declaration=True, encoding="UTF-8"), mtime=0))
    docs, drops = _medline(path)
    pmids = ["38000000", "20301613", "38000001"] if wrapped else ["20301613"]
    assert [d.meta["pmid"] for d in docs] == pmids and drops == {}
    book = docs[pmids.index("20301613")]
    assert book.text.startswith("Hereditary haemochromatosis.") and "HFE variants" in book.text
