"""The Prefect tasks: every ``@task`` of the project, thin wrappers over the pure layers.

A task works on one whole input file or shard, never on one document (Prefect costs
milliseconds per task run). The logic lives below, free of Prefect: ``core/`` (documents,
steps, shards, manifest, pipeline phases), ``sources/``, ``dedupe/`` and ``loader/``.
"""
