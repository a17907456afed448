"""The nightly run's use of the results store (``harness.history``, docs/history.md): it
writes the run at its end, marks failures of cases that flap, and serves ``--baseline last``.

A failing case is flaky when the store shows it changing verdict more than
``FLAKY_FLIPS`` times over its last ``FLAKY_RUNS`` stored runs of the same
configuration (vendor, case, platform, SDK, backend); this run's own verdict is not counted, so the
answer is the one ``hil history --flaky`` gave before the run. Its record carries the mark
(``CaseRecord.flaky``) into the journal, the summary and the report; ``--flaky-ok`` excuses it
the way a known issue is excused. The store is opened, and the database layer imported, only
when a case fails that no known issue covers (and for ``--baseline last``), so a run without
such failures costs no more than the write at its end.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.history import FLAKY_FLIPS
from harness.history.location import (
    OFF,
    NoStoreError,
    StoreError,
    check_location,
    configured,
    sqlite_file,
)
from harness.history.runinfo import this_host
from harness.policy.baseline import Baseline
from harness.results.records import CaseRecord
from harness.vendors import platform_vendors

if TYPE_CHECKING:
    from harness.history.importing import Written
    from harness.history.store import Store

LAST = "last"  # --baseline last: the last run of this configuration in the store


class StoreWarning(UserWarning):
    """The history store could not be read: failures are judged without it."""


class RunHistory:
    """One process's view of the store (``--hil-db``); raises StoreError for a location that
    is not a store URL or file."""

    def __init__(self, location: str | None) -> None:
        self.location = configured(location)
        self.on = self.location != OFF
        if self.on:
            check_location(self.location)  # another database's URL: a usage error at once
        self._store: Store | None = None
        self._unreadable = False

    def _open(self, create: bool) -> Store | None:
        """The store, opened once; ``create``: made if missing (raises StoreError), else None
        when there is none yet or it cannot be read (said once, as a warning)."""
        if self._store is not None and (self._store.writable or not create):
            return self._store
        if self._store is not None:  # opened to be read: a writer opens it again
            self._store.close()
            self._store = None
        if not create:
            path = sqlite_file(self.location)
            if self._unreadable or (path is not None and not path.is_file()):
                return None  # no store yet: no history to flap in, nothing to import
        _import_layer()
        from harness.history.store import Store

        if create:
            self._store = Store.open(self.location, platform_vendors=platform_vendors())
        else:
            try:
                self._store = Store.open(
                    self.location, create=False, platform_vendors=platform_vendors()
                )
            except NoStoreError:
                self._unreadable = True
            except StoreError as exc:
                self._unreadable = True
                warnings.warn(StoreWarning(f"history store: {exc}"), stacklevel=3)
        return self._store

    def mark(self, record: CaseRecord) -> CaseRecord:
        """``record`` with its flaky mark when the history shows its configuration flapping."""
        store = self._open(create=False) if self.on else None
        if store is None:
            return record
        from harness.history import queries

        try:
            found = queries.flip_record(store, record)
        except StoreError as exc:
            warnings.warn(StoreWarning(f"history store: {exc}"), stacklevel=2)
            return record
        if found is None or found.flips <= FLAKY_FLIPS:
            return record
        return dataclasses.replace(record, flaky=found.mark())

    def last_baseline(
        self, configuration: str, vendor: str, run: str, failing: tuple[str, ...]
    ) -> Baseline:
        """The last stored run of ``configuration`` and ``vendor`` other than ``run``, as a
        baseline; an empty one, saying so, when the store has none."""
        store = self._open(create=True)
        assert store is not None
        from harness.history import queries

        found = queries.last_run(store, configuration, vendor, run)
        if found is None:
            label = f"no earlier run of this configuration in {store.name} (vendor {vendor})"
            return Baseline(label, failing, latest={}, vendor=vendor)
        return Baseline(found.results, failing, latest=found.latest, vendor=vendor)

    def write(
        self, results: Path, latest: list[CaseRecord], meta: dict[str, Any] | None = None
    ) -> Written:
        """Write this run's results folder, whose journal holds ``latest``, into the store
        (raises StoreError); ``meta``: the run's run.json entries where they are not the
        folder's (a run appended to it)."""
        store = self._open(create=True)
        assert store is not None
        from harness.history.importing import write_folder

        return write_folder(store, results, this_host(), "run", latest, meta)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _import_layer() -> None:
    """Import the database layer, when first needed, and take what it built out of the
    garbage collector's sight: its tens of thousands of long-lived objects would otherwise be
    traversed by every full collection for the rest of the run (seconds over the main job)."""
    if "harness.history.queries" in sys.modules:
        return
    import harness.history.importing
    import harness.history.queries  # noqa: F401  (both import the store and SQLAlchemy)

    gc.freeze()
