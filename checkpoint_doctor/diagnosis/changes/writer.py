"""The job's writer against the checkpoint: its file sink's path, its output mode, its trigger. Pure.

* A file sink keeps its own log in ``<path>/_spark_metadata``; the checkpoint does not name the path.
  A job that writes to another path starts a new log there at the next batch, without an error
  [exp: job-file-sink-moved]: the old path keeps the batches written so far, and the new log lacks
  the compaction before its first batch, which ``CompactibleFileStreamLog`` needs to list the files
  (readers of the new path: "... doesn't exist (latestId: N, compactInterval: I)", read back after
  each recorded restart: ``read_after``) and to write the next compaction ("... doesn't exist when
  compacting batch C", from ``CompactibleFileStreamLog.compact``; not restarted that far).
* The output mode is not in the checkpoint either: ``start()`` checks it against the plan
  (``UnsupportedOperationChecker``) before the checkpoint is read, so the probe asks the same check
  [exp: job-output-mode-complete-stateless]; an aggregation keeps its state schema in every mode
  (append -> update or complete restarts [exp: job-output-mode-update, job-output-mode-complete]).
* The trigger decides the mode the restart runs in (``JobFacts.mode``): async progress tracking on
  or off, continuous or micro-batch. Each mode's restart is then predicted as ``--mode`` would
  [exp: job-async-off, job-async-on, job-async-on-stateful, job-continuous-off, job-continuous-on].
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from checkpoint_doctor.diagnosis.changes.facts import JobFacts
from checkpoint_doctor.diagnosis.changes.sources import FILE_FORMATS
from checkpoint_doctor.diagnosis.context import Context
from checkpoint_doctor.reading.layout import SINK_LOG

#: ``spark.sql.streaming.fileSink.log.compactInterval`` (FileStreamSinkLog), default 10.
SINK_COMPACT_INTERVAL_CONF = "spark.sql.streaming.fileSink.log.compactInterval"
DEFAULT_SINK_COMPACT_INTERVAL = 10


def _normal(path: str) -> str:
    parts = urlsplit(path)
    if parts.scheme in ("", "file"):
        return (parts.path if parts.scheme else path).rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def writes_file_sink(job: JobFacts) -> bool:
    """Return whether the job's sink is Spark's file sink."""
    return (job.sink_format or "").lower() in FILE_FORMATS and job.sink_path is not None


@dataclass(frozen=True)
class SinkMove:
    """The job's file sink path and the sink the checkpoint wrote with (``sink``, paired)."""

    sink: str
    job_path: str
    first_batch: int | None
    compact_interval: int

    @property
    def first_compaction(self) -> int | None:
        """Return the compaction batch the new log's first batch needs behind it (None: none)."""
        if self.first_batch is None:
            return None
        c = (self.first_batch + 1) // self.compact_interval * self.compact_interval - 1
        return c if 0 <= c < self.first_batch else None

    @property
    def next_compaction(self) -> int | None:
        """Return the first compaction batch the new log writes (None: unknown first batch)."""
        if self.first_batch is None:
            return None
        n = self.first_batch
        return n + (self.compact_interval - 1 - n % self.compact_interval)

    @property
    def text(self) -> str:
        """Return what Spark does with the moved sink, in one paragraph."""
        at = f"batch {self.first_batch}" if self.first_batch is not None else "the next batch"
        out = (
            f"The job writes its file sink to {self.job_path}, but the checkpoint's batches were written "
            f"to {self.sink} (its {SINK_LOG}): Spark starts a new {SINK_LOG} at {self.job_path} with {at} "
            f"and no error; {self.sink} keeps the batches written so far"
        )
        missing, nxt = self.first_compaction, self.next_compaction
        if missing is not None and nxt is not None:
            name = f"{SINK_LOG}/{missing}.compact"
            full = f"{self.job_path.rstrip('/')}/{name}"
            interval = self.compact_interval
            out += (
                f". The new log has no {name}: reading {self.job_path} fails "
                f'("{full} doesn\'t exist (latestId: {self.first_batch}, compactInterval: {interval})", '
                f"CompactibleFileStreamLog.allFiles), and so does the sink when it compacts batch {nxt} "
                f'("{full} doesn\'t exist when compacting batch {nxt} (compactInterval: {interval})")'
            )
        return out + "."


def sink_move(ctx: Context, job: JobFacts, next_batch: int | None) -> SinkMove | None:
    """Return the move when the job's file sink path is not the file sink paired with the
    checkpoint (found beside it, or ``--sink-path``); None when they agree or nothing is paired."""
    sink = ctx.snapshot.sink
    if sink is None or not writes_file_sink(job):
        return None
    assert job.sink_path is not None
    if _normal(job.sink_path) == _normal(sink.url):
        return None
    raw = job.conf(SINK_COMPACT_INTERVAL_CONF)
    interval = (
        int(raw) if raw is not None and raw.isdigit() and int(raw) > 0 else DEFAULT_SINK_COMPACT_INTERVAL
    )
    return SinkMove(sink.url, job.sink_path, next_batch, interval)


def mode_change(ctx: Context, job: JobFacts) -> tuple[str, str] | None:
    """Return (the mode the checkpoint's logs show, the job's mode) when they differ."""
    detected = ctx.detected.mode
    if detected == job.mode:
        return None
    return detected, job.mode
