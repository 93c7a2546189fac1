"""The whole command's time limit (`--time-limit`), handed explicitly to every
search that could run long: the op-order search, the patch-stage search, the
exact planner, the overlap-free comparison plan.  A search asks how much time
remains, stops when none does, keeps the best it has found and records that
it was cut short (`cut`); the command then says so in one line
(`stopped_line`).

Progress: a stage that is still running 2 s after the command started shows
one updating line on stderr, only when stderr is a terminal (tests and pipes
get nothing but the one "stopped at the time limit" line).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TextIO

# A command this old shows progress (on a terminal).
PROGRESS_AFTER_SECONDS = 2.0
# The smallest interval between two progress updates.
PROGRESS_EVERY_SECONDS = 0.25


def check_time_limit(seconds: float) -> float:
    """`seconds` if it is a usable time limit (finite, above 0); ValueError
    naming the rule otherwise."""
    if math.isnan(seconds) or math.isinf(seconds) or seconds <= 0:
        raise ValueError(f"must be a finite number of seconds above 0, not {seconds!r}")
    return seconds


class Deadline:
    """A point in time every search of one command stops by."""

    def __init__(
        self,
        seconds: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        progress_to: TextIO | None = None,
    ):
        self.seconds = seconds
        self._clock = clock
        self.started = clock()
        self.end = math.inf if seconds is None else self.started + seconds
        self.cut_stages: list[str] = []  # the searches the deadline stopped, in order
        self._progress_to = progress_to
        self._last_progress = -math.inf
        self._progress_shown = False

    @property
    def progress_stream(self) -> TextIO | None:
        """Where this deadline's progress goes (None: nowhere)."""
        return self._progress_to

    @classmethod
    def for_terminal(cls, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> Deadline:
        """A deadline whose progress goes to stderr when stderr is a terminal."""
        stream = sys.stderr
        return cls(seconds, clock=clock, progress_to=stream if _is_terminal(stream) else None)

    def remaining(self) -> float:
        """Seconds left (0 when none; inf without a limit)."""
        return max(0.0, self.end - self._clock())

    def expired(self) -> bool:
        return self._clock() >= self.end

    def limit(self, seconds: float | None) -> float | None:
        """A search's own time limit (None: its default) shortened to what remains."""
        left = self.remaining()
        if math.isinf(left):
            return seconds
        return left if seconds is None else min(seconds, left)

    def cut(self, stage: str) -> None:
        """Record that `stage` stopped at the deadline and kept its best so far."""
        if stage not in self.cut_stages:
            self.cut_stages.append(stage)

    def stopped_line(self) -> str | None:
        """One line saying which searches the time limit stopped, or None."""
        if not self.cut_stages:
            return None
        limit = f"{self.seconds:g} s" if self.seconds is not None else "its"
        return (
            f"note: stopped at the time limit ({limit}, --time-limit) in: {', '.join(self.cut_stages)}; "
            "kept the best plan found so far"
        )

    def progress(self, stage: str, done: int | None = None, total: int | None = None) -> None:
        """Show `stage` (at `done` of `total`) on a terminal, once the command
        is 2 s old, a few times a second at most."""
        if self._progress_to is None:
            return
        now = self._clock()
        if now - self.started < PROGRESS_AFTER_SECONDS or now - self._last_progress < PROGRESS_EVERY_SECONDS:
            return
        self._last_progress = now
        self._progress_shown = True
        count = f" {done}/{total}" if done is not None and total is not None else ""
        self._progress_to.write(f"\rmcu-plan: {stage}{count} ({now - self.started:.0f} s)\x1b[K")
        self._progress_to.flush()

    def end_progress(self) -> None:
        """Clear the progress line, if one was shown."""
        if self._progress_shown and self._progress_to is not None:
            self._progress_to.write("\r\x1b[K")
            self._progress_to.flush()
            self._progress_shown = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
