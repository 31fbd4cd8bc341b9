"""Helpers to use the real Spark fixtures in tests: copy, load, and describe their restarts."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from checkpoint_doctor.diagnosis import DiagnoseOptions
from checkpoint_doctor.diagnosis.changes.facts import JobFacts, job_facts_from_dict
from checkpoint_doctor.reading.pipeline import load_checkpoint

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
TWO_SOURCE_QUERIES = {"stateless_two_sources": 2, "stream_join": 2, "two_kinds": 2}
#: A restart by a job module of fixtures/jobs/ (scripts/sparklab.py): ``job:PATH:FUNCTION``.
JOB_PREFIX = "job:"


def job_facts_for(spec: str, version: str, paths: dict[str, str] | None = None) -> JobFacts:
    """Return what Spark ``version`` said the job ``PATH:FUNCTION`` runs, as recorded by
    ``scripts/generate_fixtures.py --stage jobs`` (fixtures/jobs/facts-<version>.json).

    ``paths`` (``input``, ``sink``) replace the scratch paths the probe gave the file jobs
    (``probe_paths``) as sparklab gave a restart its own: the facts then name what the restart read
    and wrote."""
    entries = json.loads((FIXTURES / "jobs" / f"facts-{version}.json").read_text())
    entry = next(e for e in entries if e["job"] == spec)
    facts = entry["facts"]
    for name, probed in (entry.get("probe_paths") or {}).items():
        if paths and paths.get(name):
            facts = json.loads(json.dumps(facts).replace(json.dumps(probed)[1:-1], paths[name]))
    return job_facts_from_dict(spec, facts, facts["elapsed_s"])


@dataclass(frozen=True)
class Scenario:
    """One fixture scenario directory and its scenario.json."""

    path: Path
    data: dict

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def has_sink(self) -> bool:
        return (self.path / "sink").exists()

    def copy_to(self, dest: Path) -> Path:
        """Copy checkpoint (and sink/input) to dest, recreating empty dirs git drops."""
        dest.mkdir(parents=True, exist_ok=True)
        for part in ("checkpoint", "sink", "input"):
            if (self.path / part).exists():
                shutil.copytree(self.path / part, dest / part)
        cp = dest / "checkpoint"
        cp.mkdir(exist_ok=True)
        # facts.empty_dirs are relative to the scenario directory ("checkpoint/commits"): git drops them
        for d in self.data.get("facts", {}).get("empty_dirs", []):
            (dest / d).mkdir(parents=True, exist_ok=True)
        return cp

    def load(self, dest: Path, **kw):
        """Copy and load a snapshot (with the sink when the scenario has one)."""
        cp = self.copy_to(dest)
        sink = str(dest / "sink") if self.has_sink else None
        return load_checkpoint(str(cp), sink_path=sink, **kw)

    def read(self, dest: Path, **kw):
        """Load a snapshot for reading only: in place when git kept the scenario whole (reading never
        writes), else from a copy that recreates the empty directories git drops."""
        if self.data.get("facts", {}).get("empty_dirs"):
            return self.load(dest, **kw)
        sink = str(self.path / "sink") if self.has_sink else None
        return load_checkpoint(str(self.path / "checkpoint"), sink_path=sink, **kw)


def scenario_at(path: Path) -> Scenario:
    """Return the scenario in a fixture directory (``fixtures/spark-4.3.0/async-tail``)."""
    return Scenario(path, json.loads((path / "scenario.json").read_text()))


def copy_scenario(path: Path, dest: Path) -> Path:
    """Copy a scenario's checkpoint (and sink/input) to ``dest`` with its empty directories; return
    the checkpoint copy."""
    return scenario_at(path).copy_to(dest)


def all_scenarios() -> list[Scenario]:
    """Return every scenario, sorted by id."""
    out = []
    for p in sorted(FIXTURES.glob("spark-*/*/scenario.json")):
        out.append(Scenario(p.parent, json.loads(p.read_text())))
    return out


def scenario(scenario_id: str) -> Scenario:
    """Return the scenario of an id (``spark-4.3.0/async-tail``)."""
    return next(s for s in all_scenarios() if s.id == scenario_id)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI in this process; return its exit code, stdout and stderr."""
    from checkpoint_doctor.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def restart_cases() -> list[tuple[Scenario, int, dict]]:
    """Return (scenario, index, restart record) for every recorded Spark restart."""
    return [(s, i, r) for s in all_scenarios() for i, r in enumerate(s.data.get("restarts", []))]


def restart_paths(scenario: Scenario) -> dict[str, str]:
    """Return the paths sparklab gave a restart's job (``scripts/sparklab.py`` JOB_PATH_ENV): the
    input the oracle restored where the file source read it, and the sink read with the checkpoint
    (:meth:`Scenario.read`)."""
    out = {}
    if scenario.data["written_with"].get("input_path"):
        out["input"] = scenario.data["written_with"]["input_path"]
    if scenario.has_sink:
        out["sink"] = str(scenario.path / "sink")
    return out


def options_for_restart(scenario: Scenario, restart: dict) -> DiagnoseOptions:
    """Return the diagnose options that describe one recorded restart."""
    query = restart.get("query") or scenario.data["query"]["name"]
    sources = TWO_SOURCE_QUERIES.get(query, scenario.data["query"].get("sources", 1))
    stateful = bool(scenario.data["query"].get("stateful"))
    job = None
    if query.startswith(JOB_PREFIX):
        # The changed query: what the restarting line's Spark said the job runs (diagnose --job).
        job = job_facts_for(query[len(JOB_PREFIX) :], restart["spark"], restart_paths(scenario))
        sources, stateful = len(job.sources), job.stateful
    # The session confs the restart ran with: the query's own (sparklab QUERY_CONFS, e.g. the
    # checkpoint format of rocksdb_v2) plus the restart's, as recorded with the result.
    confs = dict((restart.get("result") or {}).get("confs") or {})
    confs.update(restart.get("confs") or {})
    return DiagnoseOptions(
        spark=".".join(restart["spark"].split(".")[:2]),
        mode=restart["mode"],
        sources=sources,
        stateful=stateful,
        live_window_s=0,
        confs=tuple(sorted(confs.items())),
        job=job,
    )
