"""Spark Declarative Pipelines: a pipeline's storage root as the unit (tables, flows, versions), each
flow judged on its live checkpoint version, and what ``spark-pipelines run`` does next per flow."""
