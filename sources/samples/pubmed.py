"""Write small offline PubMed inputs in the real formats (JATS/NLM articles, PMC package, MEDLINE).

Made with lxml (the XML, including the ``<!DOCTYPE>`` with its external DTD reference that real
files carry), ``tarfile`` and ``gzip``, deterministically (fixed mtimes), so the flows and
``flows.llama --sample`` can run every rule offline:

* ``pmc/PMC9000001.nxml``: JATS 1.2 with MathML 3, a formula in ``<alternatives>`` (MathML and
  ``tex-math`` with PMC's ``\\documentclass`` wrapper), a structured abstract, a linearisable
  table, a figure, references, funding and acknowledgements (to be dropped), CC BY;
* ``pmc/PMC9000002.nxml``: the older NLM 2.3 archivearticle DTD, an image-only display formula,
  CC BY-NC (kept unless ``commercial_only``);
* ``pmc/oa_comm_xml.PMC009xxxxxx.baseline.sample.tar.gz``: a bulk package (``PMC009xxxxxx/*.xml``
  members) with two more articles and a JPEG that is not an article;
* ``medline/medline16n0001.xml.gz`` (``MedlineCitationSet`` root, a labelled abstract, a PMID
  seen twice, a ``DeleteCitation``) and ``medline/pubmed24n0002.xml.gz`` (``PubmedArticleSet``).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from lxml import etree

XLINK = "http://www.w3.org/1999/xlink"
MML = "http://www.w3.org/1998/Math/MathML"
JATS_DOCTYPE = ('<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD with '
                'MathML3 v1.2 20190208//EN" "JATS-archive-oasis-article1-mathml3.dtd">')
NLM23_DOCTYPE = ('<!DOCTYPE article PUBLIC "-//NLM//DTD Journal Archiving and Interchange DTD v2.3 20070202//EN" '
                 '"archivearticle.dtd">')
TEX_WRAPPER = ("\\documentclass[12pt]{minimal}\n\\usepackage{amsmath}\n\\usepackage{wasysym}\n"
               "\\usepackage{amsfonts}\n\\usepackage{amssymb}\n\\usepackage{amsbsy}\n\\usepackage{mathrsfs}\n"
               "\\usepackage{upgreek}\n\\setlength{\\oddsidemargin}{-69pt}\n\\begin{document}$$%s$$\\end{document}")
PARAGRAPHS = [
    "Mitochondrial turnover was measured in cultured fibroblasts over a period of fourteen days.",
    "Cells were maintained at 37 degrees in a humidified incubator with five percent carbon dioxide.",
    "Fluorescence intensity was normalised to the mean of the untreated control wells on each plate.",
    "The decline in membrane potential preceded the loss of respiratory capacity by about two days.",
    "Replicate experiments were performed by two investigators blinded to the treatment allocation.",
    "These observations are consistent with a threshold model of organelle quality control.",
]


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    node = etree.SubElement(parent, tag, {k.replace("_", "-"): v for k, v in attrs.items()})
    node.text = text
    return node


def _para(parent: etree._Element, index: int, extra: str = "") -> etree._Element:
    return _sub(parent, "p", " ".join(PARAGRAPHS[(index + k) % len(PARAGRAPHS)] for k in range(3)) + extra)


def _front(article: etree._Element, pmc: str, title: str, licence: str, licence_url: str) -> etree._Element:
    front = _sub(article, "front")
    journal = _sub(front, "journal-meta")
    _sub(journal, "journal-id", "Sample J", journal_id_type="nlm-ta")
    meta = _sub(front, "article-meta")
    _sub(meta, "article-id", pmc, pub_id_type="pmc")
    _sub(meta, "article-id", str(30000000 + int(pmc[-3:])), pub_id_type="pmid")
    _sub(_sub(meta, "title-group"), "article-title", title)
    contrib = _sub(_sub(meta, "contrib-group"), "contrib", contrib_type="author")
    name = _sub(contrib, "name")
    _sub(name, "surname", "Authorname")
    _sub(name, "given-names", "Ada")
    _sub(meta, "aff", "Department of Affiliations, Sample University", id="aff1")
    permissions = _sub(meta, "permissions")
    _sub(permissions, "copyright-statement", "Copyright 2020 The Authors")
    lic = _sub(permissions, "license", license_type=licence)
    lic.set(f"{{{XLINK}}}href", licence_url)
    _sub(lic, "license-p", "This article is distributed under the terms of a Creative Commons licence.")
    funding = _sub(_sub(meta, "funding-group"), "award-group")
    _sub(funding, "funding-source", "The Grant Agency for Sample Studies")
    return meta


def _back(article: etree._Element) -> None:
    back = _sub(article, "back")
    _sub(_sub(back, "ack"), "p", "We thank the reviewers of this acknowledgement section.")
    refs = _sub(back, "ref-list")
    ref = _sub(refs, "ref", id="B1")
    _sub(ref, "mixed-citation", "Referenceauthor A. A cited paper that must not appear. J Refs. 1999;1:1-2.")


def jats_article(pmc: str, title: str, licence: str = "cc-by",
                 licence_url: str = "https://creativecommons.org/licenses/by/4.0/") -> bytes:
    """A JATS 1.2 article with MathML + tex-math alternatives, a table and a figure."""
    article = etree.Element("article", nsmap={"xlink": XLINK, "mml": MML}, attrib={"article-type": "research-article"})
    article.append(etree.ProcessingInstruction("properties", "open_access"))
    meta = _front(article, pmc, title, licence, licence_url)
    abstract = _sub(meta, "abstract")
    for label, index in (("Background", 0), ("Results", 3)):
        sec = _sub(abstract, "sec")
        _sub(sec, "title", label)
        _para(sec, index)
    body = _sub(article, "body")
    intro = _sub(body, "sec", id="s1")
    _sub(intro, "title", "Introduction")
    _para(intro, 1, " Earlier work ")
    xref = _sub(intro[-1], "xref", "1", ref_type="bibr", rid="B1")
    xref.tail = " measured turnover only in bulk."
    methods = _sub(body, "sec", id="s2")
    _sub(methods, "title", "Methods")
    p = _para(methods, 2, " The decay constant was fitted as ")
    formula = _sub(p, "disp-formula", id="E1")
    alts = _sub(formula, "alternatives")
    math = _sub(alts, f"{{{MML}}}math")
    mrow = _sub(math, f"{{{MML}}}mrow")
    _sub(mrow, f"{{{MML}}}mi", "k")
    _sub(mrow, f"{{{MML}}}mo", "=")
    frac = _sub(mrow, f"{{{MML}}}mfrac")
    _sub(frac, f"{{{MML}}}mn", "1")
    _sub(frac, f"{{{MML}}}mi", "τ")
    _sub(alts, "tex-math", TEX_WRAPPER % "k = \\frac{1}{\\tau}", id="M1")
    formula.tail = " where tau is the half-life."
    sub = _sub(methods, "sec", id="s2a")
    _sub(sub, "title", "Statistics")
    inline = _para(sub, 4, " Groups were compared at ")
    inline_math = _sub(_sub(inline, "inline-formula"), f"{{{MML}}}math")
    msub = _sub(inline_math, f"{{{MML}}}msub")
    _sub(msub, f"{{{MML}}}mi", "p")
    _sub(msub, f"{{{MML}}}mn", "0")
    inline[-1].tail = " below five percent."
    results = _sub(body, "sec", id="s3")
    _sub(results, "title", "Results")
    _para(results, 3)
    table = _sub(results, "table-wrap", id="T1")
    _sub(table, "label", "Table 1")
    _sub(_sub(table, "caption"), "title", "Turnover by condition.")
    grid = _sub(table, "table")
    head = _sub(_sub(grid, "thead"), "tr")
    for cell in ("Condition", "Half-life (days)"):
        _sub(head, "th", cell)
    tbody = _sub(grid, "tbody")
    for row in (("Control", "4.1"), ("Treated", "2.3")):
        tr = _sub(tbody, "tr")
        for cell in row:
            _sub(tr, "td", cell)
    _sub(_sub(table, "table-wrap-foot"), "fn", "Footnote of the table, dropped.")
    fig = _sub(results, "fig", id="F1")
    _sub(fig, "label", "Figure 1")
    caption = _sub(fig, "caption")
    _sub(caption, "title", "Membrane potential over time.")
    _sub(caption, "p", "Mean of three replicates.")
    _sub(fig, "graphic").set(f"{{{XLINK}}}href", "pone.0000001.g001")
    discussion = _sub(body, "sec", id="s4")
    _sub(discussion, "title", "Discussion")
    _para(discussion, 5)
    _back(article)
    return JATS_DOCTYPE.encode() + b"\n" + etree.tostring(article, encoding="us-ascii")


def nlm23_article(pmc: str, title: str) -> bytes:
    """An NLM 2.3 archivearticle with an image-only display formula and a CC BY-NC licence."""
    article = etree.Element("article", nsmap={"xlink": XLINK, "mml": MML}, attrib={"article-type": "research-article"})
    article.append(etree.ProcessingInstruction("properties", "open_access"))
    meta = _front(article, pmc, title, "open-access", "http://creativecommons.org/licenses/by-nc/3.0/")
    _para(_sub(meta, "abstract"), 2)
    body = _sub(article, "body")
    sec = _sub(body, "sec")
    _sub(sec, "title", "Model")
    p = _para(sec, 0, " The fitness is ")
    formula = _sub(p, "disp-formula")
    _sub(formula, "graphic").set(f"{{{XLINK}}}href", "pone.0000002.e001.jpg")
    formula.tail = " as shown before."
    sec2 = _sub(body, "sec")
    _sub(sec2, "title", "Conclusions")
    _para(sec2, 4)
    _back(article)
    return NLM23_DOCTYPE.encode() + b"\n" + etree.tostring(article, encoding="us-ascii")


def _tar_add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    archive.addfile(info, io.BytesIO(data))


def write_package(target: Path, articles: dict[str, bytes], extra: dict[str, bytes] | None = None) -> Path:
    """A PMC bulk package (gzip'd tar) holding ``articles`` (member name -> bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in {**articles, **(extra or {})}.items():
            _tar_add(archive, name, data)
    target.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    return target


# -- MEDLINE ---------------------------------------------------------------------------------
def _citation(parent: etree._Element, pmid: str, title: str, parts: list[tuple[str | None, str]],
              version: str = "1", old_root: bool = False) -> None:
    cit = _sub(parent, "MedlineCitation", Owner="NLM", Status="MEDLINE")
    _sub(cit, "PMID", pmid, Version=version)
    _sub(_sub(cit, "DateCreated" if old_root else "DateCompleted"), "Year", "2015")
    article = _sub(cit, "Article", PubModel="Print")
    journal = _sub(article, "Journal")
    issue = _sub(journal, "JournalIssue", CitedMedium="Print")
    _sub(_sub(issue, "PubDate"), "Year", "2015")
    _sub(journal, "Title", "Journal of Sample Medicine")
    _sub(article, "ArticleTitle", title)
    if parts:
        abstract = _sub(article, "Abstract")
        for label, text in parts:
            node = _sub(abstract, "AbstractText", text)
            if label:
                node.set("Label", label)
                node.set("NlmCategory", label)
    authors = _sub(article, "AuthorList", CompleteYN="Y")
    author = _sub(authors, "Author", ValidYN="Y")
    _sub(author, "LastName", "Authorname")
    _sub(_sub(author, "AffiliationInfo"), "Affiliation", "Sample Hospital, Sample City.")
    _sub(article, "Language", "eng")


def medline_2016(pmid_base: int) -> bytes:
    """A ``MedlineCitationSet`` file: labelled abstract, a PMID twice (v1 then corrected), a deletion."""
    root = etree.Element("MedlineCitationSet")
    _citation(root, str(pmid_base), "Neural correlates of pitch in tonal languages.",
              [("PURPOSE", PARAGRAPHS[0]), ("METHODS", PARAGRAPHS[1]), ("RESULTS", PARAGRAPHS[2])], old_root=True)
    _citation(root, str(pmid_base + 1), "A first version of this citation.", [(None, PARAGRAPHS[3])], old_root=True)
    _citation(root, str(pmid_base + 2), "A citation without an abstract.", [], old_root=True)
    _citation(root, str(pmid_base + 3), "A citation deleted later in this file.", [(None, PARAGRAPHS[4])],
              old_root=True)
    _citation(root, str(pmid_base + 1), "A corrected version of this citation.", [(None, PARAGRAPHS[5])],
              old_root=True)
    _sub(_sub(root, "DeleteCitation"), "PMID", str(pmid_base + 3), Version="1")
    doctype = ('<!DOCTYPE MedlineCitationSet PUBLIC "-//NLM//DTD Medline Citation, 1st January, 2016//EN" '
               '"https://www.nlm.nih.gov/databases/dtd/nlmmedlinecitationset_160101.dtd">')
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", doctype=doctype)


def pubmed_2024(pmid_base: int, deletes: list[str] | None = None) -> bytes:
    """A ``PubmedArticleSet`` file (compact, the current layout) with PubmedData and a reference list."""
    root = etree.Element("PubmedArticleSet")
    for offset, title in enumerate(("[Back pain in adolescents].", "Structured abstracts in clinical trials.")):
        article = _sub(root, "PubmedArticle")
        _citation(article, str(pmid_base + offset), title,
                  [("BACKGROUND", PARAGRAPHS[offset]), ("CONCLUSIONS", PARAGRAPHS[offset + 2])])
        data = _sub(article, "PubmedData")
        refs = _sub(_sub(data, "ReferenceList"), "Reference")
        _sub(refs, "Citation", "Referenceauthor A. A cited paper that must not appear.")
    if deletes:
        delete = _sub(root, "DeleteCitation")
        for pmid in deletes:
            _sub(delete, "PMID", pmid, Version="1")
    doctype = ('<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" '
               '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">')
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", doctype=doctype)


def write_sample_inputs(directory: Path) -> list[str]:
    """Write the PMC and MEDLINE samples under ``directory``; return their paths (PMC first)."""
    pmc = directory / "pmc"
    abstracts = directory / "medline"
    pmc.mkdir(parents=True, exist_ok=True)
    abstracts.mkdir(parents=True, exist_ok=True)
    paths = []
    first = pmc / "PMC9000001.nxml"
    first.write_bytes(jats_article("9000001", "Mitochondrial turnover in ageing fibroblasts"))
    second = pmc / "PMC9000002.nxml"
    second.write_bytes(nlm23_article("9000002", "Fitness decline under mutation accumulation"))
    package = write_package(pmc / "oa_comm_xml.PMC009xxxxxx.baseline.sample.tar.gz", {
        "PMC009xxxxxx/PMC9000003.xml": jats_article("9000003", "Organelle quality control thresholds"),
        "PMC009xxxxxx/PMC9000004.xml": jats_article("9000004", "Respiratory capacity after oxidative stress",
                                                    "cc-by-nc-nd", "https://creativecommons.org/licenses/by-nc-nd/4.0/"),
    }, {"PMC009xxxxxx/PMC9000003.g001.jpg": b"\xff\xd8\xff\xe0 not an article"})
    paths += [str(first), str(second), str(package)]
    for name, data in (("medline16n0001.xml.gz", medline_2016(26000000)),
                       ("pubmed24n0002.xml.gz", pubmed_2024(38000000, deletes=[str(26000000)]))):
        target = abstracts / name
        target.write_bytes(gzip.compress(data, mtime=0))
        paths.append(str(target))
    return paths
