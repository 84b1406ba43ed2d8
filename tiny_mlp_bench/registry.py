"""The one loader: each backend module's BACKENDS and RUNGS, gathered above both the catalogue and the backends,
and every lookup of a rung or a backend. A backend module is imported on first use, never when this one is."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from tiny_mlp_bench.backends.contract import Backend, Loop
from tiny_mlp_bench.catalogue import ALL, FRAMEWORKS, Role, Rung, UnknownRung, framework, framework_names


class NotRegistered(LookupError):
    """A framework the catalogue lists whose backend module declares no backend for it."""


def backend_module(framework_name: str) -> ModuleType:
    """The module the catalogue names for ``framework_name``: its BACKENDS and RUNGS."""
    return importlib.import_module(f"tiny_mlp_bench.backends.{framework(framework_name).backend}")


@functools.cache
def rungs() -> tuple[Rung, ...]:
    """Every rung in catalogue then ladder order, from the backend modules' ``RUNGS`` (imported on first use)."""
    found = []
    for f in FRAMEWORKS:
        module = backend_module(f.name)
        for rung in module.RUNGS:
            if framework(rung.framework).backend != f.backend:
                raise ValueError(f"{module.__name__} declares {rung.framework} {rung.name}, not a rung of its own")
            if not callable(rung.loop):
                raise ValueError(f"{module.__name__} declares {rung.framework} {rung.name} without a loop")
        found += [rung for rung in module.RUNGS if rung.framework == f.name]
    return tuple(found)


def backend(framework_name: str) -> Backend:
    """The Backend that runs ``framework_name``, as its module declares it: one, and only its own frameworks'."""
    module = backend_module(framework_name)
    for declared in module.BACKENDS:
        if framework(declared.name).backend != framework(framework_name).backend:
            raise ValueError(f"{module.__name__} declares a backend for {declared.name}, not a framework of its own")
    found = [b for b in module.BACKENDS if b.name == framework_name]
    if len(found) > 1:
        raise ValueError(f"{module.__name__} declares {len(found)} backends for {framework_name}")
    if not found:
        raise NotRegistered(f"{module.__name__} declares no backend for {framework_name}")
    return found[0]


def loop(framework_name: str, name: str) -> Loop:
    return rung(framework_name, name).loop


def ladder(framework_name: str) -> list[Rung]:
    """A framework's rungs in ladder order, the asker's loop first."""
    return [v for v in rungs() if v.framework == framework_name]


def rung_names(framework_name: str) -> list[str]:
    return [v.name for v in ladder(framework_name)]


def rung(framework_name: str, name: str) -> Rung:
    for found in ladder(framework_name):
        if found.name == name:
            return found
    raise UnknownRung(f"unknown {framework_name} rung '{name}'; known: {', '.join(rung_names(framework_name))}")


def ladder_position(framework_name: str, name: str) -> int:
    """Where a rung stands on its framework's ladder; unknown ones sort last."""
    names = rung_names(framework_name)
    return names.index(name) if name in names else len(names)


def role_of(framework_name: str, name: str) -> Role | None:
    """A rung's role; None for an ordinary rung and for one the catalogue does not list."""
    found = next((v for v in ladder(framework_name) if v.name == name), None)
    return found.role if found else None


def rung_with_role(framework_name: str, role: Role) -> Rung | None:
    """A framework's rung with ``role``; None where its ladder has none."""
    return next((v for v in ladder(framework_name) if v.role == role), None)


def rungs_with_role(role: Role) -> list[Rung]:
    return [v for v in rungs() if v.role == role]


def sole_rung(role: Role) -> Rung:
    (found,) = rungs_with_role(role)
    return found


def default_rungs() -> dict[str, list[str]]:
    return {f.name: [v.name for v in ladder(f.name) if v.default] for f in FRAMEWORKS}


def study_rungs(requested: dict[str, list[str] | str] | None) -> dict[str, list[str]]:
    """A config's `variants` per framework: its list, every rung for `all`, else the default rungs."""
    requested = requested or {}
    defaults = default_rungs()

    def chosen(name: str) -> list[str]:
        names = requested.get(name, defaults[name])
        return rung_names(name) if names == ALL else list(names)

    return {name: chosen(name) for name in framework_names()}
