"""Example streaming jobs for ``checkpoint-doctor catch-up`` (see ``rate_job``)."""
