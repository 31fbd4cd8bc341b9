"""The one secret test and the redaction of credentials: examples and properties."""

from __future__ import annotations

import logging
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.planning.plan import public_storage_options
from checkpoint_doctor.redaction import is_secret, redact, redact_log
from checkpoint_doctor.redaction_filter import RedactingFilter
from checkpoint_doctor.render.hints import storage_pairs


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("s3://AKIAEXAMPLEKEY:SUPERSECRETVALUE123@bkt/ckpt", "s3://***@bkt/ckpt"),
        ("cannot list s3a://TOKENONLY@bkt/x: denied", "cannot list s3a://***@bkt/x: denied"),
        ("gs://user:pw@b/c and s3://k:s@d/e", "gs://***@b/c and s3://***@d/e"),
        ("https://etl:hunter2@host/p", "https://etl:***@host/p"),
        ("hdfs://etl@namenode:8020/ckpt", "hdfs://etl@namenode:8020/ckpt"),  # a user, no secret
        ("abfss://container@acct.dfs.core.windows.net/c", "abfss://container@acct.dfs.core.windows.net/c"),
        (
            "https://acct.blob.core.windows.net/c?sv=2022&sig=abc%2F&se=x",
            "https://acct.blob.core.windows.net/c?sv=2022&sig=***&se=x",
        ),
        (
            "https://h/k?X-Amz-Credential=A%2F1&X-Amz-Signature=ff",
            "https://h/k?X-Amz-Credential=***&X-Amz-Signature=***",
        ),
        ("/data/ckpt", "/data/ckpt"),
        ("file:///data/ckpt", "file:///data/ckpt"),
        ("a=b, mail me@host", "a=b, mail me@host"),
        ("s3://AKIA:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY@bkt/c", "s3://***@bkt/c"),  # "/" in a secret
        ("s3://bkt/users/me@example.com/ckpt", "s3://bkt/users/me@example.com/ckpt"),  # "@" in a key
        ("https://host:8080/a@b", "https://host:8080/a@b"),
    ],
)
def test_redact_masks_credentials_in_urls_only(text: str, shown: str) -> None:
    assert redact(text) == shown


_USER = st.text(string.ascii_letters + string.digits + "+=_-", min_size=1, max_size=30)
#: An AWS secret key holds "/" and "+"; a password in other URLs is percent-encoded.
_SECRET = {
    "bucket": st.text(string.ascii_letters + string.digits + "+/=_-", min_size=4, max_size=40),
    "other": st.text(string.ascii_letters + string.digits + "+=_-%", min_size=4, max_size=40),
}


@given(
    protocol=st.sampled_from(["s3", "s3a", "gs", "https", "sftp"]),
    user=_USER,
    secret=st.data(),
    prefix=st.text(max_size=20),
    path=st.text(string.ascii_letters + "/._-", max_size=20),
)
def test_no_password_survives_and_redacting_twice_changes_nothing(
    protocol: str, user: str, secret: st.DataObject, prefix: str, path: str
) -> None:
    password = secret.draw(_SECRET["bucket" if protocol in ("s3", "s3a", "gs") else "other"])
    text = f"{prefix} {protocol}://{user}:{password}@bucket/{path}"
    once = redact(text)
    assert f":{password}@" not in once
    assert redact(once) == once
    assert once.endswith(f"@bucket/{path}")


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("key", True),
        ("secret", True),
        ("token", True),
        ("client_kwargs.aws_session_token", True),
        ("password", True),
        ("account_key", True),
        ("sas_token", True),
        ("credentials", True),
        ("endpoint_url", False),
        ("anon", False),
        ("client_kwargs.region_name", False),
        ("use_ssl", False),
    ],
)
def test_one_secret_test_for_plans_and_printed_hints(key: str, secret: bool) -> None:
    assert is_secret(key) is secret
    # A plan records, and a hint prints, exactly the options that are not secret.
    assert (key in public_storage_options({key: "v"})) is not secret
    assert (f"{key}=v" in storage_pairs({key: "v"})) is not secret


def test_debug_records_of_a_signed_request_are_masked() -> None:
    record = logging.LogRecord(
        "botocore.endpoint",
        logging.DEBUG,
        __file__,
        1,
        "Sending http request: %s",
        (
            "<AWSPreparedRequest url=https://h/b?list-type=2&max-keys=1, headers={'X-Amz-Security-Token': "
            "b'IQoSECRET', 'Authorization': b'AWS4-HMAC-SHA256 Credential=AKIA/x, Signature=ab12'}>",
        ),
        None,
    )
    assert RedactingFilter().filter(record)
    message = record.getMessage()
    assert "IQoSECRET" not in message and "AKIA" not in message and "ab12" not in message
    assert "max-keys=1" in message
    canonical = "CanonicalRequest:\nGET\n/b\nhost:h\nx-amz-security-token:IQoSECRET\n\nhost"
    assert redact_log(canonical) == canonical.replace("IQoSECRET", "***")
    assert redact_log("Signature:\n5801a64491dec8969588087fbe095b9c") == "Signature:\n***"


def test_the_command_line_configures_logging_when_something_imports_it() -> None:
    # A local verdict never imports logging (start-up, scripts/bench.py --section diagnose); the
    # first import of it (fsspec, botocore, a thread pool) gets the command line's configuration.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from checkpoint_doctor.cli import app\n"
        "app._current.log_level = 'INFO'\n"
        "app._configure_logging()\n"
        "assert 'logging' not in sys.modules\n"
        "import logging\n"
        "from importlib.machinery import SourceFileLoader\n"
        "assert type(logging.__loader__) is SourceFileLoader, logging.__loader__\n"
        "logging.getLogger('botocore.x').info('GET s3://AKIAX:SECRET@bkt/k?X-Amz-Signature=abc')\n"
        "logging.getLogger('y').debug('not shown')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == "INFO botocore.x: GET s3://***@bkt/k?X-Amz-Signature=***\n"
