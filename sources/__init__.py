"""Source modules: streaming readers and cleaners, one per input format (no Prefect)."""
