"""The progress lines of a run, shown by its controller (``harness.plugin.run_policy``): on a
terminal one line rewritten in place as each case starts; in a log (CI, not a terminal) one
line every ``--progress-every`` cases."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from harness.policy.progress import Progress
from harness.text import printable


class ProgressLines:
    def __init__(self, config: pytest.Config, every: int) -> None:
        self.config = config
        self.every = every
        self.progress = Progress()
        self.started = time.monotonic()
        self.live = sys.stdout.isatty() and not os.environ.get("CI")

    def expect(self, case_ids: list[str]) -> None:
        """The cases the run will run, from the start."""
        self.progress = Progress.of(case_ids)

    def case_started(self, case: str) -> None:
        if case not in self.progress.pending:
            return
        if self.live and self.every and self.config.get_verbosity() <= 0:
            line = printable(self.progress.line(time.monotonic() - self.started, case))
            self._reporter().rewrite(line[: self._width()], erase=True)

    def case_finished(self, case: str) -> None:
        if case not in self.progress.pending:
            return
        self.progress.finished(case)
        done = self.progress.done
        if not self.live and self.every and (done % self.every == 0 or not self.progress.pending):
            reporter = self._reporter()
            reporter.ensure_newline()  # pytest starts the file's name again after our line
            if reporter._tw.width_of_current_line:  # -q: after the progress characters
                reporter._tw.line()
            reporter._tw.line(self.progress.line(time.monotonic() - self.started))

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _width(self) -> int:
        return max(20, int(self._reporter()._tw.fullwidth) - 1)
