"""The pure Delta predictors on the edges the recorded restarts do not reach (options, lines)."""

from __future__ import annotations

import pytest

from checkpoint_doctor.diagnosis.sinks.delta import predict as predict_sink
from checkpoint_doctor.diagnosis.sources.delta import delta_release, predict
from checkpoint_doctor.model import DeltaOffset
from checkpoint_doctor.model_delta import DeltaCommit, DeltaTable

OFFSET = DeltaOffset("t-1", 4, -1, 1, False)


def table(earliest: int = 0, *, commits: tuple[DeltaCommit, ...] = (), table_id: str = "t-1") -> DeltaTable:
    latest = max([c.version for c in commits], default=5)
    return DeltaTable("/t", table_id, latest, earliest, None, None, (("q-1", 2),), commits)


def test_each_line_names_its_delta_release_and_4_3_has_none() -> None:
    assert [delta_release(v) for v in ("3.5", "4.0", "4.1", "4.2", "4.3")] == [
        "3.3.3",
        "4.0.1",
        "4.4.0",
        "4.4.0",
        None,
    ]
    with pytest.raises(ValueError, match=r"no Delta Lake release for Spark 4\.3"):
        predict(OFFSET, table(), "4.3")


def test_missing_versions_in_each_release_wording() -> None:
    old = predict(OFFSET, table(6), "3.5").error
    new = predict(OFFSET, table(6), "4.1").error
    assert old is not None and "expecting process data from version 4" in old.message
    assert "earliest available version in the _delta_log directory is 6" in old.message
    assert (
        new is not None
        and "Delta stream cannot resume from version 4; transaction log starts at 6" in new.message
    )


def test_fail_on_data_loss_false_skips_the_missing_versions() -> None:
    got = predict(
        OFFSET, table(6, commits=(DeltaCommit(6, "WRITE", 1, 0),)), "4.0", {"failOnDataLoss": "false"}
    )
    assert got.error is None and got.skipped_versions == (4, 5) and got.versions == (6, 6)


@pytest.mark.parametrize(
    ("options", "error_class"),
    [
        ({}, "DELTA_SOURCE_IGNORE_DELETE"),
        ({"ignoreDeletes": "true"}, None),
        ({"IGNORECHANGES": "true"}, None),
        ({"skipChangeCommits": "true"}, None),
    ],
)
def test_a_delete_is_refused_unless_an_option_allows_it(
    options: dict[str, str], error_class: str | None
) -> None:
    got = predict(
        OFFSET, table(commits=(DeltaCommit(4, "WRITE", 1, 0), DeltaCommit(5, "DELETE", 0, 1))), "3.5", options
    )
    assert (got.error.error_class if got.error else None) == error_class


def test_an_update_needs_skip_change_commits_not_ignore_deletes() -> None:
    commits = (DeltaCommit(5, "UPDATE", 1, 1),)
    assert predict(OFFSET, table(commits=commits), "4.2", {"ignoreDeletes": "true"}).error is not None
    got = predict(OFFSET, table(commits=commits), "4.2", {"skipChangeCommits": "true"})
    assert got.error is None and got.skipped_versions == (5,)


def test_a_replaced_table_is_refused_before_its_log_is_read() -> None:
    got = predict(OFFSET, table(9, table_id="t-2"), "4.0")
    assert got.error is not None and got.error.error_class == "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE"
    assert "id = 't-2'" in got.error.message and "id = 't-1'" in got.error.message


def test_the_sink_skips_up_to_its_txn_and_writes_after_it() -> None:
    t = table()
    assert tuple(predict_sink("q-1", 1, t).skipped) == (1, 2)
    assert predict_sink("q-1", 3, t).writes and not predict_sink("q-1", 3, t).skipped
    fresh = predict_sink("q-new", 0, t)
    assert fresh.writes and fresh.txn_version is None and fresh.other_queries == (("q-1", 2),)
    assert predict_sink("q-1", 0, None).table_missing
