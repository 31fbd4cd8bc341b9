"""The world around a checkpoint: everything a verdict reads outside the checkpoint itself.

A checkpoint is read into a snapshot (:mod:`checkpoint_doctor.reading`); what lies beside it is
found, read and paired with it here, and handed to the diagnosis as values:

* file sinks: found beside the checkpoint (:mod:`~checkpoint_doctor.world.sinks`), proven the
  query's own by both logs (:mod:`~checkpoint_doctor.world.sink_pairing`, pure);
* Delta tables: their logs read (:mod:`~checkpoint_doctor.world.delta_log`,
  :mod:`~checkpoint_doctor.world.delta_checksum`), found beside the checkpoint or named
  (:mod:`~checkpoint_doctor.world.delta_discovery`) and paired as its sources and sink
  (:mod:`~checkpoint_doctor.world.delta_pairing`, pure; :mod:`~checkpoint_doctor.world.delta`);
* Kafka brokers: the topics' live positions and retention (:mod:`~checkpoint_doctor.world.kafka`);
* the tool's own writes and unfinished applies, and all of the above for one verdict
  (:mod:`~checkpoint_doctor.world.load`), the same for the CLI and the Python API.

The pure modules (the pairing rules and the values) may be imported by the diagnosis; the modules
that read (storage, a broker) may not (``tests/test_architecture.py``).
"""
