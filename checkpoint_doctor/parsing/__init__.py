"""Parsers: bytes in, values out. Pure; each raises CheckpointParseError on invalid input."""
