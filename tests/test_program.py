"""The one program: `python -m tiny_mlp_bench` (installed as `tiny-mlp-bench`) and its commands, the thin
programs the rules run, and make's targets, which run the program rather than files of their own."""

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers import ROOT, program_module
from tiny_mlp_bench.__main__ import COMMANDS, main

# What scripts/ keeps: the programs the rules run, and the GPU study's, which starts on a bare Python.
RULE_PROGRAMS = ["make_dataset.py", "train.py", "sweep_crossover.py", "probe_fixed_costs.py", "render_report.py"]


def program(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tiny_mlp_bench", *args], capture_output=True, text=True)


def test_the_program_lists_every_command_and_a_bare_call_prints_that_list():
    listed = program("--help")
    assert listed.returncode == 0, listed.stderr
    for name, (_, about) in COMMANDS.items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(about)}$", listed.stdout, re.MULTILINE), name
    bare = program()
    assert bare.returncode == 2 and bare.stdout == listed.stdout
    assert program("--version").stdout.strip() == (ROOT / "VERSION").read_text().strip()


def test_an_unknown_command_is_named_with_the_commands_there_are():
    done = program("train")
    assert done.returncode == 2
    assert "invalid choice: 'train'" in done.stderr and "'run', 'sweep'" in done.stderr


@pytest.mark.parametrize("name", [name for name, (target, _) in COMMANDS.items() if target])
def test_each_command_says_what_it_takes_under_its_own_name(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: tiny-mlp-bench {name}")


def test_the_gpu_study_command_hands_over_to_the_program_a_bare_python_runs():
    done = program("gpu-study", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: gpu_study.py") and "--time-limit" in done.stdout


def test_the_console_script_is_the_program():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"tiny-mlp-bench": "tiny_mlp_bench.__main__:main"}
    installed = Path(sys.executable).parent / "tiny-mlp-bench"
    if not installed.exists():
        pytest.skip(f"the package is not installed in {sys.prefix} (make installs it): no {installed}")
    done = subprocess.run([installed, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == program("--help").stdout


def test_scripts_holds_only_the_rules_programs_and_the_gpu_study():
    assert sorted(p.name for p in (ROOT / "scripts").glob("*.py")) == sorted(
        [*RULE_PROGRAMS, "container_run.py", "gpu_study.py"]
    )


@pytest.mark.parametrize("name", RULE_PROGRAMS)
def test_a_rules_program_is_a_command_of_the_package_under_its_old_path(name):
    # The rules keep naming scripts/<name>, so that a finished study's jobs stay current; the work is
    # the command's, whose main the thin file calls.
    module = program_module(name)
    commands = [c for c, (target, _) in COMMANDS.items() if target == f"{module.__name__}:main"]
    assert len(commands) == 1, f"scripts/{name} runs {module.__name__}.main, which is no command"
    assert len((ROOT / "scripts" / name).read_text().splitlines()) <= 12, f"scripts/{name} is not thin"
    done = subprocess.run([sys.executable, ROOT / "scripts" / name, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {name}")


def test_each_command_is_a_function_that_exists():
    for name, (target, _) in COMMANDS.items():
        if target:
            module, function = target.split(":")
            assert callable(getattr(importlib.import_module(module), function)), name


def test_make_runs_the_program_and_no_file_of_its_own():
    recipes = [line.strip() for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("\t")]
    assert not [line for line in recipes if "scripts/" in line]
    used = {m[1] for line in recipes for m in re.finditer(r"-m tiny_mlp_bench (\S+)", line)}
    assert used <= set(COMMANDS) and {"docs", "compare", "archive", "verify", "locks"} <= used


def test_every_command_the_docs_name_is_one_the_program_has():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {
        (page.name, m[1]) for page in pages for m in re.finditer(r"`tiny-mlp-bench ([a-z][a-z-]*)", page.read_text())
    }
    assert named, "no page names a command: the pattern no longer finds them"
    assert [(page, name) for page, name in sorted(named) if name not in COMMANDS] == []
