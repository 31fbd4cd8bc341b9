"""Sinks: a file sink's ``_spark_metadata`` log against the checkpoint's batches, and the proof
that a sink is this query's own."""
