"""Pipeline building blocks: documents, steps, shards, manifest (pure) and Prefect wrappers.

Only ``tasks.prefect_tasks`` imports Prefect; everything else here is plain Python so that it
can be tested, benchmarked and reused without an orchestrator.
"""
