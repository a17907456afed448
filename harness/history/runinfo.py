"""What a run records about itself for the store, in ``run.json`` (``"history"``): its run id,
the harness's revision and the job's configuration. Plain data, no database layer."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from harness.results.journal import read_run_metadata
from harness.results.records import CaseRecord

HISTORY_KEY = "history"  # run.json: {"run": id, "revision": harness revision, "configuration"}


def history_entry(results: Path, resume: bool, configuration: str) -> dict[str, str]:
    """run.json's ``history`` entry for a run starting in ``results``: a fresh run id, or
    with ``resume`` the id of the run it continues (its records are one run's)."""
    run_id = ""
    if resume:
        run_id = str(read_run_metadata(results).get(HISTORY_KEY, {}).get("run", ""))
    return {
        "run": run_id or uuid.uuid4().hex,
        "revision": harness_revision(),
        "configuration": configuration,
    }


def configuration(
    platform: str, sdk_option: str | None, backend: str, tier: str, shard: str
) -> str:
    """What makes two runs the same job, night after night (``--baseline last``): the
    options as given, so a job on the environment's SDK stays one job across SDK updates."""
    sdk = sdk_option or "environment"
    return f"platform={platform} sdk={sdk} backend={backend} tier={tier} shard={shard or 'all'}"


def harness_revision() -> str:
    """The git revision of the harness's checkout ("+dirty" with local changes), or its
    installed version when it is not a checkout."""
    from harness import __version__

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return __version__
    try:
        found = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty=+dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return __version__
    return found.stdout.strip() or __version__


def utc_time(started: str) -> str:
    """An ISO 8601 time as UTC ``YYYY-MM-DDTHH:MM:SS+00:00``; as given when not one."""
    try:
        moment = datetime.fromisoformat(started)
    except ValueError:
        return started
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def this_host() -> str:
    return os.uname().nodename


def legacy_vendor(platform_vendors: Mapping[str, str], platform: str) -> str:
    """The vendor of a run or record on ``platform`` written before runs recorded theirs: the
    vendor ``platform_vendors`` (lower-case platform -> vendor name, the installed vendors')
    gives its platform (``P[,P...]``: the first); "" (unknown) for ``all`` or another one."""
    return platform_vendors.get(platform.split(",")[0].strip().lower(), "")


def stored_vendor(record: CaseRecord, platform_vendors: Mapping[str, str]) -> str:
    """The vendor the store keeps for ``record``: its own, else its platform's
    (``legacy_vendor``)."""
    return record.vendor or legacy_vendor(platform_vendors, record.platform)
