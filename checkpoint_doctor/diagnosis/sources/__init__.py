"""Sources: what a restart does with each source's offsets and files, per line (the offsets
log's source entries, ``sources/N/`` file-source logs, Kafka positions against a broker)."""
