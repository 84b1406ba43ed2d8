"""What the machine is and was doing around a run: the readings and where they come from."""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess

from tiny_mlp_bench import machine


def test_cpu_clock_from_cpufreq_else_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2100.000\nprocessor\t: 1\ncpu MHz\t\t: 2300.000\n")
    assert machine.cpu_mhz(sysfs=tmp_path / "none", cpuinfo=cpuinfo) == 2200.0
    for cpu, khz in (("cpu0", 3_000_000), ("cpu1", 1_000_000)):
        (tmp_path / "sys" / cpu / "cpufreq").mkdir(parents=True)
        (tmp_path / "sys" / cpu / "cpufreq" / "scaling_cur_freq").write_text(f"{khz}\n")
    assert machine.cpu_mhz(sysfs=tmp_path / "sys", cpuinfo=cpuinfo) == 2000.0  # cpufreq wins: it moves
    assert machine.cpu_mhz(sysfs=tmp_path / "none", cpuinfo=tmp_path / "missing") is None


def test_a_jobs_block_has_its_span_and_every_reading():
    watch = machine.JobWatch()
    block = watch.block(peak_gpu_memory_mb=1234.56)
    assert set(block) == {
        "started_at",
        "ended_at",
        "before",
        "after",
        "kernel",
        "peak_host_memory_mb",
        "peak_gpu_memory_mb",
    }
    before = block["before"]
    assert len(before["load_average"]) == 3 and all(value >= 0 for value in before["load_average"])
    assert block["peak_host_memory_mb"] > 10 and block["peak_gpu_memory_mb"] == 1234.6
    started, ended = (datetime.datetime.fromisoformat(block[key]) for key in ("started_at", "ended_at"))
    assert started.utcoffset() == datetime.timedelta(0) and started <= ended
    assert re.fullmatch(  # to the microsecond
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", block["started_at"]
    )
    assert set(block["kernel"]) == {"stolen_s", "cpu_pressure_s", "run_queue_wait_s", "involuntary_switches"}
    assert block["kernel"]["involuntary_switches"] >= 0  # getrusage counts on every Linux


def fake_proc(folder, steal_ticks: int, pressure_us: int, wait_ns: int):
    (folder / "pressure").mkdir(parents=True, exist_ok=True)
    (folder / "self").mkdir(exist_ok=True)
    (folder / "stat").write_text(f"cpu  100 0 50 900 3 0 1 {steal_ticks} 0 0\ncpu0 50 0 25 450 1 0 0 0 0 0\n")
    (folder / "pressure" / "cpu").write_text(
        f"some avg10=0.31 avg60=0.52 avg300=0.45 total={pressure_us}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    (folder / "self" / "schedstat").write_text(f"364246680 {wait_ns} 25\n")


def test_what_the_kernel_counted_over_a_job_is_the_difference_of_two_readings(tmp_path):
    fake_proc(tmp_path, steal_ticks=200, pressure_us=5_000_000, wait_ns=1_000_000_000)
    before = machine.kernel_counters(tmp_path)
    fake_proc(tmp_path, steal_ticks=200 + os.sysconf("SC_CLK_TCK"), pressure_us=5_250_000, wait_ns=3_500_000_000)
    after = machine.kernel_counters(tmp_path)
    counted = machine.kernel_block(before, after)
    assert counted["stolen_s"] == 1.0 and counted["cpu_pressure_s"] == 0.25 and counted["run_queue_wait_s"] == 2.5


def test_what_a_machine_does_not_expose_is_unknown_not_zero(tmp_path):
    # No /proc/pressure (a kernel without PSI), no schedstat: unknown. A reading that vanishes is unknown too.
    (tmp_path / "stat").write_text("cpu  100 0 50 900 3 0 1 7 0 0\n")
    counters = machine.kernel_counters(tmp_path)
    assert counters["cpu_pressure_s"] is None and counters["run_queue_wait_s"] is None
    assert counters["stolen_s"] == 7 / os.sysconf("SC_CLK_TCK")
    counted = machine.kernel_block(counters, machine.kernel_counters(tmp_path / "gone"))
    assert counted["stolen_s"] is None and counted["cpu_pressure_s"] is None


INTEL_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 2
cpu MHz\t\t: 2100.000
flags\t\t: fpu vme de pse tsc avx2 avx512f

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 2
flags\t\t: fpu vme de pse tsc avx2 avx512f
"""

AMD_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7763 64-Core Processor
stepping\t: 1
flags\t\t: fpu vme de pse tsc avx2 sha_ni
"""

ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd0c
"""


def test_the_cpu_is_named_by_vendor_family_model_stepping_and_flags():
    intel = machine.parse_cpuinfo(INTEL_CPUINFO)
    assert intel == {
        "vendor": "GenuineIntel",
        "family": 6,
        "model": 207,
        "stepping": 2,
        "flags_sha256": intel["flags_sha256"],
    }
    assert re.fullmatch(r"[0-9a-f]{12}", intel["flags_sha256"])
    amd = machine.parse_cpuinfo(AMD_CPUINFO)
    assert (amd["vendor"], amd["family"], amd["model"], amd["stepping"]) == ("AuthenticAMD", 25, 1, 1)
    assert amd["flags_sha256"] != intel["flags_sha256"]
    # A VM that masks the model name still passes the CPU's numbers and flags through.
    masked = machine.parse_cpuinfo(AMD_CPUINFO.replace("AMD EPYC 7763 64-Core Processor", "AMD EPYC"))
    assert masked == amd
    # The flags' order does not change their hash.
    shuffled = AMD_CPUINFO.replace("fpu vme de pse tsc avx2 sha_ni", "sha_ni avx2 tsc pse de vme fpu")
    assert machine.parse_cpuinfo(shuffled)["flags_sha256"] == amd["flags_sha256"]


def test_a_cpuinfo_without_the_fields_gives_none_for_each():
    unknown = dict.fromkeys(("vendor", "family", "model", "stepping", "flags_sha256"))
    assert machine.parse_cpuinfo("") == unknown
    arm = machine.parse_cpuinfo(ARM_CPUINFO)
    assert arm == unknown | {"flags_sha256": arm["flags_sha256"]} and arm["flags_sha256"]
    assert machine.parse_cpuinfo("vendor_id\t: AuthenticAMD\nstepping\t: unknown\n")["stepping"] is None


def test_a_machine_without_cpuinfo_or_systemd_is_unknown(tmp_path, monkeypatch):
    assert machine.cpu_identity(tmp_path / "missing") == machine.parse_cpuinfo("")

    def no_program(*args, **kwargs):
        raise FileNotFoundError("systemd-detect-virt")

    monkeypatch.setattr(machine.subprocess, "run", no_program)
    assert machine.virtualization(tmp_path / "missing") is None
    (tmp_path / "type").write_text("xen\n")
    assert machine.virtualization(tmp_path / "type") == "xen"

    def hangs(command, **kwargs):
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])

    monkeypatch.setattr(machine.subprocess, "run", hangs)
    assert machine.virtualization(tmp_path / "type") == "xen"
    # Bare metal: it prints "none" and exits 1.
    bare = subprocess.CompletedProcess(["systemd-detect-virt"], 1, stdout="none\n", stderr="")
    monkeypatch.setattr(machine.subprocess, "run", lambda *args, **kwargs: bare)
    assert machine.virtualization(tmp_path / "type") == "none"


def test_the_environment_names_the_machine_in_full():
    env = machine.collect_environment({}, {}, dict(machine.NO_CUDA), None, None)
    assert set(env["cpu"]) == {"vendor", "family", "model", "stepping", "flags_sha256"}
    assert env["kernel"] == platform.release()
    assert env["virtualization"] is None or isinstance(env["virtualization"], str)
