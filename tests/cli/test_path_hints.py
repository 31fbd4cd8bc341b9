"""A path that is not a checkpoint is answered with the checkpoint the operator meant: the near
match of a mistyped part (wherever it is), the checkpoint a file or directory belongs to, the
checkpoints a directory holds and the command for them; a missing storage package is exit 8."""

from __future__ import annotations

import json

from checkpoint_doctor.exit_codes import ExitCode
from tests.scenarios import all_scenarios
from tests.scenarios import run_cli as run

SCENARIOS = {s.id: s for s in all_scenarios()}


def fleet(tmp_path):
    orders = SCENARIOS["spark-4.3.0/async-tail"].copy_to(tmp_path / "fleet" / "orders")
    clicks = SCENARIOS["spark-4.3.0/stateless"].copy_to(tmp_path / "fleet" / "clicks")
    return tmp_path / "fleet", orders, clicks


def test_a_typo_in_a_middle_part_suggests_the_checkpoint_meant(tmp_path, capsys):
    root, orders, _ = fleet(tmp_path)
    code, out, err = run(capsys, "diagnose", str(root / "ordrs" / "checkpoint"))
    assert code == ExitCode.UNREADABLE and out == "" and err.count("\n") == 1
    assert f"did you mean {orders}?" in err


def test_the_metadata_file_names_its_checkpoint_and_the_command(tmp_path, capsys):
    _, orders, _ = fleet(tmp_path)
    for args in (["diagnose", str(orders / "metadata")], ["plan", str(orders / "offsets")]):
        code, _, err = run(capsys, *args)
        assert code == ExitCode.UNREADABLE and err.count("\n") == 1, err
        assert err.rstrip().endswith(f"checkpoint-doctor {args[0]} {orders}"), err


def test_a_checkpoint_s_parent_names_the_checkpoint_inside(tmp_path, capsys):
    _, orders, _ = fleet(tmp_path)
    code, _, err = run(capsys, "diagnose", str(orders.parent))
    assert code == ExitCode.UNREADABLE and err.count("\n") == 1
    assert err.rstrip().endswith(f"it holds the checkpoint {orders}: checkpoint-doctor diagnose {orders}")


def test_a_fleet_directory_names_its_checkpoints_and_audit(tmp_path, capsys):
    root, orders, clicks = fleet(tmp_path)
    code, _, err = run(capsys, "inspect", str(root))
    assert code == ExitCode.UNREADABLE and err.count("\n") == 1
    assert f"it holds 2 checkpoints ({clicks}, {orders})" in err
    assert err.rstrip().endswith(f"checkpoint-doctor audit {root}")


def test_one_checkpoint_is_counted_in_the_singular(tmp_path, capsys):
    _, orders, _ = fleet(tmp_path)
    _, out, _ = run(capsys, "audit", str(orders.parent))
    found = next(line for line in out.splitlines() if line.startswith("Found"))
    assert found.split(None, 1)[1].startswith("1 checkpoint,"), found


def test_a_missing_storage_package_is_unreadable_and_names_the_install(capsys, monkeypatch):
    # The test extra installs gcsfs (tests/s3/ runs it against fake-gcs-server): an operator without
    # it is one whose import fails (None in sys.modules makes ``import`` raise). Every gcsfs module,
    # not only the package: once a test before this one imported ``gcsfs.core``, ``from gcsfs.core
    # import`` finds it in sys.modules without importing ``gcsfs`` again (importlib's _find_and_load).
    import sys

    import gcsfs.core  # noqa: F401  the state a tests/s3/ run leaves: the check must not depend on order

    for name in {"gcsfs", "gcsfs.core", "gcsfs.retry", *(n for n in sys.modules if n.startswith("gcsfs."))}:
        monkeypatch.setitem(sys.modules, name, None)
    for args in (["diagnose", "gs://bucket/ckpt"], ["audit", "gs://bucket/fleet"]):
        code, out, err = run(capsys, *args)
        assert code == ExitCode.UNREADABLE and out == "" and err.count("\n") == 1, (args, err)
        assert "needs the 'gcsfs' package" in err and "pip install 'checkpoint-doctor[gcs]'" in err
    code, out, _ = run(capsys, "diagnose", "gs://bucket/ckpt", "--format", "json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == ExitCode.UNREADABLE
    assert "pip install 'checkpoint-doctor[gcs]'" in doc["error"]["message"]


def test_history_of_a_mistyped_path_says_it_is_not_there_not_that_nothing_was_applied(tmp_path, capsys):
    root, orders, _ = fleet(tmp_path)
    code, out, err = run(capsys, "history", str(root / "ordrs" / "checkpoint"))
    assert code == ExitCode.UNREADABLE and out == "" and err.count("\n") == 1
    assert "no such file or directory" in err and f"did you mean {orders}?" in err
    code, out, _ = run(capsys, "history", str(orders))  # there, never applied: said so, exit 0
    assert code == ExitCode.OK and out.startswith(f"No apply was recorded for {orders}")
