"""The moto S3 server of tests/s3/, for reading Delta tables on S3 as on local disk."""

from tests.s3.conftest import moto_server, s3, s3_observer

__all__ = ["moto_server", "s3", "s3_observer"]
