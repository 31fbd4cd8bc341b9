"""The topics' live positions, asked of a Kafka broker with confluent-kafka (the ``kafka`` extra).

The I/O edge of the Kafka check: lists the topics (AdminClient.list_topics) and each partition's
earliest and latest offsets (AdminClient.list_offsets with OffsetSpec.earliest/latest, KIP-396),
every call with a timeout, and returns :class:`KafkaLive`, the plain data
``checkpoint_doctor.diagnosis.sources.kafka_positions.predict`` takes. A broker that cannot be reached is an
:class:`EndpointUnreachableError` naming the address (exit 8, as for an object store).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint_doctor.errors import EndpointUnreachableError, MissingDependencyError, UsageError
from checkpoint_doctor.model import KafkaLive
from checkpoint_doctor.redaction import MASK, is_secret

#: Seconds each broker call may take; a broker that is down fails the command within about twice this.
TIMEOUT_S = 8.0


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
        out[key] = value
    return out


def _client() -> Any:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError:
        raise MissingDependencyError("reading Kafka positions", "kafka", "confluent-kafka") from None
    return confluent_kafka


def _unreachable(bootstrap: str, exc: BaseException) -> EndpointUnreachableError:
    reason = str(exc.args[0]) if exc.args else str(exc)
    # KafkaError's str() is "KafkaError{code=_TRANSPORT,val=-195,str=\"...\"}": keep its words.
    if hasattr(exc.args[0] if exc.args else None, "str"):
        reason = exc.args[0].str()
    return EndpointUnreachableError(
        f"Kafka broker {bootstrap}",
        "read topic positions from",
        reason or type(exc).__name__,
        hint="check --kafka-bootstrap-servers and --kafka-option (security.protocol, sasl.*) and that the "
        "broker is reachable from here",
    )


def read_positions(
    bootstrap: str,
    topics: Sequence[str],
    options: Mapping[str, str] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> KafkaLive:
    """Return each topic's ``(partition, earliest, latest)`` (None for a topic the broker does not list).

    Raises:
        MissingDependencyError: confluent-kafka is not installed.
        EndpointUnreachableError: the broker did not answer within the timeout.
    """
    ck = _client()
    conf: dict[str, Any] = {"log_level": 0, "socket.timeout.ms": int(timeout_s * 1000)}
    conf.update(options or {})
    conf["bootstrap.servers"] = bootstrap
    # librdkafka logs connection failures to stderr on its own threads; they say nothing the error does not.
    conf["logger"] = _Silent()
    try:
        admin = ck.admin.AdminClient(conf)
    except (ck.KafkaException, ValueError, TypeError) as exc:
        # librdkafka refuses an unknown setting or a bad value here, naming the property (not its value)
        reason = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
        for key, value in (options or {}).items():
            if value and is_secret(key):
                reason = reason.replace(value, MASK)
        raise UsageError(f"--kafka-option: {reason}", hint="use librdkafka's configuration names") from None
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except ck.KafkaException as exc:
        raise _unreachable(bootstrap, exc) from None
    found: dict[str, list[int] | None] = {}
    for topic in topics:
        meta = metadata.topics.get(topic)
        found[topic] = None if meta is None or meta.error is not None else sorted(meta.partitions)
    wanted = [(t, p) for t, parts in found.items() for p in parts or ()]
    ends: dict[tuple[str, int], list[int]] = {tp: [] for tp in wanted}
    spec = ck.admin.OffsetSpec
    for which in (spec.earliest(), spec.latest()):
        if not wanted:
            break
        request = {ck.TopicPartition(t, p): which for t, p in wanted}
        try:
            futures = admin.list_offsets(request, request_timeout=timeout_s)
            for tp, future in futures.items():
                ends[(tp.topic, tp.partition)].append(int(future.result(timeout=timeout_s).offset))
        except ck.KafkaException as exc:
            raise _unreachable(bootstrap, exc) from None
        except TimeoutError as exc:
            raise _unreachable(bootstrap, exc) from None
    return KafkaLive(
        bootstrap,
        tuple(
            (t, None if parts is None else tuple((p, ends[(t, p)][0], ends[(t, p)][1]) for p in parts))
            for t, parts in sorted(found.items())
        ),
    )


class _Silent:
    """A logger for librdkafka that drops its lines (the error raised names the broker)."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return self.log
