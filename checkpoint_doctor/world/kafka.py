"""The topics' live positions, asked of a Kafka broker with confluent-kafka (the ``kafka`` extra).

The I/O edge of the Kafka check. :class:`KafkaReader` holds one admin client (and, when a
countdown needs record timestamps, one consumer) for a whole command; per call it describes the
topics (``AdminClient.describe_topics``: a missing topic and an unauthorized one are told apart),
lists every partition's earliest and latest offsets (``list_offsets`` with
``OffsetSpec.earliest/latest``, KIP-396, two batched requests), describes the topics' retention
settings (``describe_configs``) and fetches the one record at each checkpoint position still held
(its timestamp starts the retention countdown), every call bounded in time. It returns
:class:`KafkaLive`, the plain data ``diagnosis.sources.kafka_positions.predict`` and
``diagnosis.sources.kafka_retention.countdown`` take. A topic read once is not asked again (an
audit reads each topic once, whatever number of checkpoints read it).

A broker that cannot be reached is an :class:`EndpointUnreachableError` naming the address (exit
8, as for an object store); a failed SASL login or a topic the principal may not describe is an
:class:`AccessDeniedError`. After the broker failed once, a reader fails at once with the same
error (an audit of many Kafka checkpoints does not wait for the timeout on each).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from checkpoint_doctor.errors import (
    AccessDeniedError,
    EndpointUnreachableError,
    MissingDependencyError,
    StorageError,
    UsageError,
)
from checkpoint_doctor.model import KafkaLive, KafkaOffset, KafkaRetention, legal_topic
from checkpoint_doctor.redaction import MASK, is_secret, remember_secret

#: Seconds each broker call may take; a broker that is down fails the command within about twice this.
TIMEOUT_S = 8.0
#: Seconds the fetch of the records at the checkpoint's positions may take in all (their
#: timestamps only start the retention countdown: a slow fetch leaves it "unknown", not an error).
PEEK_TIMEOUT_S = 5.0
#: Bytes one partition's fetch may bring back: the broker returns at least one record batch
#: whatever this says (KIP-74), so the first record comes, and 10,000 partitions stay small.
PEEK_PARTITION_BYTES = 1024


def _transient_codes(ck: Any) -> frozenset[int]:
    """Error codes a repeated request may not meet: the partition's leader moved or is being elected."""
    err = ck.KafkaError
    return frozenset(
        (
            err.NOT_LEADER_FOR_PARTITION,
            err.LEADER_NOT_AVAILABLE,
            err.REQUEST_TIMED_OUT,
            err.NOT_ENOUGH_REPLICAS,
        )
    )


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    """``--kafka-option KEY=VALUE`` pairs as client settings; ``KEY=@FILE`` reads the value from a
    file and ``KEY=env:NAME`` from the environment, so secrets stay off the command line.

    Raises:
        UsageError: a pair without ``=``, an unreadable file or an unset variable (never the value).
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(
                f"--kafka-option {key or pair!r} is not KEY=VALUE", hint="e.g. security.protocol=SSL"
            )
        given = value.startswith(("@", "env:"))
        if value.startswith("@"):
            try:
                with open(value[1:], encoding="utf-8") as fh:
                    value = fh.read().strip()
            except OSError as exc:
                raise UsageError(
                    f"--kafka-option {key}: cannot read {value[1:]}: {exc.strerror or exc}",
                    hint="name a readable file after '@'",
                ) from None
        elif value.startswith("env:"):
            name = value[4:]
            if name not in os.environ:
                raise UsageError(
                    f"--kafka-option {key}: environment variable {name} is not set", hint=f"export {name}"
                )
            value = os.environ[name]
        if given or is_secret(key):
            # Read from a file or the environment: a secret whatever its key says (issue 31 item 7).
            remember_secret(value)
        out[key] = value
    return out


def _client() -> Any:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError:
        raise MissingDependencyError("reading Kafka positions", "kafka", "confluent-kafka") from None
    return confluent_kafka


HINT = (
    "check --kafka-bootstrap-servers and --kafka-option (security.protocol, sasl.*) and that the "
    "broker is reachable from here"
)


def _reason(exc: BaseException) -> str:
    """The words of a KafkaException (its KafkaError's ``str()``), else the exception's text."""
    first = exc.args[0] if exc.args else None
    if first is not None and hasattr(first, "str"):
        return str(first.str())
    return str(exc) or type(exc).__name__


def _unreachable(bootstrap: str, reason: str) -> EndpointUnreachableError:
    return EndpointUnreachableError(
        f"Kafka broker {bootstrap}", "read topic positions from", reason, hint=HINT
    )


class KafkaReader:
    """One broker connection for a command: positions, retention and record timestamps, cached per topic.

    Thread-safe (one request at a time: the calls are batched, an audit's threads wait their turn).
    """

    def __init__(
        self, bootstrap: str, options: Mapping[str, str] | None = None, timeout_s: float = TIMEOUT_S
    ) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self._ck = _client()
        self._options = dict(options or {})
        self._lock = threading.Lock()
        self._failure: StorageError | None = None
        self._login_error: str | None = None
        self._last_error: str | None = None
        self._topics: dict[str, tuple[tuple[int, int, int], ...] | None] = {}
        self._retention: dict[str, KafkaRetention] = {}
        self._consumer: Any = None
        self._heads: dict[tuple[str, int, int], int | None] = {}
        #: The offset of the record each peek found (the first at or after the position asked).
        self._found_at: dict[tuple[str, int, int], int] = {}
        self.requests = 0
        self.admin = self._ck.admin.AdminClient(self._conf())

    def _conf(self, **extra: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {"log_level": 0, "socket.timeout.ms": int(self.timeout_s * 1000)}
        conf.update(self._options)
        conf.update(extra)
        conf["bootstrap.servers"] = self.bootstrap
        # librdkafka logs connection failures to stderr on its own threads; they say nothing the error does not.
        conf["logger"] = _Silent()
        conf["error_cb"] = self._on_error
        return conf

    def _on_error(self, err: Any) -> None:
        # A failed SASL login is reported here only (the requests themselves just time out), and
        # so is why a broker cannot be reached (refused, not resolved): the requests say "Timed out".
        if err.code() == self._ck.KafkaError._AUTHENTICATION:
            self._login_error = str(err.str())
        elif err.code() != self._ck.KafkaError._ALL_BROKERS_DOWN:
            self._last_error = str(err.str())

    def _masked(self, text: str) -> str:
        for key, value in self._options.items():
            if value and is_secret(key):
                text = text.replace(value, MASK)
        return text

    def _fail(self, reason: str) -> StorageError:
        if self._login_error is not None:
            login = self._masked(self._login_error)
            failure: StorageError = AccessDeniedError(
                f"Kafka broker {self.bootstrap}",
                "read topic positions from",
                f"authentication failed ({login.split(': ', 1)[-1]})",
                hint="check the sasl.* settings given with --kafka-option (secrets: KEY=@FILE or KEY=env:NAME)",
            )
        else:
            if self._last_error is not None:
                # librdkafka's "<proto>://host:port/bootstrap: Connect to ipv4#... failed: ..."
                reason = f"{self._last_error.split(': ', 1)[-1]} (no answer within {self.timeout_s:.0f} s)"
            failure = _unreachable(self.bootstrap, self._masked(reason))
        self._failure = failure
        return failure

    def _wait(self, future: Any, deadline: float) -> Any:
        """Return a future's result, failing early when the broker refused the login."""
        while True:
            try:
                return future.result(timeout=0.2)
            except FutureTimeout:
                self.admin.poll(0)
                if self._login_error is not None or time.monotonic() > deadline:
                    raise self._fail("no answer within the timeout") from None

    def _transient(self, exc: BaseException) -> bool:
        """Whether a broker's answer is worth asking again (a leader moving, KIP-392's
        NOT_LEADER_OR_FOLLOWER: the client refreshes its metadata and the next request finds it)."""
        err = exc.args[0] if exc.args else None
        if err is None or not hasattr(err, "code"):
            return False
        return bool(err.code() in _transient_codes(self._ck) or err.retriable())

    def _results(
        self, send: Callable[[list[Any]], Mapping[Any, Any]], keys: list[Any], deadline: float
    ) -> dict[Any, Any]:
        """Send a batched request and return ``{key: result or KafkaException}``; the keys that failed
        with a transient error are asked again (backing off, 0.1 s doubling to 1 s) while the call's
        deadline allows, then their last error stands.

        Raises:
            StorageError: no answer within the deadline (``_wait``).
        """
        out: dict[Any, Any] = {}
        pending = list(keys)
        pause = 0.1
        while pending:
            self.requests += 1
            retry = []
            for key, future in send(pending).items():
                try:
                    out[key] = self._wait(future, deadline)
                except self._ck.KafkaException as exc:
                    out[key] = exc
                    if self._transient(exc) and time.monotonic() + pause < deadline:
                        retry.append(key)
            if retry:
                time.sleep(pause)
                pause = min(1.0, 2 * pause)
            pending = retry
        return out

    def read(self, offsets: Iterable[KafkaOffset], *, heads: bool = True) -> KafkaLive:
        """Return the live positions (and retention, and with ``heads`` the timestamps of the
        records at the positions still held and of the records just below them) of the topics the
        ``offsets`` read.

        Raises:
            EndpointUnreachableError: the broker did not answer within the timeout.
            AccessDeniedError: the login failed, or a topic may not be described by this principal.
        """
        offs = list(offsets)
        topics = sorted({t for off in offs for t, _, _ in off.partitions})
        with self._lock:
            if self._failure is not None:
                raise self._failure
            try:
                self._describe([t for t in topics if t not in self._topics])
                found = {t: self._topics[t] for t in topics}
                ends = {(t, p): (lo, hi) for t, parts in found.items() for p, lo, hi in parts or ()}
                # the positions still held (a record to fetch), each once (a dict: 10,000 partitions)
                held = sorted(
                    {
                        (t, p, o)
                        for off in offs
                        for t, p, o in off.partitions
                        if (t, p) in ends and ends[(t, p)][0] <= o < ends[(t, p)][1]
                    }
                )
                peeked = self._peek(held) if heads and held else ()
                # the record below each position, when held: its timestamp says whether the checkpoint
                # can have read it (a topic recreated and grown past the positions, issue 32 item 3)
                under = sorted(
                    {
                        (t, p, o - 1)
                        for off in offs
                        for t, p, o in off.partitions
                        if (t, p) in ends and ends[(t, p)][0] <= o - 1 < ends[(t, p)][1]
                    }
                )
                # only the record at that very offset says anything: one found past it (the offset is a
                # transaction marker or was compacted away) was written after the position, legitimately
                behind = [
                    (t, p, o, ts)
                    for t, p, o, ts in (self._peek(under) if heads and under else ())
                    if self._found_at.get((t, p, o)) == o
                ]
            except self._ck.KafkaException as exc:
                raise self._fail(_reason(exc)) from None
        return KafkaLive(
            self.bootstrap,
            tuple(sorted(found.items())),
            tuple(self._retention[t] for t in topics if t in self._retention),
            tuple(peeked),
            tuple(behind),
        )

    def _describe(self, topics: list[str]) -> None:
        """Describe new topics: partitions, earliest and latest offsets, retention (batched).

        A name Kafka would refuse (``Topic.validate``) is not asked (the broker answers the whole
        request with INVALID_TOPIC_EXCEPTION): no broker holds it, so it reads as missing, for this
        checkpoint only. Issue 31 item 11: one checkpoint naming ``bad topic`` made every Kafka
        checkpoint of an audit unreadable.
        """
        deadline = time.monotonic() + 2 * self.timeout_s
        for topic in topics:
            if not legal_topic(topic):
                self._topics[topic] = None
        parts = self._partitions([t for t in topics if legal_topic(t)], deadline)
        ends = self._ends([(t, p) for t, ps in parts.items() for p in ps], deadline)
        for topic, ps in parts.items():
            self._topics[topic] = tuple((p, ends[(topic, p)][0], ends[(topic, p)][1]) for p in ps)
        self._describe_retention(sorted(parts), deadline)

    def _partitions(self, topics: list[str], deadline: float) -> dict[str, list[int]]:
        """Return the partitions of each topic the broker holds (a missing one is recorded as None)."""
        if not topics:
            return {}
        ck = self._ck
        described = self._results(
            lambda ts: self.admin.describe_topics(ck.TopicCollection(ts), request_timeout=self.timeout_s),
            topics,
            deadline,
        )
        parts: dict[str, list[int]] = {}
        for topic, answer in described.items():
            if not isinstance(answer, ck.KafkaException):
                parts[topic] = sorted(p.id for p in answer.partitions)
                continue
            code = answer.args[0].code() if answer.args else None
            if code in (ck.KafkaError.UNKNOWN_TOPIC_OR_PART, ck.KafkaError.TOPIC_EXCEPTION):
                self._topics[topic] = (
                    None  # gone (or a name no broker holds): the prediction says what Spark does
                )
            elif code == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED:
                # Kafka answers the same for a topic that does not exist when the principal
                # may not describe it (it does not tell unauthorized clients what exists).
                raise AccessDeniedError(
                    f"Kafka topic {topic} on {self.bootstrap}",
                    "describe",
                    "topic authorization failed (the principal may not describe it, or it does not exist)",
                    hint="grant DESCRIBE on the topic to the principal of --kafka-option sasl.username",
                ) from None
            else:
                raise answer
        return parts

    def _ends(self, wanted: list[tuple[str, int]], deadline: float) -> dict[tuple[str, int], list[int]]:
        """Return ``[earliest, latest]`` of each partition (KIP-396 ListOffsets, two batched requests)."""
        ck = self._ck
        ends: dict[tuple[str, int], list[int]] = {tp: [] for tp in wanted}
        spec = ck.admin.OffsetSpec
        for which in (spec.earliest(), spec.latest()):
            if not wanted:
                break

            def list_offsets(tps: list[tuple[str, int]], which: Any = which) -> dict[Any, Any]:
                request = {ck.TopicPartition(t, p): which for t, p in tps}
                futures = self.admin.list_offsets(request, request_timeout=self.timeout_s)
                return {(tp.topic, tp.partition): future for tp, future in futures.items()}

            for tp, answer in self._results(list_offsets, wanted, deadline).items():
                if isinstance(answer, ck.KafkaException):
                    raise answer
                ends[tp].append(int(answer.offset))
        return ends

    def _describe_retention(self, topics: list[str], deadline: float) -> None:
        """Read each topic's retention.ms, retention.bytes and cleanup.policy (DescribeConfigs)."""
        if not topics:
            return
        ck = self._ck

        def describe_configs(names: list[str]) -> dict[Any, Any]:
            resources = [ck.admin.ConfigResource(ck.admin.ResourceType.TOPIC, t) for t in names]
            futures = self.admin.describe_configs(resources, request_timeout=self.timeout_s)
            return {resource.name: future for resource, future in futures.items()}

        for name, conf in self._results(describe_configs, topics, deadline).items():
            if isinstance(conf, ck.KafkaException):
                raise conf
            self._retention[name] = KafkaRetention(
                name,
                int(conf["retention.ms"].value),
                int(conf["retention.bytes"].value),
                str(conf["cleanup.policy"].value),
            )

    def _peek(self, held: list[tuple[str, int, int]]) -> list[tuple[str, int, int, int | None]]:
        """Fetch the record at each position (one consumer, all partitions at once, bounded in time
        and bytes); a record not fetched in time has timestamp None."""
        ck = self._ck
        if self._consumer is None:
            self._consumer = ck.Consumer(
                self._conf(
                    **{
                        "group.id": "checkpoint-doctor-peek",
                        "enable.auto.commit": False,
                        "enable.auto.offset.store": False,
                        "max.partition.fetch.bytes": PEEK_PARTITION_BYTES,
                        "fetch.max.bytes": 1024 * 1024,
                        "queued.max.messages.kbytes": 1024,
                        "queued.min.messages": 1,
                        "isolation.level": "read_uncommitted",
                    }
                )
            )
        # each position once per reader: checkpoints of one query family share them
        todo = [(t, p, o) for t, p, o in held if (t, p, o) not in self._heads]
        # one offset per partition per fetch (two checkpoints at different offsets: two rounds)
        while todo:
            first: dict[tuple[str, int], int] = {}
            rest = []
            for t, p, o in todo:
                if (t, p) in first:
                    rest.append((t, p, o))
                else:
                    first[(t, p)] = o
            for (t, p), (ts, at) in self._fetch_heads(first).items():
                self._heads[(t, p, first[(t, p)])] = ts
                if at is not None:
                    self._found_at[(t, p, first[(t, p)])] = at
            todo = rest
        return [(t, p, o, self._heads.get((t, p, o))) for t, p, o in held]

    def _fetch_heads(
        self, wanted: dict[tuple[str, int], int]
    ) -> dict[tuple[str, int], tuple[int | None, int | None]]:
        """Return ``(timestamp, offset)`` of the first record at or after each position (None, None
        when none came in time)."""
        ck = self._ck
        got: dict[tuple[str, int], tuple[int | None, int | None]] = {}
        self.requests += 1
        self._consumer.assign([ck.TopicPartition(t, p, o) for (t, p), o in sorted(wanted.items())])
        deadline = time.monotonic() + PEEK_TIMEOUT_S
        try:
            while len(got) < len(wanted) and time.monotonic() < deadline:
                done = []
                for msg in self._consumer.consume(1000, timeout=0.2):
                    key = (msg.topic(), msg.partition())
                    if msg.error() is None and key in wanted and key not in got:
                        # the first record at or after the position (a transaction marker or a
                        # compacted gap may sit at the offset itself)
                        kind, ts = msg.timestamp()
                        got[key] = (
                            int(ts) if kind != ck.TIMESTAMP_NOT_AVAILABLE else None,
                            int(msg.offset()),
                        )
                        done.append(ck.TopicPartition(*key))
                if done:  # fetch no more from the partitions answered
                    self._consumer.pause(done)
        finally:
            # librdkafka keeps a partition's pause across assignments: resume before letting go
            self._consumer.resume([ck.TopicPartition(t, p) for t, p in wanted])
            self._consumer.unassign()
        return {tp: got.get(tp, (None, None)) for tp in wanted}

    def close(self) -> None:
        """Close the consumer (the admin client needs no closing)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def open_reader(bootstrap: str, options: Mapping[str, str] | None = None) -> KafkaReader:
    """Return a reader, or a one-line error for a setting librdkafka refuses (never its value).

    Raises:
        MissingDependencyError: confluent-kafka is not installed.
        UsageError: an unknown setting or a bad value.
    """
    ck = _client()
    try:
        return KafkaReader(bootstrap, options)
    except (ck.KafkaException, ValueError, TypeError) as exc:
        # librdkafka refuses an unknown setting or a bad value here, naming the property (not its value)
        reason = _reason(exc)
        for key, value in (options or {}).items():
            if value and is_secret(key):
                reason = reason.replace(value, MASK)
        raise UsageError(f"--kafka-option: {reason}", hint="use librdkafka's configuration names") from None


def read_positions(
    bootstrap: str,
    offsets: Sequence[KafkaOffset],
    options: Mapping[str, str] | None = None,
) -> KafkaLive:
    """Return the live positions of the topics ``offsets`` read, with retention and record timestamps.

    Raises:
        MissingDependencyError: confluent-kafka is not installed.
        UsageError: a client setting librdkafka refuses.
        EndpointUnreachableError: the broker did not answer within the timeout.
        AccessDeniedError: the login failed or a topic may not be described.
    """
    reader = open_reader(bootstrap, options)
    try:
        return reader.read(offsets)
    finally:
        reader.close()


class _Silent:
    """A logger for librdkafka that drops its lines (the error raised names the broker)."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return self.log
