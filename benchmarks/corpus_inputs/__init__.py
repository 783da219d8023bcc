"""Scale inputs in each LLaMA source's real format, generated offline for ``benchmarks/corpus_cost.py``.

One module per source (``c4``, ``github``, ``wikipedia``, ``books``, ``arxiv``, ``stackexchange``,
and ``pile`` for the dedup reference), each with ``write(directory, size, seed=0)`` returning the
paths it wrote; :mod:`corpus_inputs._text` holds the real-text pools they draw from. Each module's
docstring states its layout, its length law and its duplicate rates, and where they come from.
Outputs depend on ``size`` and ``seed`` only (fixed ids, dates, gzip/tar/7z times).
"""
