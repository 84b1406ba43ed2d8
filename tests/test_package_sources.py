"""Where the project's tools fetch packages from: the machine's own configuration, so that a user
behind an organisation's mirror needs no edit. docker/base-image.sh debootstraps from the Debian
mirror of this machine's apt sources; tiny_mlp_bench/locks/wheels.py resolves on the index-url of this
machine's pip, never on its find-links. Both on files made here: no network, no debootstrap."""

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers import ROOT
from tiny_mlp_bench.locks import pip_index


def print_mirror(apt_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """base-image.sh --print-mirror reading the apt sources in ``apt_dir``, without DEBIAN_MIRROR unless given."""
    environment = {k: v for k, v in os.environ.items() if k != "DEBIAN_MIRROR"} | {"APT_DIR": str(apt_dir)} | env
    return subprocess.run(
        ["bash", str(ROOT / "docker" / "base-image.sh"), "--print-mirror", *args],
        capture_output=True,
        text=True,
        env=environment,
    )


def apt_sources(folder: Path, files: dict[str, str]) -> Path:
    """An /etc/apt in ``folder`` of ``files``: their text by their path below it."""
    (folder / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


DEB822 = """Types: deb
# a comment between fields
URIs: http://mirror.example.org/debian-security
Suites: bookworm-security
Components: main

Types: deb
URIs: http://disabled.example.org/debian
Suites: bookworm
Enabled: no

Types: deb-src
URIs: http://sources.example.org/debian
Suites: bookworm

Types: deb deb-src
URIs: http://mirror.example.org/debian http://second.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 Suites: other
"""
ONE_LINE = """# deb http://commented.example.org/debian bookworm main
deb-src http://sources.example.org/debian bookworm main
deb http://mirror.example.org/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://lines.example.org/debian bookworm main
"""


def test_the_mirror_is_the_first_uri_of_the_deb822_entry_for_bookworm(tmp_path):
    apt = apt_sources(tmp_path, {"sources.list.d/debian.sources": DEB822})
    done = print_mirror(apt)
    assert (done.returncode, done.stdout) == (0, "http://mirror.example.org/debian\n"), done.stderr


def test_the_mirror_is_that_of_a_one_line_deb_entry_for_bookworm(tmp_path):
    for name in ("sources.list", "sources.list.d/mirror.list"):
        apt = apt_sources(tmp_path / name.replace("/", "-"), {name: ONE_LINE})
        done = print_mirror(apt)
        assert (done.returncode, done.stdout) == (0, "http://lines.example.org/debian\n"), done.stderr


def test_a_given_mirror_wins_over_the_apt_sources(tmp_path):
    apt = apt_sources(tmp_path, {"sources.list": ONE_LINE})
    given = "http://given.example.org/debian"
    assert print_mirror(apt, "--mirror", given).stdout == print_mirror(apt, DEBIAN_MIRROR=given).stdout == given + "\n"


def test_no_mirror_in_the_apt_sources_is_an_error_that_says_where_it_looked_and_how_to_name_one(tmp_path):
    # Entries for other suites only: no Debian mirror for bookworm.
    security = "deb http://mirror.example.org/debian-security bookworm-security main\n"
    apt = apt_sources(tmp_path, {"sources.list": security})
    done = print_mirror(apt)
    assert done.returncode == 1 and done.stdout == ""
    for said in (f"{apt}/sources.list.d/*.sources", f"{apt}/sources.list ", "Types: deb", "--mirror", "DEBIAN_MIRROR"):
        assert said in done.stderr, done.stderr


@pytest.fixture(autouse=True)
def fresh_pip_config():
    """configured_index reads pip's configuration once a process: each test sets its own."""
    pip_index.configured_index.cache_clear()
    yield
    pip_index.configured_index.cache_clear()


def wheel(folder: Path, name: str) -> None:
    """A minimal pure-Python wheel of ``name`` 1.0 in ``folder``, with a simple-index page for it."""
    folder.mkdir(parents=True)
    module = name.replace("-", "_")
    info = f"{module}-1.0.dist-info"
    with zipfile.ZipFile(folder / f"{module}-1.0-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{module}.py", "")
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        tags = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        archive.writestr(f"{info}/WHEEL", tags)
        archive.writestr(f"{info}/RECORD", "")
    (folder / "index.html").write_text(f'<a href="{module}-1.0-py3-none-any.whl">{module}-1.0-py3-none-any.whl</a>\n')


def test_the_index_is_pips_configured_index_url_and_its_find_links_are_left_out(tmp_path, monkeypatch):
    # A user behind a mirror: pip.conf names the mirror as index-url, and a folder of wheels built
    # here as find-links (in the file and in PIP_FIND_LINKS), whose hashes no index has.
    wheel(tmp_path / "index" / "indexed-pkg", "indexed-pkg")
    wheel(tmp_path / "links", "linked-pkg")
    index = (tmp_path / "index").as_uri()
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nindex-url = {index}\nfind-links = {tmp_path / 'links'}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "links"))
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    assert pip_index.configured_index() == index
    command = pip_index.pip_command("download", "indexed-pkg")
    assert command[-4:] == ["download", "--index-url", index, "indexed-pkg"]
    assert str(tmp_path / "links") not in " ".join(command) + " ".join(pip_index.pip_env().values())
    # pip, as the lock tool runs it, finds what the index has and not what only the find-links have.
    download = ["--quiet", "--no-deps", "-d", str(tmp_path / "got")]
    pip_index.pip("download", *download, "indexed-pkg")
    assert [p.name for p in (tmp_path / "got").iterdir()] == ["indexed_pkg-1.0-py3-none-any.whl"]
    with pytest.raises(subprocess.CalledProcessError):
        pip_index.pip("download", *download, "linked-pkg")


def test_pip_index_url_wins_and_without_any_index_pip_takes_its_own_default(tmp_path, monkeypatch):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://file.example.org/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_INDEX_URL", "https://user:token@variable.example.org/simple")
    assert pip_index.configured_index() == "https://user:token@variable.example.org/simple"
    assert pip_index.index_name() == "https://variable.example.org/simple"  # no token in a message
    pip_index.configured_index.cache_clear()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_INDEX_URL")
    assert pip_index.configured_index() is None and pip_index.index_name() == "PyPI"
    assert "--index-url" not in pip_index.pip_command("install", "anything")


def test_a_network_test_skips_offline_naming_the_index_and_fails_where_ci_requires_the_index(monkeypatch):
    import helpers

    monkeypatch.setattr(pip_index, "configured_index", lambda: "http://127.0.0.1:9/simple")
    helpers.package_index_problem.cache_clear()
    try:
        problem = helpers.package_index_problem()
        assert problem.startswith("the package index (http://127.0.0.1:9/simple) cannot be reached:")
        monkeypatch.delenv("TINY_MLP_BENCH_REQUIRE_NETWORK", raising=False)
        with pytest.raises(pytest.skip.Exception, match="cannot be reached"):
            helpers.skip_unless_ready(problem, "TINY_MLP_BENCH_REQUIRE_NETWORK")
        monkeypatch.setenv("TINY_MLP_BENCH_REQUIRE_NETWORK", "1")
        with pytest.raises(pytest.fail.Exception, match="TINY_MLP_BENCH_REQUIRE_NETWORK=1 but the package index"):
            helpers.skip_unless_ready(problem, "TINY_MLP_BENCH_REQUIRE_NETWORK")
    finally:
        helpers.package_index_problem.cache_clear()
