"""Sources, in three rooms (no Prefect anywhere below this package):

- ``sources/<name>.py``: one recipe per source (what LLaMA or the G.2 extension does to it: reader,
  cleaners, filters, partitioning), e.g. :mod:`sources.wikipedia`, :mod:`sources.arxiv`;
- :mod:`sources.formats`: the file formats the recipes read (WARC, tar, HTML, PDF, EPUB, LaTeX,
  wikitext, JATS, Parquet/JSONL rows, ...), each knowing nothing of a source;
- :mod:`sources.samples`: writers of small offline inputs in each source's real format.
"""
