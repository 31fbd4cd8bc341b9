"""Execution: applying and undoing repair plans, and the catch-up runner. The I/O edge of repairs."""
