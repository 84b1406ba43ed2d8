"""The catalogue of frameworks and their training-loop variants: the one list everything reads.

The rules expand runs from it, the config check validates against it, the training driver refuses
and skips by it, the backends implement what it names and run as many epochs per call as it says,
the report orders its ladders, names its frameworks and says what each rung removes from it, the
report and the GPU study's plan find the rungs they single out by their role here, and the README's
table is generated from it (``make variant-table``). A config that leaves out ``frameworks`` or
``variants`` runs the default study marked here, so a new rung is one entry here plus its loop in
the framework's backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

DEVICES = ("cpu", "cuda")

# Epochs one call into a loop runs, where it is more than one: the backends run these, and the
# rungs' descriptions below state them.
KERAS_EPOCHS_PER_FIT_EPOCH = 50  # keras epoch_blocks: epochs per `fit` epoch, one call each
JAX_SCAN_EPOCHS_PER_CALL = 50  # jax scan: epochs per jitted call
NUMBA_EPOCHS_PER_CALL = 20  # numpy fused on cpu: epochs per compiled call
NUMBA_CUDA_EPOCHS_PER_LAUNCH = 100  # numpy fused on cuda: epochs per kernel launch


class Role(Enum):
    """What a rung is to the study, for the rungs the report and the GPU study's plan single out:
    they look a rung up by its role, never by its name, so that renaming a rung is an edit here."""

    ASKERS = "the asker's loop"  # the question's own loop (or its shape): each ladder's baseline
    REFERENCE = "the reference"  # the hand-written loop, no framework: forward, backward and Adam by hand
    FLOOR = "the floor"  # every per-operation call gone: the least a step costs on each device
    COMPILED_EPOCH = "the compiled epoch"  # torch's epoch in one compiled call, timed in kernel and the rest
    ONE_CALL_PER_EPOCH = "one call per epoch"  # Keras's train function called once an epoch
    PAUSE_FREE = "no pause after fit"  # Keras 2's fit without the autotuning thread it can wait for at its end
    AA_CONTROL = "the A/A control"  # another rung's very code under a second name: what the machine fakes between them


@dataclass(frozen=True)
class Framework:
    """A framework the study trains with."""

    name: str
    label: str  # what the report calls it
    image: str  # the key in the config's `images` of the image its steps run in
    backend: str  # the module in tiny_mlp_bench.backends that implements its variants
    # The distributions whose versions a record names; a run skipped before importing the framework
    # (no GPU driver on the machine) reads them from the installed packages' metadata.
    packages: tuple[str, ...]
    probed: bool = False  # `tiny-mlp-bench probe` measures its fixed costs
    default: bool = True  # in the default study (a config without `frameworks`)
    keras: int | None = None  # the major version of Keras it is; None: not Keras
    keras_backend: str | None = None  # what that Keras runs on, as the report names it
    hand_written: bool = False  # loops written by hand, not a library a user would pick up


@dataclass(frozen=True)
class Variant:
    """One rung of a framework's ladder; a framework's rungs are listed from the asker's loop down."""

    framework: str
    name: str
    devices: tuple[str, ...]
    removes: str  # what this rung takes away compared with the rung before it (Markdown)
    default: bool = True  # in the default study (a config without this framework's `variants`)
    role: Role | None = None  # what the report and the plan single it out as; None: an ordinary rung
    # Epochs one call into its loop runs: one number, or (device, number) pairs where it differs by device.
    call_epochs: int | tuple[tuple[str, int], ...] = 1
    # Compiles with torch.compile, into Inductor's on-disk cache: a study's first run of the rung compiles
    # cold, its later runs reuse that cache (jobs.Job.compile_cache), as a user's later runs would.
    compiles: bool = False

    def runs_on(self, device: str) -> bool:
        return device in self.devices

    def epochs_per_call(self, device: str) -> int:
        """How many epochs one call into this rung's loop runs on ``device``."""
        if not self.runs_on(device):
            raise ValueError(self.why_not_on(device))
        return self.call_epochs if isinstance(self.call_epochs, int) else dict(self.call_epochs)[device]

    def why_not_on(self, device: str) -> str:
        """Why this variant cannot run on ``device``, for a skipped record."""
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
    # Keras 3 on TensorFlow: what tf.keras is today. Full study only: its fit took 60-82 s a run on a
    # 2-core machine, and the default study's runs must fit in 15 minutes there.
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
    # Keras 3 on its other backends: the torch image has JAX and torch, and Keras beside them. Full study
    # only, as JAX below: neither is a framework of the question, and with their runs and probe (125 s
    # of job time on a 2-core machine, README) the default study does not fit in 15 minutes there.
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
        hand_written=True,
    ),
    Framework("sklearn", "scikit-learn", image="torch", backend="sklearn_mlp", packages=("scikit-learn",)),
    Framework("jax", "JAX", image="torch", backend="jax_loops", packages=("jax", "optax"), default=False),
)

VARIANTS = (
    Variant("torch", "seed", DEVICES, "— (the asker's loop)", role=Role.ASKERS),
    # batched_fetch and resident are in the full study only: the report's answer does not need them.
    Variant(
        "torch",
        "batched_fetch",
        DEVICES,
        "data loading: 64 `__getitem__` calls and a `stack` per batch",
        default=False,
    ),
    Variant("torch", "resident", DEVICES, "the DataLoader and the host-to-device copy of every batch", default=False),
    Variant(
        "torch",
        "sync_free",
        DEVICES,
        "per-step gathers (one gather per epoch) and Adam's many small kernels (the fused Adam: one for all "
        "parameters, where torch's default is a per-parameter loop on cpu and a multi-tensor foreach on cuda)",
    ),
    Variant(
        "torch",
        "compiled",
        DEVICES,
        "per-op dispatch and per-call overhead: forward, backward and Adam in one `torch.compile` graph, "
        "up to 16 steps per call",
        default=False,  # full study only: fused_epoch compiles the same step, and each cold compilation is ~1 min
        compiles=True,
    ),
    Variant("torch", "graphed", ("cuda",), "kernel launch latency: each step replays one captured CUDA graph"),
    Variant(
        "torch",
        "fused_epoch",
        DEVICES,
        "per-step calls: the forward as broadcast products the compiler fuses (no matmul calls), the epoch's "
        "gather and all its steps in one compiled call (on cpu with Inductor's C++ wrapper)",
        role=Role.COMPILED_EPOCH,
        compiles=True,
    ),
    Variant(
        "torch",
        "graphed_epoch",
        ("cuda",),
        "per-step launches: the `fused_epoch` graph captured in one CUDA graph, one replay per epoch",
        compiles=True,
    ),
    Variant("tf_keras", "seed", DEVICES, "— (the asker's `fit`, Keras 2 as the asker ran it)", role=Role.ASKERS),
    Variant(
        "tf_keras",
        "autotune_off",
        DEVICES,
        "the pause at the end of `fit`, which it aims at (the report says whether its runs paused less; not "
        "the steps: the same pipeline and steps): tf.data autotuning off on the dataset tf-keras builds, whose "
        "model thread `fit` can wait seconds for when it ends",
        role=Role.PAUSE_FREE,
    ),
    Variant("tf_keras", "xla", DEVICES, "TensorFlow op dispatch, by compiling the step with XLA", default=False),
    Variant(
        "tf_keras",
        "steps_per_execution",
        DEVICES,
        "per-step calls into the train function: one call per epoch",
        default=False,
        role=Role.ONE_CALL_PER_EPOCH,
    ),
    Variant("keras", "seed", DEVICES, "— (the asker's `fit`, Keras 3 on TensorFlow)", role=Role.ASKERS),
    Variant("keras", "xla", DEVICES, "TensorFlow op dispatch, by compiling the step with XLA", default=False),
    Variant(
        "keras",
        "steps_per_execution",
        DEVICES,
        "per-step calls into the train function: one call per epoch",
        default=False,  # full study only: the report's answer takes Keras's per-epoch cost from the Keras probe
        role=Role.ONE_CALL_PER_EPOCH,
    ),
    Variant(
        "keras",
        "epoch_blocks",
        DEVICES,
        f"fit's fixed cost per epoch: {KERAS_EPOCHS_PER_FIT_EPOCH} epochs per `fit` epoch from a `tf.data` "
        "pipeline of each epoch's own permutation, a block's steps in one XLA-compiled call",
        default=False,  # full study only: the Keras probes measure fit's fixed cost per epoch in the default one
        call_epochs=KERAS_EPOCHS_PER_FIT_EPOCH,
    ),
    Variant("keras_jax", "seed", DEVICES, "— (the asker's `fit`, Keras on JAX)", role=Role.ASKERS),
    Variant(
        "keras_jax",
        "steps_per_execution",
        DEVICES,
        "per-step calls into the train function: one call per epoch",
        default=False,
        role=Role.ONE_CALL_PER_EPOCH,
    ),
    # Keras on PyTorch allows steps_per_execution=1 only: its one rung is the asker's.
    Variant("keras_torch", "seed", DEVICES, "— (the asker's `fit`, Keras on PyTorch)", role=Role.ASKERS),
    Variant(
        "numpy",
        "reference",
        ("cpu",),
        "the framework itself: hand-written forward, backward and Adam",
        role=Role.REFERENCE,
    ),
    # The A/A control: runs of identical code under two names differ only by what the machine did to
    # them, so their ratio is the largest difference this machine fakes. The reference is cheap.
    Variant(
        "numpy",
        "reference_twin",
        ("cpu",),
        "nothing: `reference`'s very code under a second name, the A/A control (their ratio is what this "
        "machine fakes between identical code)",
        role=Role.AA_CONTROL,
    ),
    # On cuda the same arithmetic in one numba CUDA kernel: the framework is the hand-written loops,
    # NumPy's and numba's, so its name stays (and so do the archives' run ids).
    Variant(
        "numpy",
        "fused",
        DEVICES,
        "every per-operation call and launch: forward, backward and Adam fused into one numba-compiled loop "
        f"on cpu, one numba CUDA kernel per {NUMBA_CUDA_EPOCHS_PER_LAUNCH} epochs on cuda (each device's floor)",
        role=Role.FLOOR,
        call_epochs=(("cpu", NUMBA_EPOCHS_PER_CALL), ("cuda", NUMBA_CUDA_EPOCHS_PER_LAUNCH)),
    ),
    # scikit-learn's own loop, not the asker's: no role, so its ladder has no asker's rung to be measured against.
    Variant(
        "sklearn",
        "mlp_regressor",
        ("cpu",),
        "— (scikit-learn's `MLPRegressor`, one `partial_fit` epoch per call: a linear output layer, "
        "half the MSE, its own initialisation and shuffles)",
    ),
    Variant(
        "jax",
        "seed",
        DEVICES,
        "— (the asker's loop shape in JAX and optax: one jitted step per batch)",
        role=Role.ASKERS,
    ),
    Variant(
        "jax",
        "scan",
        DEVICES,
        f"per-batch dispatch from Python: each block of {JAX_SCAN_EPOCHS_PER_CALL} epochs in one jitted `lax.scan` "
        "over epochs and batches",
        call_epochs=JAX_SCAN_EPOCHS_PER_CALL,
    ),
)


class UnknownVariant(KeyError):
    """A framework or variant the catalogue does not list."""


def framework(name: str) -> Framework:
    for found in FRAMEWORKS:
        if found.name == name:
            return found
    raise UnknownVariant(f"unknown framework '{name}'; known: {', '.join(framework_names())}")


def framework_names() -> list[str]:
    return [f.name for f in FRAMEWORKS]


def ladder(framework_name: str) -> list[Variant]:
    """A framework's rungs in ladder order, the asker's loop first."""
    return [v for v in VARIANTS if v.framework == framework_name]


def variant_names(framework_name: str) -> list[str]:
    return [v.name for v in ladder(framework_name)]


def variant(framework_name: str, name: str) -> Variant:
    for found in ladder(framework_name):
        if found.name == name:
            return found
    raise UnknownVariant(
        f"unknown {framework_name} variant '{name}'; known: {', '.join(variant_names(framework_name))}"
    )


def ladder_position(framework_name: str, name: str) -> int:
    """Where a variant stands on its framework's ladder; unknown ones sort last."""
    names = variant_names(framework_name)
    return names.index(name) if name in names else len(names)


def role_of(framework_name: str, name: str) -> Role | None:
    """A rung's role; None for an ordinary rung and for one the catalogue does not list."""
    found = next((v for v in ladder(framework_name) if v.name == name), None)
    return found.role if found else None


def rung_with_role(framework_name: str, role: Role) -> Variant | None:
    """A framework's rung with ``role``; None where its ladder has none."""
    return next((v for v in ladder(framework_name) if v.role == role), None)


def rungs_with_role(role: Role) -> list[Variant]:
    """Every framework's rung with ``role``, in the catalogue's order."""
    return [v for v in VARIANTS if v.role == role]


def sole_rung(role: Role) -> Variant:
    """The one rung of all the catalogue with ``role`` (the reference, the floor, the compiled epoch)."""
    (found,) = rungs_with_role(role)
    return found


def keras_frameworks(version: int) -> list[Framework]:
    """The frameworks of one major version of Keras, in the catalogue's order."""
    return [f for f in FRAMEWORKS if f.keras == version]


def pair_name(framework_name: str, device: str) -> str:
    """A framework on a device, as the run ids, records and the report name it: ``torch-cpu``."""
    return f"{framework_name}-{device}"


def default_frameworks() -> list[str]:
    """The frameworks the default study runs."""
    return [f.name for f in FRAMEWORKS if f.default]


def default_variants() -> dict[str, list[str]]:
    """The variants the default study runs, per framework."""
    return {f.name: [v.name for v in ladder(f.name) if v.default] for f in FRAMEWORKS}


ALL = "all"  # a framework's `variants` in a config may be this word: every rung of its ladder


def study_variants(requested: dict[str, list[str] | str] | None) -> dict[str, list[str]]:
    """The variants of a config's study, per framework: the config's list, every rung for `all`, and
    the default rungs where it lists none (the config check has held the names to the catalogue)."""
    requested = requested or {}
    defaults = default_variants()

    def chosen(name: str) -> list[str]:
        names = requested.get(name, defaults[name])
        return variant_names(name) if names == ALL else list(names)

    return {name: chosen(name) for name in framework_names()}
