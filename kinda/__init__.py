"""kinda-llama: rebuild the LLaMA (v1) pre-training corpus, and go beyond it.

The version below is the *recipe* version: bump it whenever a change alters what the pipeline
writes, because resume markers and the manifest key finished work on it (a code change that
does not alter output keeps the version, so finished work stays finished).
"""

__version__ = "0.1.0"
