"""No secret printed, in any output, ``--debug`` included (issue 31 item 7).

Every form a credential reaches the tool in, said back through every way the CLI speaks: the one-line
error, the JSON document, and ``--debug``'s traceback (the exception's own text and its cause's, which
``traceback.print_exc`` printed as they were). The faults of the traceback cases are injected (an
exception holding the form, raised where a command runs); the Kafka cases are librdkafka's own
refusals and a broker that does not answer (a local port nothing listens on).
"""

from __future__ import annotations

import json
import socket

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.errors import UsageError
from tests.scenarios import REPO

#: Fake credentials, each long and unique enough that any trace of it is a leak.
SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYfakeSECRET"
SIGNATURE = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
ACCESS_KEY = "AKIAFAKEACCESSKEY777"
TOKEN = "IQoJb3JpZ2luX2VjEFakeSessionToken"

#: Where a credential can sit in an exception's text (a URL a backend was given, a debug repr of a
#: signed request, a broker list): the label, the text, what must not be printed.
FORMS = [
    ("s3 user info", f"s3://{ACCESS_KEY}:{SECRET}@bucket/ckpt", (ACCESS_KEY, SECRET)),
    ("s3a user info, '/' and '+' in the key", f"s3a://{ACCESS_KEY}:{SECRET}/x+y@bucket/ckpt", (SECRET,)),
    ("gcs user info", f"gs://svc:{SECRET}@bucket/ckpt", (SECRET,)),
    (
        "presigned S3 URL",
        f"https://bucket.s3.amazonaws.com/ckpt/offsets/0?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential={ACCESS_KEY}%2F20261128%2Fus-east-1%2Fs3%2Faws4_request"
        f"&X-Amz-Security-Token={TOKEN}&X-Amz-Signature={SIGNATURE}",
        (ACCESS_KEY, SIGNATURE, TOKEN),
    ),
    (
        "signed request headers",
        f"{{'Authorization': b'AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20261128/us-east-1/s3/aws4_request, "
        f"SignedHeaders=host, Signature={SIGNATURE}', 'X-Amz-Security-Token': b'{TOKEN}'}}",
        (ACCESS_KEY, SIGNATURE, TOKEN),
    ),
    (
        "Azure SAS",
        f"https://acct.blob.core.windows.net/c/ckpt?sv=2022-11-02&sp=r&sig={SIGNATURE}",
        (SIGNATURE,),
    ),
    ("https user info", f"https://etl:{SECRET}@objects.example.com/ckpt", (SECRET,)),
    ("Kafka listener user info", f"SASL_SSL://alice:{SECRET}@broker-1:9093,broker-2:9093", (SECRET,)),
]


def _raising(monkeypatch, exc: BaseException) -> None:
    """Make ``diagnose`` raise ``exc`` where it reads the checkpoint (an injected fault)."""

    def load(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr("checkpoint_doctor.cli.read.load_for_verdict", load)


@pytest.mark.parametrize(("label", "text", "secrets"), FORMS, ids=[f[0] for f in FORMS])
@pytest.mark.parametrize("kind", ["internal", "usage"])
def test_debug_tracebacks_mask_every_credential_form(label, text, secrets, kind, capsys, monkeypatch):
    if kind == "internal":
        fault: BaseException = RuntimeError(f"request to {text} failed")
    else:  # a refusal whose cause (printed by the traceback too) holds the credential
        fault = UsageError("cannot open the checkpoint", hint="check its URL")
        fault.__cause__ = OSError(f"{text}: connection reset")

    _raising(monkeypatch, fault)

    code = main(["diagnose", "somewhere", "--debug"])
    out, err = capsys.readouterr()

    assert code in (2, 16) and "Traceback (most recent call last)" in err, err
    for secret in secrets:
        assert secret not in out + err, f"{label}: {secret} printed:\n{err}"
    assert "***" in err


def _kafka_checkpoint() -> str:
    return str(REPO / "fixtures" / "kafka" / "spark-4.1.4" / "kafka-stateful" / "checkpoint")


@pytest.mark.parametrize("given", ["file", "env"])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_kafka_option_read_from_a_file_or_the_environment_is_never_echoed(
    given, fmt, tmp_path, capsys, monkeypatch
):
    """``security.protocol`` does not look secret, but a value read off the command line is one:
    librdkafka's refusal quotes it ("Invalid value ... for configuration property")."""
    value = f"PROTO-{SECRET}"
    if given == "file":
        (tmp_path / "proto").write_text(value + "\n", encoding="utf-8")
        option = f"security.protocol=@{tmp_path / 'proto'}"
    else:
        monkeypatch.setenv("CD_TEST_PROTOCOL", value)
        option = "security.protocol=env:CD_TEST_PROTOCOL"

    code = main(
        [
            *("diagnose", _kafka_checkpoint(), "--live-window", "0", "--format", fmt),
            *("--kafka-bootstrap-servers", "127.0.0.1:9", "--kafka-option", option, "--debug"),
        ]
    )
    out, err = capsys.readouterr()

    assert code == 2, out + err
    assert 'for configuration property "security.protocol"' in err
    assert SECRET not in out + err
    if fmt == "json":
        assert (
            'Invalid value \\"***\\"' in out or 'Invalid value "***"' in json.loads(out)["error"]["message"]
        )


@pytest.mark.parametrize(
    "servers", ["SASL_SSL://alice:{secret}@127.0.0.1:{port}", "alice:{secret}@127.0.0.1:{port}"]
)
def test_a_password_in_the_bootstrap_servers_is_masked_in_errors_and_json(servers, capsys, monkeypatch):
    from checkpoint_doctor.world.kafka import KafkaReader

    # The broker's answer is awaited 1 s, not 8 (a clock: what is awaited does not change).
    monkeypatch.setattr(KafkaReader.__init__, "__defaults__", (None, 1.0))
    with socket.socket() as sock:  # a local port nothing listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        bootstrap = servers.format(secret=SECRET, port=sock.getsockname()[1])
        code = main(
            [
                *("diagnose", _kafka_checkpoint(), "--live-window", "0", "--format", "json", "--debug"),
                *("--kafka-bootstrap-servers", bootstrap),
            ]
        )
    out, err = capsys.readouterr()

    assert code == 8, out + err
    assert "alice:***@127.0.0.1" in err and SECRET not in err
    message = json.loads(out)["error"]["message"]
    assert "alice:***@127.0.0.1" in message and SECRET not in out


def test_a_storage_option_secret_quoted_by_a_backend_is_masked_in_the_error_and_the_traceback(
    capsys, monkeypatch
):
    """A backend's exception quoting its options (a dict repr: no URL, no header) said the secret
    on the error line, in the JSON document and in --debug's traceback."""
    fault = RuntimeError(f"cannot connect with {{'key': 'AKIAFAKE', 'secret': '{SECRET}'}}")

    def load(*_args, **_kwargs):  # where the checkpoint is opened, with the options parsed
        raise fault

    monkeypatch.setattr("checkpoint_doctor.world.load.load_for_verdict", load)

    code = main(
        [
            "diagnose",
            "s3://bucket/ckpt",
            "--storage-option",
            f"secret={SECRET}",
            "--format",
            "json",
            "--debug",
        ]
    )
    out, err = capsys.readouterr()

    assert code == 16 and "Traceback (most recent call last)" in err, err
    assert SECRET not in out + err
    assert "'secret': '***'" in json.loads(out)["error"]["message"]


def test_a_url_credential_a_backend_quotes_without_its_scheme_is_masked(capsys):
    """botocore validates the bucket before any request and quotes it whole, user info included and
    no ``s3://`` before it (``Invalid bucket name "KEY:SECRET@bkt"``): --debug's traceback said the
    secret key, which no URL pattern can see there."""
    code = main(
        [
            "--debug",
            "diagnose",
            f"s3://AKIAFAKE:{SECRET}@bkt/ckpt",
            "--storage-option",
            "client_kwargs.endpoint_url=http://127.0.0.1:9",
        ]
    )
    out, err = capsys.readouterr()

    assert code != 0 and "Invalid bucket name" in err, err
    assert SECRET not in out + err
