"""The pure rules of a real-time restart (checkpoint_doctor.diagnosis.real_time), as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.diagnosis.real_time import format_v1_refused, purged_ids

IDS = st.lists(st.integers(min_value=0, max_value=200), unique=True).map(lambda ids: tuple(sorted(ids)))


@given(IDS, st.one_of(st.none(), st.integers(min_value=0, max_value=200)))
def test_the_purge_removes_exactly_the_offsets_above_the_newest_commit(offsets, committed) -> None:
    gone = purged_ids(offsets, committed)
    kept = tuple(i for i in offsets if i not in gone)
    floor = -1 if committed is None else committed
    assert all(i > floor for i in gone) and all(i <= floor for i in kept)
    assert kept + gone == offsets


@given(
    st.one_of(st.none(), st.integers(min_value=1, max_value=3)),
    st.sampled_from([None, "true", "TRUE", "false"]),
)
def test_4_3_refuses_format_1_commits_unless_dangerously_allowed(commit_version, allow) -> None:
    refused = format_v1_refused(commit_version, allow)
    allowed = allow is not None and allow.lower() == "true"
    assert refused == (not allowed and commit_version == 1)
