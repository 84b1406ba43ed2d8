"""What the machine was doing around a run: the readings and where they come from."""

from __future__ import annotations

from tiny_mlp_bench import load


def test_cpu_clock_from_cpufreq_else_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2100.000\nprocessor\t: 1\ncpu MHz\t\t: 2300.000\n")
    assert load.cpu_mhz(sysfs=tmp_path / "none", cpuinfo=cpuinfo) == 2200.0
    for cpu, khz in (("cpu0", 3_000_000), ("cpu1", 1_000_000)):
        (tmp_path / "sys" / cpu / "cpufreq").mkdir(parents=True)
        (tmp_path / "sys" / cpu / "cpufreq" / "scaling_cur_freq").write_text(f"{khz}\n")
    assert load.cpu_mhz(sysfs=tmp_path / "sys", cpuinfo=cpuinfo) == 2000.0  # cpufreq wins: it moves
    assert load.cpu_mhz(sysfs=tmp_path / "none", cpuinfo=tmp_path / "missing") is None


def test_snapshot_and_block_have_every_reading():
    before = load.snapshot()
    assert len(before["load_average"]) == 3 and all(value >= 0 for value in before["load_average"])
    block = load.load_block(before, load.snapshot(), peak_gpu_memory_mb=1234.56)
    assert set(block) == {"before", "after", "peak_host_memory_mb", "peak_gpu_memory_mb"}
    assert block["peak_host_memory_mb"] > 10 and block["peak_gpu_memory_mb"] == 1234.6
