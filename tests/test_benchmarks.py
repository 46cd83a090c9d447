"""The benchmarks run in quick mode and report complete figures. Timing targets are never asserted here."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchmarks import (
    _backends,
    _report,
    boundary,
    fanout,
    network_io_scale,
    overhead,
    robot_fanout,
    round_trip_versions,
    startup,
    tracing_overhead,
)

RL, PPE, MP = "robotlab WorkerPool", "ProcessPoolExecutor", "multiprocessing.Pool"
RL_SUB = "robotlab WorkerPool (subinterpreter)"
TPE = "ThreadPoolExecutor (reference)"
# The subinterpreter contenders run where this interpreter can run them, and only there.
SUBINTERPRETERS = _backends.subinterpreters_missing() is None


def numbers(value: object, path: str = "figures") -> Iterator[tuple[str, float]]:
    """Every (path, number) in a nested figures dict; booleans are not numbers here."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{path}[{key!r}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


@pytest.fixture(autouse=True)
def _no_published_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Quick mode must write neither results JSON nor SVG: point both at a scratch folder and check it stays empty."""
    monkeypatch.setattr(_report, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(_report, "IMAGES", tmp_path / "img")
    yield
    assert list(tmp_path.iterdir()) == []


def check_figures(figures: dict, name: str, keys: set[str], target_names: set[str]) -> None:
    assert figures["benchmark"] == name
    assert figures["quick"] is True
    assert keys <= figures.keys()
    assert figures["targets"].keys() == target_names
    for target in figures["targets"].values():
        assert {"value", "op", "limit", "pass"} == target.keys()
        assert isinstance(target["pass"], bool)
    for path, value in numbers(figures):
        assert math.isfinite(value) and value > 0, path


def test_fanout_quick(capsys):
    figures = fanout.main(quick=True)
    check_figures(figures, "fanout", {"jobs", "burn_n", "median_s", "speedup_vs_serial",
                                      "robotlab_speedup_over_ppe_speedup"},
                  {"robotlab_speedup", "robotlab_vs_ppe_speedup"} | ({"subinterpreter_speedup"} if SUBINTERPRETERS
                                                                     else set()))
    contenders = {"serial", "ThreadPoolExecutor", RL, PPE} | ({RL_SUB} if SUBINTERPRETERS else set())
    assert figures["median_s"].keys() == contenders == figures["speedup_vs_serial"].keys()
    assert figures["speedup_vs_serial"]["serial"] == 1.0
    assert ("subinterpreter_speedup_over_ppe_speedup" in figures) is SUBINTERPRETERS
    says_whether_subinterpreters_ran(figures, capsys.readouterr().out)


def says_whether_subinterpreters_ran(figures: dict, output: str) -> None:
    if SUBINTERPRETERS:
        assert figures["subinterpreters"].startswith("included")
        assert "subinterpreter backend: included" in output
    else:
        assert figures["subinterpreters"].startswith("not run: ")
        assert "subinterpreter backend: NOT run on this interpreter: DependencyError: " in output


def test_round_trip_versions_quick(capsys):
    # HEAD against the working tree: the export, the build of its extension and both rounds run.
    figures = round_trip_versions.main(quick=True, before="HEAD")
    check_figures(figures, "round_trip_versions", {"before (HEAD)", "this checkout", "after_over_before"},
                  {"ratio_within_5pct"})
    assert figures["rounds"] == 1
    assert "robotlab / PPE" in capsys.readouterr().out


def test_overhead_quick(capsys):
    figures = overhead.main(quick=True)
    check_figures(figures, "overhead", {"round_trip_median_s", "batch_median_s", "map_median_s", "ratios",
                                        "map_chunksize_robotlab"},
                  {"round_trip", "batch", "map"} | ({"subinterpreter_round_trip"} if SUBINTERPRETERS else set()))
    assert figures["round_trip_median_s"].keys() == {RL, PPE, MP} | ({RL_SUB, TPE} if SUBINTERPRETERS else set())
    assert figures["batch_median_s"].keys() == {RL, PPE, MP}
    chunksize = figures["map_chunksize_robotlab"]
    assert figures["map_median_s"].keys() == {RL, MP, f"{PPE} (chunksize=1)", f"{PPE} (chunksize={chunksize})"}
    assert figures["ratios"].keys() == {
        "round_trip_robotlab_to_ppe", "round_trip_robotlab_to_mp_pool", "batch_robotlab_to_ppe",
        "batch_robotlab_to_mp_pool", "map_robotlab_to_mp_pool", "map_robotlab_to_ppe_chunksize_1",
        "map_robotlab_to_ppe_same_chunksize"} | (
            {"round_trip_subinterpreter_to_process", "round_trip_thread_pool_executor_to_process",
             "transport_floor_subinterpreter_to_process", "transport_floor_subinterpreter_to_polling_process"}
            if SUBINTERPRETERS else set())
    # (d), the bare echo round trips under (a), runs only beside the subinterpreter contender.
    assert ("transport_floor_median_s" in figures) is SUBINTERPRETERS
    if SUBINTERPRETERS:
        assert figures["transport_floor_median_s"].keys() == {overhead.ECHO_SUB, overhead.ECHO_PROC,
                                                              overhead.ECHO_PROC_POLLS}
    says_whether_subinterpreters_ran(figures, capsys.readouterr().out)


def test_robot_fanout_quick(capsys):
    figures = robot_fanout.main(quick=True)
    check_figures(figures, "robot_fanout", {"calls", "burn_n", "median_s", "speedup_vs_in_process"},
                  {"process_speedup"} | ({"subinterpreter_speedup"} if SUBINTERPRETERS else set()))
    contenders = {robot_fanout.IN_PROCESS, robot_fanout.PROCESS} | ({robot_fanout.SUBINTERPRETER}
                                                                   if SUBINTERPRETERS else set())
    assert figures["median_s"].keys() == contenders == figures["speedup_vs_in_process"].keys()
    assert figures["calls"] == 16 and figures["speedup_vs_in_process"][robot_fanout.IN_PROCESS] == 1.0
    says_whether_subinterpreters_ran(figures, capsys.readouterr().out)


def test_runs_with_subinterpreters_publish_under_their_own_name():
    assert _backends.published_name("fanout", False) == "fanout"
    assert _backends.published_name("fanout", True) == f"fanout-py{sys.version_info.major}{sys.version_info.minor}"


def test_boundary_quick():
    figures = boundary.main(quick=True)
    check_figures(figures, "boundary", {"sizes"}, {"freeze_vs_deepcopy_1kb", "freeze_vs_deepcopy_100kb"})
    assert figures["sizes"].keys() == {"1 KB", "100 KB"}
    for label, minimum in (("1 KB", 1_000), ("100 KB", 100_000)):
        size = figures["sizes"][label]
        assert size["json_bytes"] >= minimum
        assert size["median_s"].keys() == {"freeze_deep", "copy.deepcopy", "pickle round trip"}
        assert {"deepcopy_to_freeze_deep", "pickle_to_freeze_deep"} <= size.keys()


def test_startup_quick():
    figures = startup.main(quick=True)
    check_figures(figures, "startup", {"startup_median_s", "ratios", "idle_worker_memory_mb"}, {"idle_worker_rss"})
    assert figures["startup_median_s"].keys() == {startup.RL, startup.RL2, startup.PPE, startup.MP}
    assert figures["ratios"].keys() == {"robotlab_ready_to_ppe", "robotlab_2_results_to_ppe",
                                        "robotlab_ready_to_mp_pool"}
    for memory in figures["idle_worker_memory_mb"].values():
        assert memory["workers"] == 2
        assert memory["uss_mb"] <= memory["rss_mb"]


def test_quick_mode_from_environment(monkeypatch):
    monkeypatch.setenv("ROBOTLAB_BENCH_QUICK", "1")
    assert _report.quick_mode(None) is True
    assert _report.quick_mode(False) is False
    monkeypatch.setenv("ROBOTLAB_BENCH_QUICK", "0")
    assert _report.quick_mode(None) is False


def test_network_fanout_quick(capsys):
    from benchmarks import network_fanout

    figures = network_fanout.main(quick=True)
    check_figures(figures, "network_fanout", {"parallel_tasks", "burn_n", "median_s", "speedup_vs_thread",
                                              "chain_tasks", "chain_median_s", "chain_per_task_s",
                                              "direct_robot_run_s"},
                  {"process_speedup"} | ({"subinterpreter_speedup"} if SUBINTERPRETERS else set()))
    modes = {"thread", "process"} | ({"subinterpreter"} if SUBINTERPRETERS else set())
    for key in ("median_s", "speedup_vs_thread", "chain_median_s", "chain_per_task_s"):
        assert figures[key].keys() == modes, key
    assert figures["parallel_tasks"] == 8 and figures["speedup_vs_thread"]["thread"] == 1.0
    for mode in modes:
        assert figures["chain_per_task_s"][mode] == figures["chain_median_s"][mode] / figures["chain_tasks"]
    out = capsys.readouterr().out
    says_whether_subinterpreters_ran(figures, out)
    assert "scheduler overhead: a chain of" in out


def test_ray_overhead_quick(ray_cluster):
    from benchmarks import ray_overhead

    figures = ray_overhead.main(quick=True)
    check_figures(figures, "ray_overhead", {"round_trip_median_s", "batch_per_job_s", "fanout_median_s",
                                            "fanout_per_job_s", "fanout_ray_to_process", "break_even"},
                  {"round_trip", "batch", "fanout"})
    assert figures["ray_started_here"] is False  # it used the session's cluster, and left it running
    assert ray_cluster.is_initialized()
    ray, process = ray_overhead.RAY, ray_overhead.PROC
    assert figures["fanout_per_job_s"].keys() == {"0.5 ms", "2 ms"} == figures["fanout_ray_to_process"].keys()
    for size, per_job in figures["fanout_per_job_s"].items():
        assert per_job[ray] == figures["fanout_median_s"][size][ray] / figures["fanout_jobs"]
        assert figures["fanout_ray_to_process"][size] == pytest.approx(per_job[ray] / per_job[process])
    for even in figures["break_even"].values():
        assert even.keys() == {"within_10pct_of_process_s", "beats_serial_s"}
        assert all(size is None or size in figures["job_sizes_s"] for size in even.values())


def test_ray_break_even_holds_from_a_size_on_not_at_one_lucky_size():
    from benchmarks.ray_overhead import _from_on

    walls = [(0.001, {"x": 1}), (0.005, {"x": 0}), (0.02, {"x": 1}), (0.05, {"x": 1})]
    assert _from_on(walls, lambda wall: wall["x"] == 1) == 0.02
    assert _from_on(walls, lambda wall: wall["x"] >= 0) == 0.001
    assert _from_on(walls, lambda wall: wall["x"] == 0) is None


def test_network_io_scale_quick(capsys):
    figures = network_io_scale.main(quick=True)
    check_figures(figures, "network_io_scale", {"median_s", "peak_rss_mb", "chain", "streaming", "speedup_auto_vs_32"},
                  {"fanout_wall", "fanout_rss", "chain_overhead", "first_delta"})
    assert figures["median_s"].keys() == set(network_io_scale.CONTENDERS) == figures["peak_rss_mb"].keys()
    assert "ms/task" in capsys.readouterr().out


def test_payload_quick(capsys):
    from benchmarks import payload

    figures = payload.main(quick=True)
    check_figures(figures, "payload", {"median_ms", "ratio_to_ppe", "rounds"},
                  {"large_echo_process", "medium_echo_process"} | ({"large_echo_subinterpreter"} if SUBINTERPRETERS
                                                                    else set()))
    sizes = {"1 KiB", "256 KiB"} | ({"numpy 2 MB"} if "numpy" in sys.modules else set())
    assert figures["median_ms"].keys() == {f"{size} {mode}" for size in sizes for mode in ("send", "echo")}
    contenders = {payload.RL, payload.PPE} | ({payload.RL_SUB} if SUBINTERPRETERS else set())
    assert figures["median_ms"]["1 KiB echo"].keys() == contenders
    assert figures["ratio_to_ppe"]["1 KiB echo"].keys() == contenders - {payload.PPE}
    says_whether_subinterpreters_ran(figures, capsys.readouterr().out)


def test_tracing_overhead_quick(capsys):
    figures = tracing_overhead.main(quick=True)
    check_figures(figures, "tracing_overhead", {"median_s", "ratio_vs_off", "chain_us_per_task", "sdk_us_per_span",
                                                "spans_exported"}, {"chain_overhead", "fanout_overhead"})
    for by_contender in figures["median_s"].values():
        assert by_contender.keys() == set(tracing_overhead.CONTENDERS)
    # Only the recording contender exports: 3 spans per chain task, more from the other workloads.
    assert figures["spans_exported"] >= 3 * figures["chain_tasks"]
    assert "per span" in capsys.readouterr().out
