"""A Delta table's log as plain data, without a JVM: the I/O edge of the Delta checks.

The log is read the way Delta's PROTOCOL.md lays it out, through the project's storage layer (so a
table on S3 is read like a local one): ``_delta_log/<version>.json`` commits, ``_last_checkpoint``
and ``<version>.checkpoint[...].parquet`` checkpoints. Each commit file still present is parsed
(``commitInfo``, ``metaData``, ``add``/``remove`` with ``dataChange``, ``txn``), which is all the
Delta source and sink decide by, and most tables are read without any extra package. When log
cleanup (``MetadataCleanup``) has removed the commits before the newest checkpoint, the table id,
the schema and the transaction versions live in that checkpoint's Parquet only: those are asked of
delta-rs (``deltalake``, the ``delta`` extra), which reads the snapshot checkpoint + later commits.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from checkpoint_doctor.errors import FileTooLargeError, MissingDependencyError, StorageError, UsageError
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable
from checkpoint_doctor.reading.budget import BUDGET
from checkpoint_doctor.reading.storage import Storage, open_storage

LOG_DIR = "_delta_log"
_COMMIT = re.compile(r"^(\d{20})\.json$")
# <v>.checkpoint.parquet, multi-part <v>.checkpoint.<i>.<n>.parquet, V2 <v>.checkpoint.<uuid>.(json|parquet)
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.[^/]+)?\.(parquet|json)$")
#: A commit file larger than this is not read (a table's commits are KBs; a log is not a data file).
MAX_COMMIT_BYTES = 64 * 1024 * 1024
#: Delta's versions (and a txn action's version) are Java longs (``FileNames.deltaVersion`` is a
#: ``toLong``): a file named with a larger number is none Delta can list, a larger txn version none
#: it can read.
MAX_VERSION = 2**63 - 1


def is_delta_table(names: Iterable[str]) -> bool:
    """Return whether a ``_delta_log`` listing (file names) holds a commit or a checkpoint."""
    return any(_COMMIT.match(n) or _CHECKPOINT.match(n) for n in names)


def parse_commit(version: int, data: bytes) -> DeltaCommit:
    """Parse one commit file: newline-delimited JSON actions (PROTOCOL.md, Delta Log Entries).

    Every field read is checked for the type delta-spark's ``SingleAction`` gives it (Jackson fails
    the read of a commit whose ``commitInfo`` is a list, whose ``metaData.id`` is an object or whose
    txn version is no long): such a commit is damaged, and says which action made it so.

    Raises:
        ValueError: a line is not a JSON object, or an action read is not of its protocol's shape.
    """
    operation = schema = table_id = None
    adds = removes = 0
    rows: int | None = 0
    txns: list[tuple[str, int]] = []
    # Line by line from the bytes (Delta writes one action a line, "\n"): no str of the whole file
    # and no list of its lines beside its bytes (a commit may be 64 MiB).
    for raw in io.BytesIO(data):
        line = raw.decode("utf-8")
        if not line.strip():
            continue
        action = _json(line)
        if not isinstance(action, dict):
            raise ValueError(f"action is not a JSON object: {line[:80]!r}")
        if "commitInfo" in action:
            info = _object(action, "commitInfo")
            operation = _text(info, "operation", "commitInfo.operation")
        if "metaData" in action:
            meta = _object(action, "metaData")
            schema = _text(meta, "schemaString", "metaData.schemaString")
            table_id = _text(meta, "id", "metaData.id")
        for kind in ("add", "remove"):
            body = action.get(kind)
            # dataChange false (OPTIMIZE, compaction) moves files without changing data: the source skips it.
            if isinstance(body, dict) and body.get("dataChange", True):
                if kind == "add":
                    adds += 1
                    rows = _plus_rows(rows, body.get("stats"))
                else:
                    removes += 1
        if "txn" in action:
            txn = _object(action, "txn")
            app = txn.get("appId")
            if not isinstance(app, str):
                raise ValueError(f"txn.appId is not a string: {_short(app)}")
            txns.append((app, _long(txn.get("version"), "txn.version")))
    return DeltaCommit(version, operation, adds, removes, schema, table_id, tuple(txns), rows)


def _json(text: str) -> Any:
    """One JSON value; a nesting too deep for the parser (a 200,000-deep object) is a damaged line."""
    try:
        # Decimal: a version of 1e400 is named as written, not as the float inf it would become.
        return json.loads(text, parse_float=Decimal)
    except RecursionError:
        raise ValueError("a JSON value nested too deep to read") from None


def _short(value: Any) -> str:
    return (str(value) if isinstance(value, Decimal) else repr(value))[:60]


def _object(action: dict[str, Any], key: str) -> dict[str, Any]:
    body = action[key]
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ValueError(f"{key} is not a JSON object: {_short(body)}")
    return body


def _text(body: dict[str, Any], key: str, what: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} is not a string: {_short(value)}")
    return value


def _long(value: Any, what: str) -> int:
    """A Java long (a txn version): an integer, or its digits as a string (Jackson coerces them)."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) <= 20:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value <= MAX_VERSION:
        raise ValueError(f"{what} is not a long: {_short(value)}")
    return value


def _plus_rows(rows: int | None, stats: Any) -> int | None:
    """Add an add action's ``stats.numRecords`` (a JSON string, PROTOCOL.md Per-file Statistics)."""
    if rows is None or not isinstance(stats, str):
        return None
    try:
        count = _json(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return rows + count if isinstance(count, int) and not isinstance(count, bool) else None


def chain(commit_versions: Iterable[int], checkpoint_versions: Iterable[int]) -> tuple[int, int, int | None]:
    """Return ``(latest, earliest, checkpoint)``: the newest version, the lowest version from which
    every commit file up to the newest is present, and the newest checkpoint at or below the newest.

    Raises:
        ValueError: neither a commit nor a checkpoint.
    """
    commits = set(commit_versions)
    checkpoints = set(checkpoint_versions)
    if not commits and not checkpoints:
        raise ValueError("no commit and no checkpoint in _delta_log")
    latest = max(commits | checkpoints)
    # A checkpoint newer than every commit file is the whole state: no commit is left to read.
    earliest = latest if latest in commits else latest + 1
    while earliest - 1 in commits:
        earliest -= 1
    cps = [v for v in checkpoints if v <= latest]
    return latest, earliest, max(cps) if cps else None


def _replay(commits: list[DeltaCommit]) -> tuple[str | None, str | None, dict[str, int]]:
    table_id = schema = None
    txns: dict[str, int] = {}
    for c in commits:
        if c.table_id is not None:
            table_id = c.table_id
        if c.schema is not None:
            schema = c.schema
        for app, version in c.txns:
            txns[app] = version  # "the latest version seen for a given appId wins" (PROTOCOL.md)
    return table_id, schema, txns


def _deltalake() -> Any:
    try:
        import deltalake
    except ImportError:
        raise MissingDependencyError("reading a Delta checkpoint", "delta", "deltalake") from None
    return deltalake


def _delta_rs_options(storage_options: Mapping[str, Any]) -> dict[str, str]:
    """s3fs's options (``key``, ``secret``, ``client_kwargs.endpoint_url``) in delta-rs's names."""
    out: dict[str, str] = {}
    kwargs = storage_options.get("client_kwargs") or {}
    endpoint = storage_options.get("endpoint_url") or kwargs.get("endpoint_url")
    if endpoint:
        out["AWS_ENDPOINT_URL"] = str(endpoint)
        if str(endpoint).startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    for ours, theirs in (
        ("key", "AWS_ACCESS_KEY_ID"),
        ("secret", "AWS_SECRET_ACCESS_KEY"),
        ("token", "AWS_SESSION_TOKEN"),
    ):
        if storage_options.get(ours):
            out[theirs] = str(storage_options[ours])
    region = kwargs.get("region_name") or storage_options.get("region_name")
    if region:
        out["AWS_REGION"] = str(region)
    return out


def _only_regular_files(log: Storage) -> None:
    """Refuse a local ``_delta_log`` holding anything delta-rs could open that is not a regular file
    or a directory: it opens ``_last_checkpoint`` and the log's files by name, blocking, and a FIFO
    there (or a link to one, or to a device) hangs it forever (issue 31). Our own reads open with
    O_NONBLOCK and list regular files only; delta-rs is not ours to tell.

    Raises:
        UsageError: such an entry, named.
    """
    full_path = getattr(log, "full_path", None)
    if not log.is_local or full_path is None:
        return  # an object store holds objects only
    try:
        entries = list(os.scandir(full_path("")))
    except OSError:
        return  # delta-rs meets the same error and says so
    for entry in entries:
        try:
            mode = os.stat(entry.path).st_mode  # followed: a link to a FIFO blocks as the FIFO does
        except OSError:
            continue  # a dangling link: delta-rs fails on it with an error, it does not hang
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise UsageError(
                f"{log.url_of(entry.name)} is not a regular file (a FIFO, socket or device): the table's "
                "checkpoint is not read through it",
                hint="remove it from the table's _delta_log (Delta writes regular files only), then run again",
            )


def _snapshot(
    url: str,
    storage_options: Mapping[str, Any],
    app_ids: Iterable[str],
    log: Storage | None = None,
    version: int | None = None,
) -> tuple[str, str, dict[str, int]]:
    """Table id, schema and txn versions of the snapshot at ``version`` (the newest the listing
    shows; None: delta-rs's latest), read by delta-rs.

    Asked at the listed version, delta-rs finds the newest checkpoint at or below it by listing, as
    delta-spark does when its ``_last_checkpoint`` hint names no checkpoint (SnapshotManagement lists
    the log again): unasked, delta-rs trusts a broken hint and fails ("Had a _last_checkpoint hint but
    didn't find any checkpoints"), which left the table unread and a CD209 restart at exit 0.
    """
    if log is not None:
        _only_regular_files(log)
    dl = _deltalake()
    uri = "s3://" + url[len("s3a://") :] if url.startswith("s3a://") else url
    try:
        table = dl.DeltaTable(
            uri,
            version=version,
            storage_options=_delta_rs_options(storage_options) or None,
        )
        meta = table.metadata()
        txns = {}
        for app in app_ids:
            version = table.transaction_version(app)
            if version is not None:
                txns[app] = int(version)
        return str(meta.id), table.schema().to_json(), txns
    except Exception as exc:  # noqa: BLE001 - delta-rs raises its own and OSError kinds
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise StorageError(
            url,
            "read the Delta checkpoint of",
            f"delta-rs: {reason}",
            hint="check the table with Spark or delta-rs",
        ) from None


def commit_names(names: Iterable[str]) -> dict[int, str]:
    """Return the commit files of a ``_delta_log`` listing by version."""
    # Only a name holding ".json" can match: most of a log is checksums and their Hadoop .crc side
    # files, whose names the pattern need not be asked about (asked per table of an audit).
    return {int(m.group(1)): n for n in names if ".json" in n and (m := _COMMIT.match(n))}


def checkpoint_versions(names: Iterable[str]) -> set[int]:
    """Return the versions of the checkpoint files of a ``_delta_log`` listing."""
    return {int(m.group(1)) for n in names if ".checkpoint" in n and (m := _CHECKPOINT.match(n))}


#: A commit is first asked for with this bound, in batches of :data:`BATCH_FILES` (one request
#: batch each on an object store): real commits are KBs, and a larger one is read again alone, with
#: :data:`MAX_COMMIT_BYTES`. No size is asked first (no stat, no listing: an audit lists once).
SMALL_COMMIT_BYTES = 1024 * 1024
BATCH_FILES = 16


def read_commits(log: Storage, commits: Mapping[int, str], first: int, last: int) -> list[DeltaCommit]:
    """Read and parse the commit files ``first``..``last`` (``commits``: :func:`commit_names`) of the
    ``_delta_log`` store ``log``: :data:`BATCH_FILES` at a time of :data:`SMALL_COMMIT_BYTES` at most
    each, then each larger one alone, every batch parsed and let go before the next is read and held
    in the process's byte budget (:mod:`checkpoint_doctor.reading.budget`; never two holds at once,
    so no reader waits on itself). 40 commits of 63 MB were read in one batch (2.67 GB resident, issue
    31), and an audit's workers read tables together.

    Raises:
        UsageError: a commit is not newline-delimited JSON actions.
        StorageError: a commit cannot be read.
    """
    # The listed commits in the span, not the span's numbers: a version is any long, and a log whose
    # newest file is named 09223372036854775806 spans more numbers than can be counted.
    wanted = sorted((v, n) for v, n in commits.items() if first <= v <= last)
    parsed: list[DeltaCommit] = []
    for at in range(0, len(wanted), BATCH_FILES):
        batch = wanted[at : at + BATCH_FILES]
        large: list[tuple[int, str]] = []
        with BUDGET.hold(len(batch) * SMALL_COMMIT_BYTES):
            data = log.read_many([n for _, n in batch], max_bytes=SMALL_COMMIT_BYTES)
            for version, name in batch:
                got = data.pop(name)
                if isinstance(got, FileTooLargeError):
                    large.append((version, name))
                else:
                    parsed.append(_parsed(log, version, name, got))
                del got
        for version, name in large:
            with BUDGET.hold(MAX_COMMIT_BYTES):
                parsed.append(_parsed(log, version, name, _read_one(log, name)))
    return sorted(parsed, key=lambda c: c.version)


def first_schema(
    log: Storage, names: Iterable[str], parsed: list[DeltaCommit], first: int
) -> tuple[int, str] | None:
    """Return (``first``, the schema in force there) when the commits read from ``first`` on change the
    schema after it but the commit at ``first`` says nothing of it (no ``metaData``): the version
    checksum of ``first`` holds it. None when no later commit read changes the schema (the latest
    schema is then the one in force throughout: nothing more is read) or it cannot be told."""
    from checkpoint_doctor.world.delta_checksum import read_schema

    if not parsed or parsed[0].version != first:
        return None
    if parsed[0].schema is not None:
        return first, parsed[0].schema
    if not any(c.schema is not None for c in parsed[1:]):
        return None
    schema = read_schema(log, set(names), first)
    return (first, schema) if schema is not None else None


def _read_one(log: Storage, name: str) -> bytes | StorageError:
    try:
        return log.read(name, max_bytes=MAX_COMMIT_BYTES)
    except StorageError as exc:
        return exc


def _parsed(log: Storage, version: int, name: str, got: bytes | StorageError) -> DeltaCommit:
    if isinstance(got, StorageError):
        raise got
    try:
        return parse_commit(version, got)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{log.url_of(name)} is not a Delta commit: {exc}",
            hint="the table's log is damaged; read it with Spark or delta-rs to see what they make of it",
        ) from None


def read_table(
    url: str,
    storage_options: Mapping[str, Any] | None = None,
    app_ids: Iterable[str] = (),
    *,
    names: Iterable[str] | None = None,
    from_version: int | None = None,
    commits: bool = True,
    store: Storage | None = None,
) -> DeltaTable:
    """Return what a Delta table's log says now (``app_ids``: query ids whose txn version to find
    when it lives in a checkpoint only).

    ``names`` are the file names in ``_delta_log`` when the caller listed it already (an audit's one
    listing); ``from_version``: only the commits from that version on are needed (a stream's
    offset), the table's id, schema and txns then come from the newest version checksum when it has
    them; ``commits`` False: only the id, schema and txns are needed (pairing), one read of that
    checksum when it has them (:mod:`checkpoint_doctor.world.delta_checksum`), else every commit;
    ``store``: the table's storage when the caller has it open (an audit's root, no new client).

    Raises:
        UsageError: ``url`` is not a Delta table (no commit or checkpoint in ``_delta_log``).
        MissingDependencyError: the commits before the newest checkpoint are gone, the newest
            version checksum does not hold the state, and deltalake is not installed.
        StorageError: the log cannot be listed or read.
    """
    from checkpoint_doctor.world.delta_checksum import read_checksum

    options = dict(storage_options or {})
    log = (store or open_storage(url, options)).child(LOG_DIR)
    if names is None:
        names = [f.path for f in log.list_tree(missing_ok=True).files if "/" not in f.path]
    names = list(names)
    beyond = sorted(
        n for n in names if (m := _COMMIT.match(n) or _CHECKPOINT.match(n)) and int(m.group(1)) > MAX_VERSION
    )
    if beyond:
        raise UsageError(
            f"{log.url_of(beyond[0])} names version {int(beyond[0][:20])}, beyond a Java long: Delta cannot list "
            "this log (FileNames.deltaVersion)",
            hint="move the file out of the table's _delta_log if it is not the table's, then run again",
        )
    commit_versions = commit_names(names)
    try:
        latest, earliest, checkpoint = chain(commit_versions, checkpoint_versions(names))
    except ValueError:
        raise UsageError(
            f"{url} is not a Delta table: {log.url} holds no commit or checkpoint",
            hint="name the table's root directory (the one holding _delta_log) with --delta-table",
        ) from None
    # The newest version checksum (<v>.crc) holds the table's whole state at that version: read it
    # instead of the commits' replay when those are not all wanted, or not all there.
    state = None
    if not commits or earliest > 0 or (from_version is not None and from_version > earliest):
        state = read_checksum(log, names, latest)
    if state is not None and not commits:
        return DeltaTable(
            url=url,
            table_id=state.table_id,
            latest_version=latest,
            earliest_version=earliest,
            checkpoint_version=checkpoint,
            schema=state.schema,
            txns=state.txns,
            commits=(),
        )
    first = (
        earliest if state is None or from_version is None else max(earliest, min(from_version, latest + 1))
    )
    parsed = read_commits(log, commit_versions, first, latest)
    table_id, schema, txns = _replay(parsed)
    if state is not None:
        table_id, schema, txns = state.table_id, state.schema, dict(state.txns)
    elif earliest > 0:
        # The state before ``earliest`` is in the checkpoint only (the commits were cleaned up).
        snap_id, snap_schema, snap_txns = _snapshot(url, options, set(app_ids) - set(txns), log, latest)
        table_id = table_id or snap_id
        schema = schema or snap_schema
        txns = {**snap_txns, **txns}
    return DeltaTable(
        url=url,
        table_id=table_id,
        latest_version=latest,
        earliest_version=earliest,
        checkpoint_version=checkpoint,
        schema=schema,
        txns=tuple(sorted(txns.items())),
        commits=tuple(parsed),
        first_schema=first_schema(log, names, parsed, first),
    )
