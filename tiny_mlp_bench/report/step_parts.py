"""The asker's torch step split into the parts its probe measured, the same on every device: the aten ops' own host
time, the CUDA runtime's launch calls (none on cpu) and a remainder no op owns."""

from __future__ import annotations

from dataclasses import dataclass

US = 1e-6


@dataclass(frozen=True)
class StepParts:
    """One device's torch probe of the step, in seconds per step."""

    device: str
    step_s: float  # unprofiled: the median of its repeats
    step_low_s: float  # its fastest and slowest repeat
    step_high_s: float
    repeats: int
    aten_self_s: float  # the aten ops' self time under the profiler
    aten_ops: int  # aten events per step, nested ones included
    profiler_cost_s: float  # what the profiler adds to each op it records
    launch_s: float  # the launch calls' self time; 0 on cpu
    launch_calls: int
    launches_counted_twice: float = 0.0  # launch calls per step an op's self time holds too (unnested, overlapping)

    @property
    def aten_own_s(self) -> float:
        """The aten ops' own host time: their self time less the profiler's cost of each op."""
        return self.aten_self_s - self.profiler_cost_s * self.aten_ops

    @property
    def resolved(self) -> bool:
        """Whether the ops' own time came out above zero. The profiler's cost is timed on a no-work op apart from the
        step; where anything slows one of the two timings and not the other, the cost times the ops can exceed their
        whole self time, and the step cannot be split from that probe."""
        return self.aten_own_s > 0

    @property
    def measured_s(self) -> float:
        return self.aten_own_s + self.launch_s

    @property
    def remainder_s(self) -> float:
        """What no aten op or launch call owns: Python, the autograd engine's glue; negative where the measured parts
        exceed the step."""
        return self.step_s - self.measured_s

    def share(self, part_s: float) -> float:
        return part_s / self.step_s

    @property
    def confidence(self) -> float:
        """How often the range of ``repeats`` independent repeats holds their median's true value (order statistics:
        it misses only where every repeat falls on one side of it)."""
        return 1 - 2 * 0.5**self.repeats

    @property
    def accounts_for_step(self) -> bool:
        """Whether the measured parts alone land within the step's repeats' range: a remainder within its spread."""
        return self.step_low_s <= self.measured_s <= self.step_high_s


def step_parts(device: str, step: dict) -> StepParts | None:
    """The parts of a probe's ``seed_step`` block; None where the probe predates their measurement."""
    if "aten_self_us_per_step" not in step:
        return None
    return StepParts(
        device=device,
        step_s=step["value_us"] * US,
        step_low_s=min(step["repeat_us"]) * US,
        step_high_s=max(step["repeat_us"]) * US,
        repeats=len(step["repeat_us"]),
        aten_self_s=step["aten_self_us_per_step"] * US,
        aten_ops=step["aten_calls_per_step"],
        profiler_cost_s=step["profiler_cost_per_op"]["per_op_us"] * US,
        launch_s=step.get("launch_self_us_per_step", 0.0) * US,
        launch_calls=step.get("kernel_launch_calls_per_step", 0),
        launches_counted_twice=step.get("launch_calls_counted_twice_per_step", 0.0),
    )
