"""Fixtures the CLI contract tests share with the audit and S3 tests."""

from tests.fleet.conftest import local_fleet  # noqa: F401 - a fleet of real checkpoints to audit
from tests.s3.conftest import moto_server, s3, s3_observer  # noqa: F401 - the moto S3 server
