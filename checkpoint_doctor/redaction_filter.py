"""The logging filter that masks credentials in third-party debug records (:mod:`checkpoint_doctor.redaction`).

Apart from the redaction itself: importing :mod:`logging` is for a command that logs (the command
line configures logging only once something imports it).
"""

from __future__ import annotations

import logging

from checkpoint_doctor.redaction import redact_log


class RedactingFilter(logging.Filter):
    """Masks credentials in every record a handler emits (put on the root handler: records of
    botocore, s3fs and aiohttp reach it by propagation, where logger filters do not apply)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's message by its redacted text; never drops a record."""
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed third-party record is shown as logging would
            return True
        shown = redact_log(message)
        if shown != message:
            record.msg, record.args = shown, None
        return True
