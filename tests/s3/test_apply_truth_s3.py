"""Undo removes only what apply created, on S3 (moto) as on local disk (tests/execution/
test_apply_truth.py): a live writer that put the very bytes of the bridge's offsets/30 in place
first makes the apply's conditional create (``If-None-Match: *``) fail, and undo never removes it
(its ETag is the one the apply's would have had: content alone proves nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkpoint_doctor.errors import ApplyFailedError, UndoRefusedError
from checkpoint_doctor.execution.apply import apply_plan
from tests.execution.test_apply_truth import _WriterFirst
from tests.s3.conftest import S3
from tests.s3.test_apply_s3 import PREFIX, make_plan, objects, stores, undo, upload


@pytest.mark.s3
def test_undo_on_s3_never_removes_a_writers_object_with_the_planned_bytes(s3: S3, tmp_path: Path) -> None:
    url = upload(s3, "spark-4.3.0/async-tail", tmp_path)
    plan = make_plan(url, s3)
    assert [(s.kind, s.path) for s in plan.executable_steps] == [("copy", "offsets/30")]
    checkpoint, tool = stores(url, plan, s3)
    planned = checkpoint.read("offsets/20")

    with pytest.raises(ApplyFailedError) as info:
        apply_plan(plan, _WriterFirst(checkpoint, "offsets/30", planned), sink=None, tool=tool, now_ms=None)

    assert "the checkpoint was not changed" in str(info.value)
    journal = str(info.value).split("the record is ")[1].split(";")[0]
    writers = objects(s3, PREFIX)
    with pytest.raises(UndoRefusedError, match="stopped before it changed anything"):
        undo(journal, s3, force=True)
    assert objects(s3, PREFIX) == writers and writers["offsets/30"] == writers["offsets/20"]
