"""A store URL's password is never shown: not in ``hil history --help`` nor ``pytest --help``
(where it would be wrapped across lines, past a CI log's masking), nor in messages, whatever
the password holds ("/", "@", percent-encoding) and however it is given (``?password=``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from tests.helpers.paths import ROOT

from harness.cli import main
from harness.history.location import shown

SECRET = "pa/ss%40w0rd?x"  # a "/", a percent-encoded "@" and a "?" in it
URLS = [
    f"postgresql://hil:{SECRET}@127.0.0.1:1/db",
    f"postgresql+psycopg://hil:{SECRET}@[::1]:1/db?sslmode=disable",
    "postgresql://hil:p@ss@127.0.0.1:1/db",  # an "@" not encoded: masked up to the last one
    f"postgresql://hil@127.0.0.1:1/db?sslmode=disable&password={SECRET}",
]


def assert_hidden(text: str) -> None:
    """No piece of the password in ``text``, even with its lines and spaces joined."""
    joined = re.sub(r"\s+", "", text)
    for piece in ("pa/ss", "w0rd", "p@ss"):
        assert piece not in joined, text


@pytest.mark.parametrize("url", URLS)
def test_a_password_is_masked_however_it_is_written(url: str) -> None:
    masked = shown(url)
    assert_hidden(masked)
    assert "***" in masked


def test_what_is_not_a_password_is_shown_as_it_is() -> None:
    for location in ("/srv/h%40st/history.sqlite", "sqlite:///a:b/c.sqlite",
                     "postgresql://hil@127.0.0.1:5432/db?sslmode=require"):  # fmt: skip
        assert shown(location) == location


@pytest.mark.parametrize("url", URLS)
def test_hil_history_help_shows_no_password(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIL_DB", url)
    with pytest.raises(SystemExit) as stopped:
        main(["history", "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "--hil-db" in out
    assert_hidden(out)


def test_pytest_help_shows_no_password() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIL_DB": URLS[0]}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "--hil-db" in run.stdout
    assert_hidden(run.stdout + run.stderr)


@pytest.mark.parametrize("url", URLS)
def test_a_store_that_cannot_be_reached_is_named_without_its_password(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "rk3562/*", "--hil-db", url]) != 0
    out, err = capsys.readouterr()
    assert "127.0.0.1:1/db" in err or "[::1]:1/db" in err, err
    assert_hidden(out + err)
