"""The machinery every flow shares, kept out of ``ls flows/`` so that folder lists what a user runs.

Where runs happen (:mod:`.runner`: the embedded Prefect API, the process pool; :mod:`.dask_settings`,
:mod:`.dask_worker`), what Prefect internals we lean on (:mod:`.prefect_internals`: every
reach into private Prefect and CPython, each named with the version checked and its replacement;
:mod:`.prefect_reuse`, :mod:`.worker_savings`), the command-line plumbing (:mod:`.cli`, :mod:`.logs`, :mod:`.lazy`), the
record of a run (:mod:`.recorder`), the generic source flow's body (:mod:`.source_flow`), the web
sources' shared settings (:mod:`.web`), the dedup settings (:mod:`.dedup_config`, :mod:`.near_dedup`)
and the parent flow's stages, report, crawl and sample (:mod:`.llama_stages`, :mod:`.llama_report`,
:mod:`.llama_crawl`, :mod:`.sample`, :mod:`.config_parts`). Nothing here imports a flow module
(``tests/test_layout_rules.py``).
"""
