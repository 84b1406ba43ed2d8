"""The study's Python on a GPU node as it is: the node's .pth hooks run in .venv-gpu, and the floor
rung names the numba CUDA target it ran with and refuses numba's built-in one on a GPU."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import types
from pathlib import Path

import numba
import numba.cuda
import pytest

from helpers import ROOT
from tiny_mlp_bench.backends import numpy_reference
from tiny_mlp_bench.gpu_study import environment


def test_the_environment_runs_the_nodes_pth_hooks(tmp_path, monkeypatch):
    # A node's site-packages with a hook as numba-cuda's: a .pth line that runs code (here it puts a
    # folder on sys.path), and so the only way to reach what it hooks in.
    node_site, hooked = tmp_path / "node-site-packages", tmp_path / "hooked"
    node_site.mkdir(), hooked.mkdir()
    (hooked / "hooked_package.py").write_text("FOUND = 'through the hook'\n")
    (node_site / "hook.pth").write_text(f"import sys; sys.path.append({str(hooked)!r})\n")
    (node_site / "plain_package.py").write_text("FOUND = 'on the path'\n")
    venv = tmp_path / "venv-gpu"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(node_site)])
    environment.see_machine_packages(venv / "bin" / "python")
    code = "import plain_package, hooked_package; print(plain_package.FOUND, '/', hooked_package.FOUND)"
    done = subprocess.run([venv / "bin" / "python", "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "on the path / through the hook", done.stderr


def test_a_numba_cuda_record_names_the_target_that_ran():
    nvidia = types.SimpleNamespace(__file__="/node/site-packages/numba_cuda/numba/cuda/__init__.py")
    assert numpy_reference.cuda_target(nvidia) == numpy_reference.NVIDIA_TARGET
    assert numpy_reference.cuda_target(numba.cuda) == numpy_reference.BUILT_IN_TARGET  # what this machine has
    fw = numpy_reference.load("cuda")
    assert numpy_reference.describe(fw, "cuda")["versions"]["numba.cuda"] == numpy_reference.BUILT_IN_TARGET


def test_the_cuda_floor_refuses_numbas_built_in_target(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)  # not the simulator: as on a GPU
    fw = numpy_reference.load("cuda")
    spec = types.SimpleNamespace(device="cuda")
    with pytest.raises(RuntimeError, match=r"numba.cuda is numba's built-in \(numba .*\), not numba-cuda \(NVIDIA\)"):
        numpy_reference.fused(fw, spec, None, None)


def test_a_cuda_toolkit_is_one_with_libnvvm_where_numba_cuda_looks(tmp_path):
    usual = tmp_path / "usr-local"
    for root in ("cuda-9.2", "cuda-12.8", "cuda-13.0"):  # by version, 13.0 is the newest, though "9" > "1"
        (usual / root / "nvvm" / "lib64").mkdir(parents=True)
        (usual / root / "nvvm" / "lib64" / "libnvvm.so.4").touch()
    (usual / "cuda" / "lib").mkdir(parents=True)  # a toolkit without NVVM where numba-cuda looks for it
    assert environment.cuda_toolkit({"PATH": ""}, usual) == (usual / "cuda-13.0", str(usual / "cuda-13.0"))
    named = {"PATH": "", "CUDA_HOME": str(usual / "cuda-12.8")}
    assert environment.cuda_toolkit(named, usual) == (usual / "cuda-12.8", "CUDA_HOME")
    root, looked = environment.cuda_toolkit({"PATH": ""}, tmp_path / "nothing")
    assert root is None and "none has nvvm/lib64/libnvvm.so" in looked
    # A CUDA 13 toolkit assembled from wheels keeps libNVVM in lib/.
    wheels = tmp_path / "site-packages" / "nvidia" / "cu13"
    (wheels / "lib").mkdir(parents=True)
    (wheels / "lib" / "libnvvm.so.4").touch()
    assert environment.cuda_toolkit({"PATH": "", "CUDA_PATH": str(wheels)}, tmp_path / "nothing")[0] == wheels


def test_the_study_venv_finds_the_cuda_libraries_the_nodes_python_finds(tmp_path, monkeypatch):
    import _ctypes

    # A node whose Python is itself a venv, with a CUDA library that came in a wheel (a stand-in: any
    # shared object the loader can open), and the study's venv made over it.
    node = tmp_path / "node"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(node)], check=True)
    node_site = next((node / "lib").glob("python3*/site-packages"))
    (node_site / "nvidia" / "nvrtc" / "lib").mkdir(parents=True)
    library = node_site / "nvidia" / "nvrtc" / "lib" / "libstandin-nvrtc.so.13"
    library.write_bytes(Path(_ctypes.__file__).read_bytes())
    study = tmp_path / "venv-gpu"
    made = [node / "bin" / "python", "-m", "venv", "--without-pip", str(study)]
    subprocess.run(made, check=True)
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(node_site)])
    environment.see_machine_packages(study / "bin" / "python")
    opens = [study / "bin" / "python", "-c", "import ctypes; ctypes.CDLL('libstandin-nvrtc.so.13'); print('found')"]
    env = {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}
    lost = subprocess.run(opens, capture_output=True, text=True, env=env)
    assert lost.returncode != 0 and "libstandin-nvrtc.so.13" in lost.stderr  # as cuda-pathfinder found
    monkeypatch.setattr(os, "environ", dict(env))
    environment.find_machine_libraries()  # what the study does before its first job
    assert os.environ["LD_LIBRARY_PATH"].split(os.pathsep)[0] == str(library.parent)
    found = subprocess.run(opens, capture_output=True, text=True, env=os.environ)
    assert found.stdout.strip() == "found", found.stderr


def test_the_preflight_runs_the_floor_kernel_as_the_study_would():
    # Under numba's CUDA simulator (no GPU here): the kernel the study compiles for the GPU, two epochs.
    code = "from tiny_mlp_bench.gpu_study import preflight; print(preflight.floor_kernel())"
    env = os.environ | {"NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip() == "compiled and ran: 4 steps in 2 epochs", done.stderr[-2000:]
