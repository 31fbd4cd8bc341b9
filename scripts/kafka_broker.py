#!/usr/bin/env python3
"""Run a real single-node Apache Kafka broker (KRaft) on 127.0.0.1, for tests and fixtures.

Stdlib only (the ready check uses confluent-kafka when it is importable). The jars come from
``scripts/jars.py kafka-broker`` (Maven). One JVM is both broker and controller
(``process.roles=broker,controller``), as Kafka's ``KafkaClusterTestKit`` and spring-kafka's
``EmbeddedKafkaKraftBroker`` run it: the log dir is formatted with ``kafka.tools.StorageTool
format --standalone`` (a dynamic quorum of one voter, KIP-853) and the server is started with
``kafka.Kafka server.properties``. Ports are free ones picked at start; the log dir and the
broker's own output live in a temporary folder that ``stop()`` removes.

CLI: ``python scripts/kafka_broker.py`` starts one, prints ``bootstrap=127.0.0.1:PORT`` and runs
until interrupted.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import jars

#: Heap of the broker JVM: one topic of a few partitions needs little, and the box is shared.
JVM_OPTS = ["-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]

READY_TIMEOUT_S = 60.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` makes one: 16 random bytes, base64url, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def server_properties(
    log_dir: pathlib.Path,
    port: int,
    controller_port: int,
    sasl_port: int | None = None,
    users: dict[str, str] | None = None,
) -> str:
    """The broker's configuration: one node, replication factors 1, no automatic topics.

    With ``sasl_port`` and ``users`` a second listener, SASL_PLAINTEXT with the PLAIN mechanism,
    takes those users and passwords, and Kafka's KRaft ``StandardAuthorizer`` denies what no ACL
    allows: a user there sees only the topics an ACL grants it (the PLAINTEXT listener's anonymous
    principal stays a super user, so tests and the controller are not restricted).
    """
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Topics exist only when a scenario step creates them: a consumer must not bring one back.
        "auto.create.topics.enable": "false",
        "delete.topic.enable": "true",
    }
    if sasl_port is not None and users:
        jaas = " ".join(f'user_{u}="{pw}"' for u, pw in sorted(users.items()))
        props["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
        props["advertised.listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        props["sasl.enabled.mechanisms"] = "PLAIN"
        props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};"
        )
        props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        props["super.users"] = "User:ANONYMOUS"
        props["allow.everyone.if.no.acl.found"] = "false"
    return "".join(f"{k}={v}\n" for k, v in props.items())


@dataclass
class Broker:
    """A running broker; ``bootstrap`` is what clients and Spark's ``kafka.bootstrap.servers`` take."""

    bootstrap: str
    workdir: pathlib.Path
    process: subprocess.Popen[bytes]
    version: str
    started_in_s: float
    _log: pathlib.Path = field(repr=False, default=pathlib.Path())
    #: The SASL_PLAINTEXT listener's address when the broker was started with users, else None.
    sasl_bootstrap: str | None = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self._log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace_s: float = 15) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL after ``grace_s``; SIGKILL at once when 0) and remove
        the log dir. A broker whose logs are thrown away needs no controlled shutdown: the tests'
        session broker, after a run that made a topic of 10,000 partitions, took the whole 15 s."""
        if self.process.poll() is None:
            if grace_s <= 0:
                self.process.kill()
                self.process.wait()
            else:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (pathlib.Path(home) / "bin" / "java").exists():
        return str(pathlib.Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise RuntimeError(
            "a Kafka broker needs Java 17+: install a JDK (Debian: apt-get install openjdk-17-jdk)"
        )
    return found


def _metadata_ready(bootstrap: str) -> bool:
    """True once the broker answers a metadata request (its controller elected, the broker fenced off no more)."""
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return True  # the open port is the only check without a client
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000})
    try:
        meta = admin.list_topics(timeout=2)
    except Exception:  # noqa: BLE001 - KafkaException while the broker is starting
        return False
    return bool(meta.brokers)


def start(
    kafka_version: str = jars.KAFKA_VERSION,
    timeout_s: float = READY_TIMEOUT_S,
    users: dict[str, str] | None = None,
) -> Broker:
    """Format a fresh log dir, start the broker and return once it answers metadata requests
    (``users``: also a SASL_PLAINTEXT listener with these PLAIN users, and ACLs enforced there)."""
    began = time.monotonic()
    classpath = os.pathsep.join(str(j) for j in sorted(jars.ensure_kafka_broker(kafka_version).glob("*.jar")))
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="cd-kafka-"))
    port, controller_port = _free_port(), _free_port()
    while controller_port == port:
        controller_port = _free_port()
    sasl_port = None
    if users:
        sasl_port = _free_port()
        while sasl_port in (port, controller_port):
            sasl_port = _free_port()
    config = workdir / "server.properties"
    config.write_text(
        server_properties(workdir / "data", port, controller_port, sasl_port, users), encoding="utf-8"
    )
    log = workdir / "broker.log"
    java = [_java(), *JVM_OPTS, "-cp", classpath]
    fmt = subprocess.run(
        [
            *java,
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
            f"--cluster-id={_cluster_id()}",
            "-c",
            str(config),
        ],
        capture_output=True,
        text=True,
    )
    if fmt.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RuntimeError(f"kafka StorageTool format failed: {(fmt.stderr or fmt.stdout).strip()[-2000:]}")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*java, "kafka.Kafka", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    broker = Broker(f"127.0.0.1:{port}", workdir, process, kafka_version, 0.0, log)
    if sasl_port is not None:
        broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    deadline = began + timeout_s
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = broker.log_tail()
                raise RuntimeError(
                    f"the Kafka broker exited with {process.returncode} while starting:\n{tail}"
                )
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                if _metadata_ready(broker.bootstrap):
                    broker.started_in_s = round(time.monotonic() - began, 1)
                    return broker
            time.sleep(0.3)
    except BaseException:
        # a failed start, Ctrl-C or SIGTERM while waiting: the JVM runs in its own session
        # (start_new_session), so nothing else would stop it or remove its directory
        broker.stop()
        raise
    tail = broker.log_tail()
    broker.stop()
    raise RuntimeError(f"the Kafka broker was not ready within {timeout_s:.0f} s:\n{tail}")


@contextlib.contextmanager
def running(kafka_version: str = jars.KAFKA_VERSION) -> Iterator[Broker]:
    broker = start(kafka_version)
    try:
        yield broker
    finally:
        broker.stop()


class _Terminated(Exception):
    """SIGTERM or SIGHUP, raised in the main thread so that ``finally`` stops the broker."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated(signum)


def main(argv: list[str]) -> int:
    # Python dies on SIGTERM without running ``finally``; the JVM has its own session
    # (start_new_session), so a `kill` of this script would leave it and its log dir behind.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)
    try:
        broker = start(*(argv[:1] or [jars.KAFKA_VERSION]))
    except _Terminated:
        return 143
    try:
        # Inside the try: a SIGTERM sent as soon as this line is read (a test does) must stop the
        # broker too, not escape between the print and the wait (exit 1, the JVM left behind).
        print(
            f"bootstrap={broker.bootstrap} kafka={broker.version} ready_in_s={broker.started_in_s} "
            f"pid={broker.process.pid} dir={broker.workdir}",
            flush=True,
        )
        broker.process.wait()
    except (KeyboardInterrupt, _Terminated):
        pass
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not cut the cleanup short
        broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
