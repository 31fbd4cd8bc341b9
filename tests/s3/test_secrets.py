"""No credential is printed or written: user info in a URL given to any command, and
botocore's DEBUG log (``-vv``) of requests signed with a session token, against the moto server."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis import DiagnoseOptions, diagnose
from checkpoint_doctor.planning import PlanOptions, plan_repair
from checkpoint_doctor.reading.pipeline import load_checkpoint
from tests.s3.conftest import S3
from tests.s3.emulators import AZURITE_ACCOUNT, AZURITE_KEY
from tests.s3.server import seed_objects
from tests.scenarios import FIXTURES
from tests.storage.builders import checkpoint_files

KEY_ID, SECRET = "AKIAEXAMPLEKEY", "SUPERSECRETVALUE123"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"


def leaked(*texts: str) -> list[str]:
    return [t for t in texts if KEY_ID in t or SECRET in t or TOKEN in t]


def _plan_file(tmp_path: Path, url: str) -> Path:
    """A real plan (of a local fixture) naming ``url`` as its checkpoint, its id recomputed."""
    cp = tmp_path / "local"
    shutil.copytree(FIXTURES / "spark-4.3.0" / "missing-prev-offsets" / "checkpoint", cp)
    snapshot = load_checkpoint(str(cp))
    dopts = DiagnoseOptions(spark="4.3", mode="micro-batch", live_window_s=0)
    plan = plan_repair(snapshot, diagnose(snapshot, dopts), PlanOptions(diagnose=dopts))
    path = tmp_path / "plan.json"
    path.write_text(dataclasses.replace(plan, checkpoint=url).to_json())
    return path


COMMANDS = {
    "inspect": lambda u, t: ["inspect", u],
    "diagnose": lambda u, t: ["diagnose", u, "--format", "json"],
    "plan": lambda u, t: ["plan", u, "-o", str(t / "out.json")],
    "apply": lambda u, t: ["apply", str(_plan_file(t, u)), "--yes", "--format", "json"],
    "undo": lambda u, t: ["undo", f"{u}.checkpoint-doctor/p/journal.jsonl"],
    "history": lambda u, t: ["history", u, "--format", "json"],
    "audit": lambda u, t: [
        "audit",
        u,
        "--format",
        "jsonl",
        "--html",
        str(t / "audit.html"),
        "--metrics",
        str(t / "audit.prom"),
    ],
    "catch-up": lambda u, t: ["catch-up", u, "--job", "nowhere:job", "--format", "json"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_user_info_in_a_url_is_never_printed_or_written(
    s3: S3, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    seed_objects(s3.bucket, "ckpt", checkpoint_files())
    url = f"s3://{KEY_ID}:{SECRET}@{s3.bucket}/ckpt"
    args = [*COMMANDS[command](url, tmp_path), "--storage-option", f"endpoint_url={s3.endpoint}"]

    code = main(args)
    out, err = capsys.readouterr()

    assert code != 0  # s3fs reads the user info as part of the bucket name: nothing is reachable
    written = [
        p.read_text(errors="replace") for p in tmp_path.iterdir() if p.is_file() and p.name != "plan.json"
    ]
    assert not leaked(out, err, *written)
    if command != "catch-up":  # which, without pyspark in this venv, stops before the URL
        assert "s3://***@" in out + err  # the URL is still named, its credentials masked
    if command == "audit":
        assert written and all("s3://***@" in text for text in written)


@pytest.mark.parametrize("how", ["environment", "storage-option"])
def test_debug_logs_never_show_the_session_token_or_the_signature(
    s3: S3, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    seed_objects(s3.bucket, "ckpt", checkpoint_files())
    # s3fs sends the token only with the key and secret it belongs to
    extra = [*("--storage-option", "key=testing"), *("--storage-option", "secret=testing")]
    extra += ["--storage-option", f"token={TOKEN}"]
    if how == "environment":
        monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
        extra = []

    code = main(
        ["diagnose", s3.url("ckpt"), "-vv", "--storage-option", f"endpoint_url={s3.endpoint}", *extra]
    )
    out, err = capsys.readouterr()

    assert code in (0, 1, 4), err
    assert "X-Amz-Security-Token" in err  # botocore's DEBUG log of the signed requests was shown...
    assert "'Authorization': b'***'" in err and "x-amz-security-token:***" in err
    assert TOKEN not in out + err  # ...without the token
    assert "Credential=testing" not in err
    assert "max-keys=1" in err or "list-type=2" in err  # a query's other parameters are kept


# ------------------------------------------------------------------ Azure and GCS (issue 37)

SAS_SIG = "c2lnbmF0dXJlU0VDUkVU"
OAUTH = "ya29.a0SECRETOAUTHTOKEN"


def _azure_sas(azurite: Any) -> str:
    """A real account SAS for Azurite's account, signed with its key."""
    from datetime import datetime, timedelta, timezone

    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    return generate_account_sas(
        AZURITE_ACCOUNT,
        AZURITE_KEY,
        ResourceTypes(service=True, container=True, object=True),
        AccountSasPermissions(read=True, list=True, write=True, delete=True, create=True, add=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
    )


@pytest.mark.parametrize("how", ["azure-account-key", "azure-sas", "azure-connection-option", "gcs-oauth"])
def test_cloud_secrets_are_never_printed_or_written_debug_included(
    how: str, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """Account keys, SAS signatures and OAuth tokens, with ``-vv --debug``: the SDKs' DEBUG logs
    (Azure's request logs, gcsfs's) are shown, the secrets are not, in what is printed or written."""
    store = request.getfixturevalue("gcs" if how.startswith("gcs") else "azure")
    for rel, data in checkpoint_files().items():
        store.fs.pipe_file(store.key(f"ckpt/{rel}"), data)
    extra: list[str] = []
    secrets = []
    if how.startswith("azure"):
        azurite = request.getfixturevalue("azurite")
        secrets.append(AZURITE_KEY)
        if how == "azure-sas":
            sas = _azure_sas(azurite)
            secrets = [dict(p.split("=", 1) for p in sas.split("&"))["sig"]]
            monkeypatch.setenv(
                "AZURE_STORAGE_CONNECTION_STRING",
                f"BlobEndpoint={azurite.url};SharedAccessSignature={sas}",
            )
        elif how == "azure-connection-option":
            monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
            extra = ["--storage-option", f"connection_string={azurite.connection_string()}"]
    else:
        secrets.append(OAUTH)
        extra = ["--storage-option", f"token={OAUTH}"]
    plan_file = tmp_path / "plan.json"

    try:
        codes = [
            main(["diagnose", store.url("ckpt"), "-vv", "--debug", "--format", "json", *extra]),
            main(
                ["plan", store.url("ckpt"), "-vv", "--debug", "-o", str(plan_file), "--spark", "4.3", *extra]
            ),
        ]
        out, err = capsys.readouterr()
    finally:
        # -vv left the root handler at DEBUG on this test's captured stderr: the SDKs' threads (an
        # aiohttp session closed by adlfs's finalizer) would log into it, closed, during a later test.
        logging.basicConfig(level=logging.WARNING, stream=sys.__stderr__, force=True)

    assert codes[0] in (0, 1, 4) and codes[1] in (0, 1, 4), err
    assert "DEBUG" in err or "debug" in err.lower()  # the SDKs' debug logs were shown...
    written = plan_file.read_text() if plan_file.exists() else ""
    assert [s for s in secrets if s in out + err + written] == []  # ...without a secret


def test_an_azure_connection_string_is_a_secret_option_and_its_keys_are_masked() -> None:
    from checkpoint_doctor.redaction import is_secret, redact

    # A plan keeps no secret option (planning.plan), a printed command shows none (render.hints).
    assert is_secret("connection_string") and not is_secret("connection_timeout")
    text = f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURITE_KEY};EndpointSuffix=core.windows.net"
    assert (
        redact(text)
        == "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=***;EndpointSuffix=core.windows.net"
    )
    assert redact("BlobEndpoint=http://h/acct;SharedAccessSignature=sv=2024&sig=abc") == (
        "BlobEndpoint=http://h/acct;SharedAccessSignature=***"
    )
