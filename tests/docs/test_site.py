"""The documentation site builds with ``mkdocs build --strict`` (a broken link or anchor fails it), a
page that is not in the nav yet (a branch's docs/<branch>.md) does not, and the README stays a short
map of it. (The reference pages are held to the code where the code is tested: the exit-code table in
tests/cli/test_contract.py, the schema links in tests/cli/test_schemas.py, the severity rule in
tests/diagnosis/test_trust_verdicts.py; the examples in tests/docs/test_examples.py.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )


def copy_of_the_site(tmp_path: Path) -> Path:
    """mkdocs.yml and docs/ (the schemas link followed) in a temporary directory."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs", symlinks=False)
    return tmp_path / "mkdocs.yml"


def test_the_site_builds_strict(tmp_path: Path) -> None:
    proc = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    for name in ("commands", "exit-codes", "json", "kafka", "delta", "jobs", "repairs", "audit"):
        assert (tmp_path / "site" / name / "index.html").is_file(), name
    # the JSON Schemas ship with the site (docs/schemas links the package's)
    assert (tmp_path / "site" / "schemas" / "diagnose.json").read_bytes() == (
        REPO / "checkpoint_doctor" / "schemas" / "diagnose.json"
    ).read_bytes()


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    config = copy_of_the_site(tmp_path)
    page = tmp_path / "docs" / "commands.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the gone page](gone.md).\n", encoding="utf-8")
    proc = build(config, tmp_path / "site")
    assert proc.returncode != 0 and "gone.md" in proc.stderr, proc.stderr[-3000:]


def test_a_page_not_in_the_nav_builds(tmp_path: Path) -> None:
    """Each branch adds docs/<branch>.md; the integrator files it in the nav later."""
    config = copy_of_the_site(tmp_path)
    (tmp_path / "docs" / "some-branch.md").write_text("# Some branch\n\nWhat it did.\n", encoding="utf-8")
    proc = build(config, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "some-branch" / "index.html").is_file()


def nav_pages(nav: list) -> list[str]:
    """The pages of a nav (``- Title: page.md`` entries, sections of them), in order."""
    out: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            out.extend(nav_pages(value) if isinstance(value, list) else [value])
    return out


def reference_pages() -> list[str]:
    """The site's pages but the branch notes (which the integrator files as branches merge)."""
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return nav_pages([e for e in nav if "Branch notes" not in e])


def test_the_readme_is_short_and_maps_the_site() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    # the two fresh-machine commands, as CI and a newcomer run them
    assert (
        "pip install -q . && checkpoint-doctor diagnose fixtures/spark-4.3.0/async-tail/checkpoint" in readme
    )
    assert "\nscripts/test.sh\n" in readme
    linked = set(re.findall(r"\]\(docs/([a-z0-9-]+\.md)\)", readme))
    pages = reference_pages()
    assert len(pages) >= 14 and "index.md" in pages
    assert linked - {"index.md"} == set(pages) - {"index.md"}  # the map names every reference page
