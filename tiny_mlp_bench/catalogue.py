"""The catalogue of frameworks, and what a rung is: the data the backend modules declare their rungs with. The rungs
themselves are gathered from those modules by tiny_mlp_bench.registry, above both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

DEVICES = ("cpu", "cuda")


class Role(Enum):
    """A rung's role: the report and the plan look rungs up by role, never by name, so renaming is an edit here."""

    ASKERS = "the asker's loop"  # the question's own loop (or its shape): each ladder's baseline
    REFERENCE = "the reference"  # the hand-written loop, no framework: forward, backward and Adam by hand
    FLOOR = "the floor"  # every per-operation call gone: the least a step costs on each device
    COMPILED_EPOCH = "the compiled epoch"  # torch's epoch in one compiled call, timed in kernel and the rest
    GRAPHED_STEP = "the graphed step"  # the asker's step replayed as one CUDA graph: the host's calls gone from it
    ONE_CALL_PER_EPOCH = "one call per epoch"  # Keras's train function called once an epoch
    PAUSE_FREE = "no pause after fit"  # Keras 2's fit without the autotuning thread it can wait for at its end
    AA_CONTROL = "the A/A control"  # another rung's very code under a second name: what the machine fakes between them
    ONE_THREAD = "one thread"  # the asker's loop with one CPU thread: what the thread pool costs beside a busy core
    STEP_PARTS = "the step's parts"  # the asker's loop with the clock read between its step's parts
    DATA_ON_DEVICE = (
        "the data on the device"  # no DataLoader, no copy, and Adam's kernels fused: what torch's step loses
    )


@dataclass(frozen=True)
class Framework:
    """A framework the study trains with."""

    name: str
    label: str  # what the report calls it
    image: str  # the key in the config's `images` of the image its steps run in
    backend: str  # the module in tiny_mlp_bench.backends that implements its rungs
    # Distributions a record names; a run skipped before importing the framework reads their metadata.
    packages: tuple[str, ...]
    probed: bool = False  # `tiny-mlp-bench probe` measures its fixed costs
    default: bool = True  # in the default study (a config without `frameworks`)
    keras: int | None = None  # the major version of Keras it is; None: not Keras
    keras_backend: str | None = None  # what that Keras runs on, as the report names it


@dataclass(frozen=True)
class Rung:
    """One rung of a framework's ladder; a framework's rungs are listed from the asker's loop down."""

    framework: str
    name: str
    devices: tuple[str, ...]
    removes: str  # what this rung takes away compared with the rung before it (Markdown)
    default: bool = True  # in the default study (a config without this framework's `variants`)
    role: Role | None = None  # what the report and the plan single it out as; None: an ordinary rung
    # Epochs one call into its loop runs: one number, or (device, number) pairs where it differs by device.
    call_epochs: int | tuple[tuple[str, int], ...] = 1
    # torch.compile into Inductor's on-disk cache: a study's first run compiles cold, later runs reuse it.
    compiles: bool = False
    # CPU threads it runs with, intra- and inter-op, whatever the job was given; None: the job's (cpu_threads).
    threads: int | None = None
    # Variables set before the framework's import, for a rung that turns one of its switches (TF_ENABLE_ONEDNN_OPTS).
    environment: tuple[tuple[str, str], ...] = ()
    # Modules imported with the framework, in the import phase before the timing point: a lazy import taken out of it.
    imports: tuple[str, ...] = ()
    # What runs it: a callable (fw, spec, data, clock) -> Training (backends/contract.py).
    loop: Callable | None = field(default=None, compare=False, repr=False)

    def runs_on(self, device: str) -> bool:
        return device in self.devices

    def epochs_per_call(self, device: str) -> int:
        if not self.runs_on(device):
            raise ValueError(self.why_not_on(device))
        return self.call_epochs if isinstance(self.call_epochs, int) else dict(self.call_epochs)[device]

    def why_not_on(self, device: str) -> str:
        where = " and ".join(self.devices)
        return f"{self.framework} {self.name} runs on {where} only"


FRAMEWORKS = (
    Framework("torch", "torch", image="torch", backend="torch_loops", packages=("torch",), probed=True),
    # Keras 2, the tf-keras package: the asker's tf.keras in 2020, on TensorFlow.
    Framework(
        "tf_keras",
        "Keras 2",
        image="keras",
        backend="keras_fit",
        packages=("tensorflow", "tf_keras"),
        probed=True,
        keras=2,
        keras_backend="TensorFlow",
    ),
    # Keras 3 on TensorFlow, today's tf.keras. Full study only: 60-82 s a fit on 2 cores breaks the 15-minute default.
    Framework(
        "keras",
        "Keras 3 on TensorFlow",
        image="keras",
        backend="keras_fit",
        packages=("tensorflow", "keras"),
        probed=True,
        default=False,
        keras=3,
        keras_backend="TensorFlow",
    ),
    # Full study only, as JAX: not the question's frameworks, and their 125 s on 2 cores breaks the 15-minute default.
    Framework(
        "keras_jax",
        "Keras 3 on JAX",
        image="torch",
        backend="keras_fit",
        packages=("jax", "keras"),
        probed=True,
        default=False,
        keras=3,
        keras_backend="JAX",
    ),
    Framework(
        "keras_torch",
        "Keras 3 on PyTorch",
        image="torch",
        backend="keras_fit",
        packages=("torch", "keras"),
        default=False,
        keras=3,
        keras_backend="PyTorch",
    ),
    Framework(
        "numpy",
        "NumPy and numba (hand-written)",
        image="torch",
        backend="numpy_reference",
        packages=("numba",),
    ),
    Framework("sklearn", "scikit-learn", image="torch", backend="sklearn_mlp", packages=("scikit-learn",)),
    Framework("jax", "JAX", image="torch", backend="jax_loops", packages=("jax", "optax"), default=False),
)


def one_thread(framework_name: str, loop: Callable) -> Rung:
    """A framework's one_thread rung: its asker's ``loop`` with one intra-op and one inter-op CPU thread (torch's and
    Keras 2's, on cpu)."""
    return Rung(
        framework_name,
        "one_thread",
        ("cpu",),
        "the thread pool, against `seed`: the same loop with one intra-op and one inter-op thread, so no fork and "
        "join around each op and no wait on a worker the OS has preempted",
        default=False,  # the busy-core study's (config/busy.yaml): on an idle machine the count hardly matters
        role=Role.ONE_THREAD,
        threads=1,  # set in the backend's prepare, before the framework's runtime starts
        loop=loop,
    )


class UnknownRung(KeyError):
    """A framework or rung the catalogue does not list."""


def framework(name: str) -> Framework:
    for found in FRAMEWORKS:
        if found.name == name:
            return found
    raise UnknownRung(f"unknown framework '{name}'; known: {', '.join(framework_names())}")


def framework_names() -> list[str]:
    return [f.name for f in FRAMEWORKS]


def keras_frameworks(version: int) -> list[Framework]:
    return [f for f in FRAMEWORKS if f.keras == version]


def pair_name(framework_name: str, device: str) -> str:
    """A framework on a device, as the run ids, records and the report name it: ``torch-cpu``."""
    return f"{framework_name}-{device}"


def default_frameworks() -> list[str]:
    return [f.name for f in FRAMEWORKS if f.default]


ALL = "all"  # a framework's `variants` in a config may be this word: every rung of its ladder
