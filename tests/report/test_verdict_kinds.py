"""The verdict kinds table (harness/judge/verdicts.yaml) is the one list of verdicts: a word
added to it shows in every report and page, and the table refuses a word, letter or severity
given twice."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.helpers import paths

from harness.judge.verdict import KINDS_PATH, VerdictKindsError, load_kinds

NEW_WORD = "sdk-hang"
# In a fresh interpreter: the table read with one more kind (the only fault of this test:
# PyYAML's loader adds it as it reads the table),
# then two nights of it written by the harness's writers and reported by ``hil`` itself: each
# night's report, one report of both nights (its two SDKs side by side) and the history page.
SCRIPT = """
import sys
from pathlib import Path

import yaml

read = yaml.safe_load


def with_new_kind(text):
    data = read(text)
    if isinstance(data, dict) and "verdicts" in data and "properties" not in data:
        data["verdicts"].append(
            {"word": "%(word)s", "letter": "H", "severity": 45, "pytest": "fail",
             "arrays": "failures", "tint": "#abcdef", "colour": "#123456",
             "meaning": "the board hung"}
        )
    return data


yaml.safe_load = with_new_kind

from tests.fakes.history_nights import FLAPPING, STABLE, Night, write

from harness.cli import main
from harness.results.journal import Journal, write_run_metadata
from tests.fakes.history_nights import record

root = Path(sys.argv[1])
nights = [
    Night(0, "2.3.2", "abc000000001", {STABLE: "confirmed", FLAPPING: "violation"}),
    Night(1, "2.5.0", "abc000000001", {STABLE: "%(word)s", FLAPPING: "%(word)s"}),
]
folders = [write(night, root) for night in nights]
both = root / "both"
write_run_metadata(both, {"started": "2026-11-02T02:00:00+00:00", "platform": "rk3562"})
journal = Journal(both)
for night in nights:
    for case_id, verdict in night.verdicts.items():
        journal.append(record(case_id, verdict, night))
store = str(root / "history.sqlite")
for folder in [*folders, both]:
    assert main(["report", str(folder)]) == 0, folder
assert main(["history", "import", *map(str, folders), "--hil-db", store]) == 0
assert main(["history", "--html", str(root / "page"), "--hil-db", store]) == 0
"""


def test_a_new_verdict_word_shows_in_every_report_and_page(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT % {"word": NEW_WORD}, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=paths.ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    night = tmp_path / "results-2026-11-02"
    both = tmp_path / "both"
    for folder in (night, both):
        markdown = (folder / "report.md").read_text()
        assert f"| {NEW_WORD} | 2 |" in markdown  # the verdict counts
        assert f"H {NEW_WORD}" in markdown  # the cells' legend
        assert f"**{NEW_WORD}**" in markdown  # a failing case, a card
        html = (folder / "report.html").read_text()
        assert f".v-{NEW_WORD} {{ background: #abcdef; }}" in html
        assert f'<span class="chip v-{NEW_WORD}">H</span>{NEW_WORD}' in html  # the legend
        assert f'<th class="v-{NEW_WORD}">{NEW_WORD}</th>' in html  # the verdict counts
        pages = "".join(page.read_text() for page in (folder / "report-cases").iterdir())
        assert f'<span class="verdict">{NEW_WORD}</span>' in pages  # the case cards
        assert re.search(rf'class="chip v-{NEW_WORD}"[^>]*>1H<', pages)  # the heat map
    # both SDKs side by side: the new word in their verdict counts and in the changes
    side_by_side = (both / "report.md").read_text().split("## SDK releases side by side")[1]
    assert f"confirmed 1, violation 1 | {NEW_WORD} 2" in side_by_side
    assert f"violation on 2.3.2 -&gt; {NEW_WORD} on 2.5.0" in side_by_side
    page = (tmp_path / "page" / "history.html").read_text()
    assert f'<i style="background:#123456"></i>{NEW_WORD}' in page  # the legend
    assert f'class="bar v-{NEW_WORD}"' in page and 'fill="#123456"' in page  # the bars
    assert f"<td>{NEW_WORD}</td>" in page  # now, in the cases that changed


@pytest.mark.parametrize(
    ("field", "value", "twin"),
    [
        ("word", "confirmed", "confirmed"),
        ("letter", "C", "confirmed"),
        ("severity", 10, "bad-input"),
    ],
)
def test_the_table_refuses_a_word_letter_or_severity_given_twice(
    tmp_path: Path, field: str, value: object, twin: str
) -> None:
    table = yaml.safe_load(KINDS_PATH.read_text())
    extra = {**table["verdicts"][0], "word": "new", "letter": "N", "severity": 99}
    table["verdicts"].append({**extra, field: value})
    path = tmp_path / "verdicts.yaml"
    path.write_text(yaml.safe_dump(table))
    with pytest.raises(VerdictKindsError) as caught:
        load_kinds(path)
    index = len(table["verdicts"]) - 1
    assert str(caught.value) == (
        f"{path}: verdicts[{index}].{field}: {value!r} is the {field} of {twin!r} too"
    )


def test_the_table_refuses_an_entry_its_schema_does_not_allow(tmp_path: Path) -> None:
    table = yaml.safe_load(KINDS_PATH.read_text())
    table["verdicts"][3]["pytest"] = "warn"
    path = tmp_path / "verdicts.yaml"
    path.write_text(yaml.safe_dump(table))
    with pytest.raises(VerdictKindsError) as caught:
        load_kinds(path)
    assert str(caught.value) == (
        f"{path}: verdicts[3].pytest: 'warn' is not one of ['pass', 'fail', 'skip', 'error']"
    )
