"""What every probe shares: how a probe says what it measured (its clock is timing.time_calls)."""

from __future__ import annotations

from collections.abc import Callable

Say = Callable[[str], None]


def quiet(message: str) -> None:
    """A Say that says nothing: the probes' default where no one reads their progress."""
