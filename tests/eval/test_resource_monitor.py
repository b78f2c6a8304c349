"""The benchmarks' ResourceMonitor: CPU split between this process and its children, and idle time."""
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _common import ResourceMonitor  # noqa: E402

BUSY_CHILD = ("import time\n"
              "start = time.process_time()\n"
              "while time.process_time() - start < 0.8:\n"
              "    pass\n"
              "time.sleep(0.3)\n")  # alive after its work, so a sample sees all of it


def test_cpu_of_a_busy_child_is_the_childrens_and_a_sleep_is_idle():
    with ResourceMonitor(interval=0.05) as monitor:
        time.sleep(0.6)  # nothing in the tree runs
        subprocess.run([sys.executable, "-c", BUSY_CHILD], check=True)
    report = monitor.report()
    children_cpu = monitor.cpu_seconds - monitor.main_cpu_seconds
    assert children_cpu >= 0.7
    assert monitor.main_cpu_seconds < 0.4
    assert monitor.idle_seconds >= 0.4
    assert monitor.idle_seconds <= report["wall_seconds"] - 0.7  # the child's busy second is not idle
    split = report["cores_busy_by_process"]
    assert split["children"] > split["main"]
    assert abs(split["main"] + split["children"] - report["cores_busy"]) <= 0.011


HOLDING_CHILD = ("b = bytearray(200 * 2**20)\n"  # 200 MB touched, held while sampled
                 "import time\n"
                 "time.sleep(0.6)\n")


def test_the_peak_memory_of_a_child_is_the_childrens():
    with ResourceMonitor(interval=0.05) as monitor:
        subprocess.run([sys.executable, "-c", HOLDING_CHILD], check=True)
    peaks = monitor.report()["peak_rss_mb_by_process"]
    assert peaks["children"] >= 190
    assert peaks["main"] < monitor.report()["peak_rss_mb"] - 190
