"""One lock holder on S3 (moto): the takeover of a stale lock raced at every one of its operations
has one holder, as on local disk (tests/execution/test_lock_race.py). S3 offers an atomic
create-if-absent (``If-None-Match: *``) and strong read-after-write consistency, and that is all the
takeover needs: no conditional delete."""

from __future__ import annotations

from checkpoint_doctor.reading.storage import open_storage
from tests.execution.test_lock_race import race_at_every_operation
from tests.s3.conftest import S3


def test_a_stale_lock_on_s3_raced_at_every_operation_has_one_holder(s3: S3) -> None:
    runs, problems = race_at_every_operation(
        lambda n: open_storage(s3.url(f"ckpt-{n}.checkpoint-doctor"), s3.options)
    )
    assert runs >= 4
    assert problems == []
