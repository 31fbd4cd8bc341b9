"""S3 failures a user meets, against a real moto server: each becomes one exception type whose
message names the URL and says what to do."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import boto3
import pytest

from checkpoint_doctor.errors import (
    AccessDeniedError,
    CheckpointNotFoundError,
    CredentialsError,
    EndpointUnreachableError,
)
from checkpoint_doctor.reading.pipeline import load_checkpoint
from checkpoint_doctor.reading.storage import open_storage
from tests.s3.conftest import S3
from tests.storage.builders import checkpoint_files

NO_CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or pass --storage-option key=... secret=..."
)
FAIL_FAST = {"config_kwargs": {"connect_timeout": 1, "retries": {"total_max_attempts": 1}}}


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port that refuses connections: bound (so nothing else takes it) but not listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def denied_user(s3: S3) -> Iterator[dict[str, str]]:
    """Credentials of an IAM user whose policy denies everything on the bucket; IAM enforced."""
    iam = boto3.client(
        "iam",
        endpoint_url=s3.endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    iam.create_user(UserName="reader")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
            {
                "Effect": "Deny",
                "Action": "s3:*",
                "Resource": [f"arn:aws:s3:::{s3.bucket}", f"arn:aws:s3:::{s3.bucket}/*"],
            },
        ],
    }
    iam.put_user_policy(UserName="reader", PolicyName="deny-bucket", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    s3.server.enforce_iam(True)
    try:
        yield {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    finally:
        s3.server.enforce_iam(False)


def test_no_credentials(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    s3.fs.pipe_file(s3.key("ckpt/metadata"), b"{}")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    s3.server.log.clear()
    url = s3.url("ckpt")

    with pytest.raises(CredentialsError) as info:
        open_storage(url, s3.options).list_tree()

    assert info.value.url == url
    assert str(info.value) == f"cannot list {url}: no credentials found; {NO_CREDENTIALS_HINT}"
    assert s3.server.log.requests == []  # refused before anything was sent


def test_rejected_credentials(s3: S3, denied_user: dict[str, str]) -> None:
    url = s3.url("ckpt")

    with pytest.raises(CredentialsError) as info:
        open_storage(url, {**s3.options, "key": "AKIANOSUCHKEY0000000", "secret": "x"}).list_tree()

    assert info.value.url == url
    assert str(info.value).startswith(
        f"cannot list {url}: the credentials were rejected (InvalidAccessKeyId); "
    )
    assert "check the access key, secret and session token" in str(info.value)


def test_access_denied(s3: S3, denied_user: dict[str, str]) -> None:
    url = s3.url("ckpt")
    store = open_storage(url, {**s3.options, **denied_user})

    with pytest.raises(AccessDeniedError) as info:
        store.list_tree()
    with pytest.raises(AccessDeniedError) as read_info:
        store.read("metadata")
    per_file = store.read_many(["metadata"])

    hint = "access denied; check the permissions or bucket policy for this path"
    assert str(info.value) == f"cannot list {url}: {hint}"
    assert str(read_info.value) == f"cannot read {url}/metadata: {hint}"
    assert isinstance(per_file["metadata"], AccessDeniedError)
    assert s3.server.log.kinds()["ListObjectsV2"] >= 1  # the server itself refused


def test_access_denied_loading_a_checkpoint(s3: S3, denied_user: dict[str, str]) -> None:
    with pytest.raises(AccessDeniedError) as info:
        load_checkpoint(s3.url("ckpt"), storage_options={**s3.options, **denied_user})

    assert info.value.url == s3.url("ckpt")


def test_unreachable_endpoint_is_one_clear_error(s3: S3, closed_port: int) -> None:
    # How fast it gives up is the timeouts' job (their defaults are asserted in
    # tests/storage/test_errors.py), not a wall-clock assertion here.
    url = s3.url("ckpt")
    options = {"client_kwargs": {"endpoint_url": f"http://127.0.0.1:{closed_port}"}, **FAIL_FAST}

    with pytest.raises(EndpointUnreachableError) as info:
        open_storage(url, options).list_tree()

    message = str(info.value)
    assert message.startswith(
        f"cannot list {url}: endpoint unreachable (Could not connect to the endpoint URL: "
    )
    assert f"127.0.0.1:{closed_port}" in message
    assert message.endswith("; check the network and --storage-option endpoint_url")


def test_missing_bucket(s3: S3) -> None:
    url = "s3://no-such-bucket/ckpt"

    with pytest.raises(CheckpointNotFoundError) as info:
        open_storage(url, s3.options).list_tree()

    assert str(info.value) == f"cannot list {url}: no such bucket; check the bucket name and the endpoint"


def test_missing_prefix_and_a_key_where_the_prefix_should_be(s3: S3) -> None:
    for rel, data in checkpoint_files().items():
        s3.fs.pipe_file(s3.key(f"ckpt/{rel}"), data)

    with pytest.raises(CheckpointNotFoundError) as missing:
        open_storage(s3.url("ckp"), s3.options).list_tree()  # a prefix of "ckpt/", not a directory
    listing = open_storage(s3.url("ckpt/offsets"), s3.options).list_tree()

    assert missing.value.url == s3.url("ckp")
    assert [f.path for f in listing.files] == ["0", "1", "2"]


def _silent_options(server: SilentServer, **config: object) -> dict[str, object]:
    options: dict[str, object] = {"client_kwargs": {"endpoint_url": f"http://127.0.0.1:{server.port}"}}
    if config:
        options["config_kwargs"] = config
    return options


def test_an_endpoint_that_never_answers_fails_after_two_attempts(s3: S3, silent_server: SilentServer) -> None:
    url = s3.url("ckpt")

    with pytest.raises(EndpointUnreachableError) as info:
        open_storage(url, _silent_options(silent_server, read_timeout=0.5)).list_tree()

    # The retry budget: two attempts of one request, not s3fs's 5 x botocore's 5 (the default
    # connect timeout and retries apply under the operator's read timeout).
    assert len(silent_server.accepted) == 2
    message = str(info.value)
    assert message.startswith(
        f"cannot list {url}: no answer within the timeout (Read timeout on endpoint URL: "
    )
    assert message.endswith(
        "; check the endpoint; if it is only slow, raise --storage-option config_kwargs.read_timeout=SECONDS "
        "(and config_kwargs.connect_timeout)"
    )


def test_the_operator_sets_the_retry_budget(s3: S3, silent_server: SilentServer) -> None:
    options = _silent_options(silent_server, read_timeout=0.2, retries={"total_max_attempts": 3})

    with pytest.raises(EndpointUnreachableError):
        load_checkpoint(s3.url("ckpt"), storage_options=options)

    assert len(silent_server.accepted) == 3


#: The wait without a byte the default-options tests give the defaults: the shipped 10 s made the
#: three of them 86 s of a CI run (tests/s3/test_clouds.py too) for a server that never answers.
SHORT_DEFAULT_READ_TIMEOUT_S = 1


def short_default_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the shipped defaults wait :data:`SHORT_DEFAULT_READ_TIMEOUT_S` without a byte instead of
    10 s, after asserting they are what the docs promise (10 s, two attempts on every store): a test
    with no option then takes the very path an operator's run takes (no timeout given, the defaults
    filled in), at a tenth of the wait."""
    from checkpoint_doctor.reading.storage import clouds, options

    assert options.S3_CONFIG_DEFAULTS["read_timeout"] == 10
    assert options.S3_CONFIG_DEFAULTS["retries"]["total_max_attempts"] == 2
    assert options.AZURE_CLIENT_DEFAULTS["read_timeout"] == 10
    assert options.AZURE_CLIENT_DEFAULTS["retry_total"] == 1
    assert clouds.GCS_READ_TIMEOUT_S == options.GCS_READ_TIMEOUT_S == 10
    assert options.GCS_ATTEMPTS == 2
    short = SHORT_DEFAULT_READ_TIMEOUT_S
    monkeypatch.setitem(options.S3_CONFIG_DEFAULTS, "read_timeout", short)
    monkeypatch.setitem(options.AZURE_CLIENT_DEFAULTS, "read_timeout", short)
    monkeypatch.setattr(clouds, "GCS_READ_TIMEOUT_S", short)


def test_default_options_answer_on_a_silent_endpoint(
    s3: S3, silent_server: SilentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no option at all: two attempts, each waiting out the default read timeout (10 s: about
    21 s in all, see S3_CONFIG_DEFAULTS; here 1 s, :func:`short_default_timeouts`)."""
    short_default_timeouts(monkeypatch)
    with pytest.raises(EndpointUnreachableError):
        load_checkpoint(s3.url("ckpt"), storage_options=_silent_options(silent_server))

    assert len(silent_server.accepted) == 2
