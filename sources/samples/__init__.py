"""Offline sample inputs for every source (LLaMA and G.2 extension), each in its real format, written from real prose.

:mod:`sources.samples.prose` holds the public-domain text every writer draws from; each other
module has a ``write_sample_inputs(directory) -> list[str]`` that writes one source's files
deterministically (byte-identical across runs and machines) and returns their paths, sorted.
"""
