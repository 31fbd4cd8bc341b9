"""Hypothesis strategies for the values the parsers produce (for round trips) and for raw bytes."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from checkpoint_doctor.model import CommitRecord, OffsetSeq, OffsetSeqMetadata, QueryMetadata, SourceOffset
from checkpoint_doctor.parsing.source_offsets import decode_offset

longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
small = st.integers(min_value=0, max_value=10**12)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_", min_size=1, max_size=12)
json_texts = st.text(max_size=20)

raw_offsets = st.one_of(
    st.builds(lambda o, t: json.dumps({"offset": o, "timestamp": t}, separators=(",", ":")), small, small),
    st.builds(str, small),
    st.builds(lambda n: json.dumps({"logOffset": n}, separators=(",", ":")), small),
    st.dictionaries(
        names,
        st.dictionaries(st.integers(0, 50).map(str), small, min_size=1, max_size=3),
        min_size=1,
        max_size=3,
    ).map(lambda d: json.dumps(d, separators=(",", ":"))),
    st.text(min_size=1, max_size=30).filter(lambda s: "\n" not in s and "\r" not in s and s != "-"),
)


@st.composite
def offset_seqs(draw: st.DrawFn) -> OffsetSeq:
    version = draw(st.sampled_from([1, 2]))
    has_metadata = version == 2 or draw(st.booleans())
    metadata = None
    if has_metadata:
        has_conf = draw(st.booleans())
        conf = draw(st.dictionaries(st.text(max_size=15), json_texts, max_size=4)) if has_conf else {}
        info = ()
        if version == 2:
            info_d = draw(
                st.dictionaries(
                    names, st.fixed_dictionaries({"sourceId": small, "providerName": names}), max_size=2
                )
            )
            info = tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in info_d.items()))
        metadata = OffsetSeqMetadata(
            batch_watermark_ms=draw(longs),
            batch_timestamp_ms=draw(longs),
            conf=tuple(sorted(conf.items())),
            has_conf=has_conf,
            source_metadata_info=info,
        )
    count = draw(st.integers(min_value=0 if metadata else 1, max_value=4))
    sources = []
    for i in range(count):
        raw = draw(st.one_of(st.none(), raw_offsets))
        name = draw(names) if version == 2 else None
        sources.append(
            SourceOffset(index=i, raw=raw, name=name, decoded=decode_offset(raw) if raw is not None else None)
        )
    return OffsetSeq(version=version, metadata=metadata, sources=tuple(sources))


@st.composite
def commit_records(draw: st.DrawFn) -> CommitRecord:
    version = draw(st.sampled_from([1, 2, 3]))
    if draw(st.booleans()) and version == 1:
        return CommitRecord(version=version, next_batch_watermark_ms=0, header_only=True)
    ids = None
    if version >= 2 and draw(st.booleans()):
        ops = draw(
            st.dictionaries(
                st.integers(0, 3),
                st.lists(st.lists(st.uuids().map(str), min_size=1, max_size=2), min_size=1, max_size=3),
                min_size=1,
                max_size=2,
            )
        )
        ids = tuple(sorted((op, tuple(tuple(p) for p in parts)) for op, parts in ops.items()))
    sink = None
    if version == 3 and draw(st.booleans()):
        sink = json.dumps(
            {draw(names): {"sinkName": "s", "isActive": True}}, sort_keys=True, separators=(",", ":")
        )
    return CommitRecord(
        version=version, next_batch_watermark_ms=draw(longs), state_unique_ids=ids, sink_metadata_json=sink
    )


query_metadata = st.uuids().map(lambda u: QueryMetadata(query_id=str(u)))

# Bytes that look like checkpoint files some of the time, garbage the rest.
file_like_bytes = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda head, body: (head + "\n" + body).encode("utf-8", "surrogatepass"),
        st.sampled_from(["v1", "v2", "v3", "v99", "v0", "x1", "", "v1 "]),
        st.text(max_size=200),
    ),
    st.builds(lambda b: b"\xac\xed\x00\x05" + b, st.binary(max_size=40)),
    st.builds(lambda b: b"\x00v1\n" + b, st.binary(max_size=60)),
)
