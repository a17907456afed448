"""Where a long run is: cases done of total, elapsed, estimated remaining, the current case.

The estimate weighs the remaining cases by their cost estimates (``harness.policy.tiers``)
at the pace seen so far (elapsed seconds per estimated second of the cases done), so one slow
case ahead shows up in the estimate before it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.policy.tiers import estimated_cost

DEFAULT_EVERY = 25  # cases between two progress lines in a log (CI, not a terminal)


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass
class Progress:
    pending: dict[str, float] = field(default_factory=dict)  # case id -> estimated seconds
    done: int = 0
    done_cost: float = 0.0

    @classmethod
    def of(cls, case_ids: list[str]) -> Progress:
        return cls({case_id: estimated_cost(case_id).seconds for case_id in case_ids})

    @property
    def total(self) -> int:
        return self.done + len(self.pending)

    def finished(self, case_id: str) -> None:
        if case_id in self.pending:
            self.done += 1
            self.done_cost += self.pending.pop(case_id)

    def line(self, elapsed_s: float, current: str = "") -> str:
        text = f"npu-hil [{self.done}/{self.total}] elapsed {_clock(elapsed_s)}"
        if self.done_cost > 0 and self.pending:
            remaining = elapsed_s / self.done_cost * sum(self.pending.values())
            text += f", about {_clock(remaining)} left"
        return f"{text}: {current}" if current else text
