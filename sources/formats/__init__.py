"""File formats the recipes read: WARC, tar, HTML, PDF, EPUB, LaTeX, MathML, wikitext, JATS, MEDLINE,
Parquet/JSONL rows, the Pile's jsonl.zst, plus licence detection.

Each module turns bytes of one format into text or records, bounded per record, and knows nothing
of a source's filters or of Prefect; a recipe (``sources/<name>.py``) composes them.
"""
