"""Secrets never leave the process: the one test of a secret storage option, and the redaction of
credentials in every URL the tool prints or writes and in third-party debug logs. Pure.

A URL may carry credentials in its user info (``s3://AKIA...:SECRET@bucket/ckpt``: s3fs reads that
as a bucket name, so it reaches no bucket, but it was echoed in errors, JSON, audit records, HTML
and metrics labels) or in its query (a presigned ``X-Amz-Signature``, an Azure SAS
``sig``). Botocore's DEBUG log prints the signed request's headers (``Authorization``,
``X-Amz-Security-Token`` from ``AWS_SESSION_TOKEN`` or ``--storage-option token=``) and its
canonical request; :class:`~checkpoint_doctor.redaction_filter.RedactingFilter` on the root handler scrubs
them before ``-vv`` prints.

What is kept: a user name without a password (``hdfs://etl@namenode``, Azure's
``abfss://container@account``) names a place, not a credential; on S3 and GCS no user info is
valid, so all of it goes.
"""

from __future__ import annotations

import functools
import re

#: Words that make a storage option (or a URL query parameter) a secret, matched anywhere in its
#: lower-cased name: never printed, never written to a plan.
SECRET_WORDS = (
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "credential",
    "session",
    "auth",
    "sas",
    "signature",
)
#: Query parameters that are secrets under a short name (Azure SAS ``sig``), and those whose name
#: only looks like one (S3's paging: ``max-keys``, ``key-marker``, ``continuation-token``).
SECRET_PARAMS = frozenset({"sig"})
#: Storage options that hold a secret under a name of no secret word: an Azure connection string
#: carries ``AccountKey=`` or ``SharedAccessSignature=`` (adlfs's ``connection_string``).
SECRET_OPTIONS = frozenset({"connection_string"})
PUBLIC_PARAMS = frozenset({"max-keys", "key-marker", "continuation-token", "start-after", "encoding-type"})
#: Where user info can only be a credential (bucket names hold neither ``:`` nor ``@``).
_BUCKET_PROTOCOLS = frozenset({"s3", "s3a", "s3n", "gs", "gcs"})
MASK = "***"

#: On S3 and GCS: user info up to the first ``@`` (an AWS secret key holds ``/`` and ``+``, unescaped
#: as operators paste it; the part before ``:`` never holds ``/``, so ``s3://bkt/a@b`` is a path).
_BUCKET_USERINFO = re.compile(
    r"\b(s3|s3a|s3n|gs|gcs)://([^/?#\s@:'\"<>]*(?::[^?#\s@'\"<>]*)?)@(?=[^\s@/'\"<>]+)", re.IGNORECASE
)
#: Elsewhere: ``user:password@`` (a ``/`` ends the authority: ``https://host:8080/a@b`` has none).
#: A scheme may hold ``_`` where it names a Kafka listener's protocol (``SASL_SSL://user:pw@host:9093``
#: in ``--kafka-bootstrap-servers``, issue 31 item 7): no ``\b`` before the scheme, since ``_`` is a
#: word character and ``SASL_SSL`` would otherwise be matched from ``SSL`` on.
_USERINFO = re.compile(
    r"(?<![A-Za-z0-9+.\-_])([A-Za-z][A-Za-z0-9+._-]*)://([^/?#\s@:'\"<>]*):([^/?#\s@'\"<>]*)@"
)
#: An Azure connection string's secrets (``AccountKey=...;``, ``SharedAccessSignature=sv=...&sig=...;``),
#: also where no URL is near (a connection string without ``BlobEndpoint=``).
_AZURE_CONNECTION = re.compile(r"\b(AccountKey|SharedAccessSignature)=([^;\s'\"<>]+)", re.IGNORECASE)
_QUERY = re.compile(r"([?&;])([A-Za-z0-9_.-]+)=([^&;#\s'\"<>]*)")
#: Header names a debug log prints with their values (``'Authorization': b'AWS4-HMAC...'`` in a
#: request's repr, ``x-amz-security-token:IQo...`` in botocore's canonical request).
_HEADERS = r"authorization|proxy-authorization|cookie|x-amz-security-token|x-amz-credential|x-amz-signature|x-ms-[a-z-]*key|x-goog-[a-z-]*token"


@functools.cache
def _log_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns only a debug log needs, compiled when one is first redacted (not at start-up):
    a header in a request's repr, a header line, the signature parts, botocore.auth's
    ``Signature:`` record (the hex on the next line)."""
    return (
        re.compile(rf"""(['"]({_HEADERS})['"]\s*:\s*b?)(['"])(.*?)\3""", re.IGNORECASE),
        re.compile(rf"(^|\n)(\s*({_HEADERS})\s*:\s*)([^\n]*)", re.IGNORECASE),
        re.compile(r"\b(Credential|Signature|SessionToken)=([^,\s'\"&]+)", re.IGNORECASE),
        re.compile(r"\b(Signature:\s*)([0-9a-fA-F]{16,})"),
    )


#: Values this process was given as secrets (:func:`remember_secret`): masked wherever they appear.
_REMEMBERED: set[str] = set()
#: Shorter values are not remembered: masking a 3-letter word everywhere would garble the output
#: (``SSL`` inside ``SASL_SSL``), and no credential is that short.
_MIN_REMEMBERED = 6


def remember_secret(value: str) -> None:
    """Mask ``value`` in everything printed or written from now on, whatever surrounds it.

    For a value the operator gave as a secret, whatever its key says (``--kafka-option KEY=@FILE``
    or ``KEY=env:NAME``: read off the command line because it is one) and for a password in the
    user info of ``--kafka-bootstrap-servers`` without a scheme (``user:pw@host:9092``).
    """
    value = value.strip()
    if len(value) >= _MIN_REMEMBERED:
        _REMEMBERED.add(value)
        # As a JSON document holds it (a quote or a backslash escaped).
        import json

        _REMEMBERED.add(json.dumps(value)[1:-1])


def remember_userinfo(servers: str) -> None:
    """Remember the password of each ``[SCHEME://]user:password@host:port`` in a server list."""
    for server in servers.split(","):
        authority = server.strip().partition("://")[2] or server.strip()
        userinfo, at, _ = authority.rpartition("@")
        if at and ":" in userinfo:
            remember_secret(userinfo.partition(":")[2])


def remember_url_userinfo(url: str) -> None:
    """Remember the password of a storage URL's user info (``s3://KEY:SECRET@bucket/ckpt``): a
    backend's own message may quote it without the scheme the patterns above need (botocore's
    ``Invalid bucket name "KEY:SECRET@bucket"``). User info ends at the first ``@`` (an AWS secret
    key may hold ``/``)."""
    rest = url.strip().partition("://")[2]
    userinfo, at, _ = rest.partition("@")
    if at and ":" in userinfo:
        remember_secret(userinfo.partition(":")[2])


def forget_secrets() -> None:
    """Forget every remembered value (a new command in the same process: tests, the API)."""
    _REMEMBERED.clear()


def _remembered(text: str) -> str:
    for value in sorted(_REMEMBERED, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    return text


def is_secret(key: str) -> bool:
    """Return whether a storage option key (or a URL query parameter) names a secret."""
    lower = key.lower()
    return lower in SECRET_PARAMS or lower in SECRET_OPTIONS or any(word in lower for word in SECRET_WORDS)


def _userinfo(match: re.Match[str]) -> str:
    if match.group(1).lower() in _BUCKET_PROTOCOLS:  # reached by _BUCKET_USERINFO already
        return match.group(0)
    return f"{match.group(1)}://{match.group(2)}:{MASK}@"


def _query(match: re.Match[str]) -> str:
    sep, name, value = match.groups()
    secret = is_secret(name) and name.lower() not in PUBLIC_PARAMS
    return f"{sep}{name}={MASK}" if value and secret else match.group(0)


def redact(text: str) -> str:
    """Return ``text`` with the credentials of every URL in it masked: user info (see the module
    docstring) and secret query parameters."""
    if _REMEMBERED:
        text = _remembered(text)
    if "://" not in text and "=" not in text:
        return text
    if "ccount" in text or "ccess" in text:  # AccountKey=, SharedAccessSignature= (any case)
        text = _AZURE_CONNECTION.sub(lambda m: f"{m.group(1)}={MASK}", text)
    text = _BUCKET_USERINFO.sub(lambda m: f"{m.group(1)}://{MASK}@", text)
    text = _USERINFO.sub(_userinfo, text)
    if "://" in text and "=" in text:
        text = _QUERY.sub(_query, text)
    return text


def redact_log(text: str) -> str:
    """Return a log message with URLs redacted (:func:`redact`) and credential headers masked."""
    text = redact(text)
    header_repr, header_line, auth_parts, signature_line = _log_patterns()
    text = header_repr.sub(lambda m: f"{m.group(1)}{m.group(3)}{MASK}{m.group(3)}", text)
    text = header_line.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = signature_line.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return auth_parts.sub(lambda m: f"{m.group(1)}={MASK}", text)
