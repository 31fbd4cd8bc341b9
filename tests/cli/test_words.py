"""The words an operator reads: real paths where Spark prints paths, singular for one batch, whole
sentences from Spark, the writer line the matrix stars, and the sink the operator named."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from checkpoint_doctor.cli import main
from checkpoint_doctor.diagnosis.versions import qualify_root
from checkpoint_doctor.ids import ids_text, range_text, span_text
from tests.scenarios import all_scenarios

SCENARIOS = {s.id: s for s in all_scenarios()}


def run(capsys, *args):
    code = main([*args, "--live-window", "0"])
    out, _ = capsys.readouterr()
    return code, out


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def strings(value, skip=("message",), path=()):
    """Yield every string of a JSON document, except Spark's error templates (``error.message``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            if not (k in skip and path and path[-1] == "error"):
                yield from strings(v, skip, (*path, k))
    elif isinstance(value, list):
        for v in value:
            yield from strings(v, skip, path)


def test_spark_texts_name_the_checkpoint_as_spark_prints_it(tmp_path, capsys):
    cp = SCENARIOS["spark-4.3.0/orphan-crc"].copy_to(tmp_path)
    commits = f"{qualify_root(str(cp))}/commits"
    for args in (["diagnose", str(cp)], ["diagnose", str(cp), "--spark", "4.3"], ["plan", str(cp)]):
        _, text = run(capsys, *args)
        assert "<cp>" not in text, args
        _, out = run(capsys, *args, "--format", "json")
        leaks = [(p, s) for p, s in strings(json.loads(out)) if "<cp>" in s]
        assert not leaks, (args, leaks)
    _, out = run(capsys, "diagnose", str(cp), "--spark", "4.3", "--format", "json")
    error = json.loads(out)["result"]["restart"]["error"]
    # What the driver log shows (sparklab recorded it with the root as <cp>): the search text matches it.
    assert error["search"] == f"Multiple streaming queries are concurrently using {commits}"
    _, text = run(capsys, "diagnose", str(cp), "--spark", "4.3")
    assert f"search log for Multiple streaming queries are concurrently using {commits}" in flat(text)


def test_one_batch_or_epoch_is_singular():
    assert ids_text("batch", [11]) == "batch 11"
    assert ids_text("epoch", [3]) == "epoch 3"
    assert span_text("batch", 10, 11) == "batches 10..11"
    assert ids_text("epoch", [3, 5]) == "epochs 3, 5"


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=50))
def test_ids_text_is_singular_exactly_for_one_id(ids):
    text = ids_text("batch", ids)
    assert text.startswith("batch " if len(set(ids)) == 1 else "batches ")
    assert text.endswith(range_text(ids)) and ".." not in text.split(" ", 1)[0]


def test_findings_say_batch_11_and_epoch_3(tmp_path, capsys):
    cp = SCENARIOS["spark-4.3.0/file-sink-rollback"].copy_to(tmp_path / "a")
    _, text = run(capsys, "diagnose", str(cp))
    assert "skip batch 11 when it is planned again" in flat(text) and "11..11" not in text
    cp = SCENARIOS["spark-4.3.0/continuous-uncommitted-epoch"].copy_to(tmp_path / "b")
    _, text = run(capsys, "diagnose", str(cp))
    assert "offsets/ holds epoch 3 after" in flat(text) and "epochs 3 " not in flat(text)


def test_a_failure_summary_is_spark_s_whole_sentence(tmp_path, capsys):
    cp = SCENARIOS["spark-4.3.0/continuous"].copy_to(tmp_path)
    _, text = run(capsys, "diagnose", str(cp), "--spark", "3.5", "--mode", "micro-batch")
    first = flat(text[text.index("Restart on") : text.index("\nSpark error")])
    assert first.startswith(
        "Restart on Spark 3.5 (micro-batch): FAILS before running any batch: Cannot invoke"
    )
    assert first.endswith('"...MicroBatchExecution.watermarkTracker()" is null')
    _, text = run(capsys, "diagnose", str(cp))
    matrix = text[text.index("Restart matrix") : text.index("Findings")]
    assert "..." not in matrix.replace('"...', "") and "is null" in flat(matrix)


def test_after_spark_s_words_no_sentence_starts_in_lower_case(tmp_path, capsys):
    cp = SCENARIOS["spark-4.3.0/orphan-crc"].copy_to(tmp_path)
    _, out = run(capsys, "diagnose", str(cp), "--format", "json")
    finding = next(f for f in json.loads(out)["result"]["findings"] if f["code"] == "CD504")
    assert finding["message"].startswith("A restart on Spark 4.3 fails: Multiple streaming queries")
    assert "commits. Cause: commits/.3.crc remains" in finding["message"]
    for sentence in re.split(r"(?<=[a-z0-9)])\. ", finding["message"])[1:]:
        assert not sentence[:1].islower(), sentence


def test_written_by_names_the_lines_the_matrix_stars(tmp_path, capsys):
    for sid in ("spark-4.1.4/dedup", "spark-4.0.5/dedup", "spark-4.3.0/orphan-crc"):
        cp = SCENARIOS[sid].copy_to(tmp_path / sid.replace("/", "_"))
        _, out = run(capsys, "diagnose", str(cp), "--format", "json")
        result = json.loads(out)["result"]
        starred = [c["spark"] for c in result["matrix"] if c["role"] == "as-configured"]
        label = result["written_by"]["label"]
        named = re.findall(r"\d\.\d", label)
        assert named == starred or (label.endswith("or newer") and named == starred[:1]), (
            sid,
            label,
            starred,
        )
    cp = SCENARIOS["spark-4.1.4/dedup"].copy_to(tmp_path / "again")
    _, text = run(capsys, "diagnose", str(cp))
    assert "Written by  Spark 4.1.x, micro-batch mode" in text


def test_plan_names_the_sink_the_operator_told(tmp_path, capsys):
    cp = SCENARIOS["spark-4.3.0/async-tail"].copy_to(tmp_path)
    _, text = run(capsys, "plan", str(cp), "--sink", "noop")
    sink = next(line for line in text.splitlines() if line.startswith("Sink"))
    assert sink.split(None, 1)[1].startswith("noop") and sink.strip() != "Sink        -"
