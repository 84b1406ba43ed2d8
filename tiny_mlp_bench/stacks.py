"""The software stacks a run can train on: today's (the project's own loops in its environment) and the stacks the
era study sets beside it, each run by the era runner (era_runner.py) on the host or in an image of its own.

Each stack differs from its neighbour in as little as it can, so that a change in a loop's time has one cause:
libraries at one Python (era against newest_39), Python with its Debian at one set of libraries (newest_39 against
newest_311), the newest libraries with Python 3.9 wheels against today's at Python 3.11 (newest_311 against
today_image), a container against none (today_image against today_runner: the image's Python is Debian 12's build,
the host's environment this machine's own), and the runner's copy of the loops against the project's own
(today_runner against today). era_twin is era's very image under another name: the A/A control of
the stacks, what this machine fakes between identical software.

The release sweep (RELEASES) runs Keras 2's `fit` alone on one TensorFlow release after another, each image with that
release and the pins of its day on Debian 11's Python 3.9, both ends at the era study's versions; CAUSES are the rungs
on today's stack that each take one suspected cause of a release's change away."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

# A run's stack before the era study: every record written before version 11.
TODAY = "today"
# The rungs the era runner runs of each framework: the asker's loop, the same on one thread, and torch's with the
# clock read at each part of its step.
RUNGS = {"torch": ("seed", "one_thread", "parts"), "tf_keras": ("seed", "one_thread")}
DEVICES = ("cpu",)
# Epochs of a stack's untimed warm-up: its files read and its framework imported, before its first timed run.
WARM_UP_EPOCHS = 2
# The era runner's name for each framework's loop.
RUNNER_LOOPS = {"torch": "torch", "tf_keras": "keras"}


# The release sweep's TensorFlow releases (its images' locks, locks/wheels.py), and where each keeps Keras 2: inside
# TensorFlow until 2.6, the keras package (as tf.keras) until 2.16, then tf_keras beside it.
RELEASE_VERSIONS = (
    ("2.5", "2.5.0", "tensorflow.python.keras"),
    ("2.6", "2.6.5", "the keras package"),
    ("2.8", "2.8.4", "the keras package"),
    ("2.9", "2.9.3", "the keras package"),
    ("2.11", "2.11.1", "the keras package"),
    ("2.15", "2.15.1", "the keras package"),
    ("2.16", "2.16.2", "tf_keras"),
    ("2.20", "2.20.0", "tf_keras"),
)


def release_stack(release: str) -> str:
    return "tf_" + release.replace(".", "_")


@dataclass(frozen=True)
class Stack:
    name: str
    what: str  # in the report's words
    # The image its runs run in: a name, "config" for the config's image of the run's framework, or None for the
    # host's own environment. Today's stack runs the project's own loops (jobs/run.py), every other the era runner.
    image: str | None = None
    frameworks: tuple[str, ...] = ("torch", "tf_keras")  # the loops its image holds

    def image_for(self, framework: str, images: dict) -> str | None:
        """The image a run of ``framework`` runs in: the stack's own, or, for today_image, the config's image of
        that framework (the torch image for torch, the keras image for Keras 2)."""
        if self.image == "config":
            return images["torch" if framework == "torch" else "keras"]
        return self.image


STACKS = {
    stack.name: stack
    for stack in (
        Stack(TODAY, "today's loops and environment, as every study runs them"),
        Stack("today_runner", "the era runner's copy of the loops, in today's environment"),
        Stack("today_image", "the era runner in today's container images (CPU builds)", image="config"),
        Stack(
            "newest_311",
            "torch 2.8.0 and TensorFlow 2.20.0 with tf_keras on Debian 12's Python 3.11",
            image="docker://ghcr.io/tiny-mlp-bench/newest-311:0.2.0",
        ),
        Stack(
            "newest_39",
            "the same releases on Debian 11's Python 3.9, the newest with Python 3.9 wheels",
            image="docker://ghcr.io/tiny-mlp-bench/newest-39:0.2.0",
        ),
        Stack(
            "era",
            "torch 1.7.1 and TensorFlow 2.5.0 (its tf.keras is Keras 2) on Debian 11's Python 3.9, the oldest "
            "that install here",
            image="docker://ghcr.io/tiny-mlp-bench/era:0.2.0",
        ),
        Stack(
            "era_twin",
            "era's very image under another name: the A/A control of the stacks",
            image="docker://ghcr.io/tiny-mlp-bench/era:0.2.0",
        ),
        *(
            Stack(
                release_stack(release),
                f"TensorFlow {version}, Keras 2 as {keras}, on Debian 11's Python 3.9",
                image=f"docker://ghcr.io/tiny-mlp-bench/tf-{release}:0.2.0",
                frameworks=("tf_keras",),
            )
            for release, version, keras in RELEASE_VERSIONS
        ),
    )
}
# The sweep's stacks in release order, each one's TensorFlow, and each step from one release to the next (newer, older).
RELEASES = tuple(release_stack(release) for release, _, _ in RELEASE_VERSIONS)
TENSORFLOW_OF = {release_stack(release): version for release, version, _ in RELEASE_VERSIONS}


def release_change(newer: str, older: str) -> str:
    return f"TensorFlow {TENSORFLOW_OF[older]} to {TENSORFLOW_OF[newer]}"


RELEASE_STEPS = tuple((newer, older, release_change(newer, older)) for older, newer in itertools.pairwise(RELEASES))
# The cause rungs, on today's stack: (framework, rung, the release step (newer, older) it is suspected of, or None where
# the sweep has no step of that loop, the cause in the report's words). Each takes one cause away from the asker's loop
# (the backends' RUNGS say how).
CAUSES = (
    ("tf_keras", "onednn_off", (release_stack("2.9"), release_stack("2.8")), "oneDNN's CPU kernels (on from 2.9)"),
    ("tf_keras", "legacy_adam", (release_stack("2.11"), release_stack("2.9")), "the new Adam (the default from 2.11)"),
    ("torch", "optimizer_imported", None, "torch 2's compiler import at the first optimizer"),
)
# Each comparison that changes one thing, newer over older: (newer, older, what changed).
STEPS = (
    ("today_runner", TODAY, "the runner's copy of the loops against the project's own"),
    ("today_runner", "today_image", "this machine's environment against today's images (and their Python build)"),
    ("today_image", "newest_311", "today's libraries against the newest with Python 3.9 wheels, at Python 3.11"),
    ("newest_311", "newest_39", "Python 3.11 with Debian 12 against Python 3.9 with Debian 11"),
    ("newest_39", "era", "the newest libraries with Python 3.9 wheels against the oldest that install here"),
    ("era_twin", "era", "the same image under two names: what the machine fakes"),
)


def runs_on_stack(framework: str, variant: str, device: str, stack: str) -> bool:
    """Whether the era runner runs this rung on ``stack``: the asker's two loops, each on one thread, and torch's read
    part by part, on the CPU, where the stack's image holds the framework."""
    return variant in RUNGS.get(framework, ()) and device in DEVICES and framework in STACKS[stack].frameworks


def stack_engine(config: dict) -> str:
    """The engine a run on another stack starts its image with: the config's container_engine, or Podman where the
    steps run in the local environment (container_engine none)."""
    engine = config.get("container_engine", "none")
    return "podman" if engine == "none" else engine
