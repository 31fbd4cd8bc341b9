"""Every example in the README and the documentation site is real output: run as printed (against the
bundled fixtures, in a sandbox), it prints what the page shows and exits with the code the page names
(tests/docs/examples.py says how a page marks an example). A transcript that is not run says why; the
examples against a Kafka broker run in tests/kafka/test_docs_examples.py, on the session's broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import PAGES, REPO, blocks, check, examples, is_transcript

EXAMPLES = [e for e in examples() if "skip" not in e.spec and "kafka" not in e.spec]


def test_every_transcript_is_run_or_says_why_not() -> None:
    unmarked, unexplained = [], []
    for page in PAGES:
        for line, spec, body in blocks(page):
            where = f"{page.relative_to(REPO)}:{line}"
            if spec is None and is_transcript(body):
                unmarked.append(where)
            if spec is not None and "skip=" in spec and not spec.split("skip=", 1)[1].strip(" -"):
                unexplained.append(where)
    assert not unmarked, f"transcripts without an <!-- example: ... --> marker: {unmarked}"
    assert not unexplained, f"skipped examples without a reason: {unexplained}"


def test_the_readme_and_most_of_the_site_are_checked() -> None:
    assert any(e.page.name == "README.md" for e in EXAMPLES)
    run = [e for e in examples() if "skip" not in e.spec]
    assert len(run) >= 8 and len(run) >= 3 * (len(examples()) - len(run))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_the_example_prints_what_the_page_shows(example, tmp_path: Path) -> None:
    check(example, tmp_path)
