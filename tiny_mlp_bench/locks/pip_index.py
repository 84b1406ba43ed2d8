"""How tiny_mlp_bench/locks/wheels.py runs pip: against one package index and nothing else."""

import ast
import functools
import os
import re
import subprocess
import sys
import urllib.parse

# Debian 12 (the images' base) has glibc 2.36: every manylinux tag up to it installs there; Debian 11 (the era
# image's) has 2.31. The legacy names too, as some wheels carry only those.
GLIBC_MINOR = 36
LEGACY_PLATFORMS = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"]
# `pip config list` keys of the index-url pip install uses, first found winning.
INDEX_KEYS = (":env:.index-url", "install.index-url", "global.index-url")


@functools.cache
def configured_index() -> str | None:
    """The index-url this machine's pip is configured with (files and variables), or None."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    # Each line is key=repr(value).
    values = {key: ast.literal_eval(value) for key, value in re.findall(r"^(\S+?)=(.+)$", listed, re.MULTILINE)}
    return next((values[key] for key in INDEX_KEYS if values.get(key)), None)


def index_name() -> str:
    """The index, for messages: without any user or token its URL holds."""
    url = configured_index()
    if url is None:
        return "PyPI"
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def pip_env() -> dict[str, str]:
    """The environment less this machine's pip config and PIP_ variables: the index goes on the command line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def pip_command(command: str, *args: str) -> list[str]:
    """pip ``command`` with ``args``, from the configured index where there is one."""
    index = configured_index()
    return [sys.executable, "-m", "pip", command, *(["--index-url", index] if index else []), *args]


def pip(command: str, *args: str, env: dict[str, str] | None = None) -> None:
    """pip ``command`` with ``args``; ``env``: variables to add, for a build's own switches."""
    subprocess.run(pip_command(command, *args), env=pip_env() | (env or {}), check=True)


def platform_args(python: str, glibc_minor: int = GLIBC_MINOR) -> list[str]:
    """pip's options for wheels that install on CPython ``python`` over glibc 2.``glibc_minor`` on x86_64."""
    platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(5, glibc_minor + 1)] + LEGACY_PLATFORMS
    return ["--only-binary=:all:", "--python-version", python, *[a for p in platforms for a in ("--platform", p)]]
