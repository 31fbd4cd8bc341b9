"""Reading a checkpoint: everything between a URL and an immutable snapshot.

The pipeline (:mod:`~checkpoint_doctor.reading.pipeline`), in order:

1. **list** the tree once (:mod:`~checkpoint_doctor.reading.storage`, the only module that talks to
   storage: one ``os.scandir`` walk, or one s3fs ``find``);
2. **index** the names (:mod:`~checkpoint_doctor.reading.layout`, pure): batch files, Hadoop
   ``.crc`` side files, temp files, state store files, sink log entries;
3. **plan the reads** (:func:`~checkpoint_doctor.reading.reads.plan_reads`, pure): only the files
   a restart reads, or every log file with ``depth="deep"``;
4. **read** them in one batch (storage, concurrently where the backend is asynchronous);
5. **assemble** the :class:`~checkpoint_doctor.reading.snapshot.CheckpointSnapshot` (pure: parsing
   happens here, through :mod:`checkpoint_doctor.parsing`);
6. **follow up** with the few reads only the assembled snapshot can name (older RocksDB zips of a
   store whose newest zip names missing SSTs), then assemble again.

Reading never writes. Unreadable single files are recorded in the snapshot, never raised.
"""

from checkpoint_doctor.reading.pipeline import load_checkpoint, load_snapshot, snapshot_from_listing
from checkpoint_doctor.reading.snapshot import CheckpointSnapshot

__all__ = ["CheckpointSnapshot", "load_checkpoint", "load_snapshot", "snapshot_from_listing"]
