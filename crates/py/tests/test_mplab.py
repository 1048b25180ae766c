"""The `mplab` Python package against the simulator: results as
DataFrames with figures bounded by the link rates, the same bytes as the
command line, scenarios built in Python checked like files, errors that
name the field, sweeps, and simulations that run while Python does
something else (the GIL is released)."""

import concurrent.futures
import json
import pathlib
import subprocess
import threading

import pandas as pd
import pytest

import mplab

REPO = pathlib.Path(__file__).resolve().parents[3]
SCEN = REPO / "scenarios"
# Two 10 Mbit/s paths carry at most 2 x 10 x 1448/1500 Mbit/s of goodput.
TWO_PATHS_MAX = 2 * 10e6 * 1448 / 1500


@pytest.fixture(autouse=True)
def _temp_dirs_inside_tmp_path(tmp_path, monkeypatch):
    """`mplab.run` without `out` keeps its results in a new temporary
    directory on purpose; in tests that directory belongs under pytest's
    own (cleaned) tmp_path, not in /tmp for good."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def test_run_gives_dataframes_bounded_by_the_links(tmp_path):
    r = mplab.run(SCEN / "two-paths.toml", set={"duration": "5s"}, seed=2, out=tmp_path / "r")
    assert isinstance(r.flows, pd.DataFrame) and list(r.flows["name"]) == ["bulk"]
    assert bool(r.flows["verified"][0]) and not bool(r.flows["fallback"][0])
    assert 0.85 * TWO_PATHS_MAX < r.goodput_bps <= TWO_PATHS_MAX
    # Per subflow: two paths, fullmesh from two client addresses: 4 subflows.
    assert len(r.paths) == 4 and set(r.paths["flow"]) == {"bulk"}
    for frame, cols in [(r.subflows, {"time_s", "flow", "subflow", "goodput_bps", "cwnd_bytes", "srtt_ms"}), (r.interfaces, {"time_s", "node", "iface", "tx_bps"})]:
        assert cols <= set(frame.columns), frame.columns
        assert len(frame) > 0
    # Subflow rows and the connection's total rows are apart.
    assert "all" not in set(r.subflows["subflow"].astype(str))
    assert set(r.connections["subflow"].astype(str)) == {"all"} and len(r.connections) > 0
    assert len(r.connections) + len(r.subflows) == len(pd.read_csv(tmp_path / "r" / "flows.csv"))
    # Queues are sampled where the scenario asks (none here): the columns only.
    assert {"time_s", "link", "queue_bytes", "drops"} <= set(r.queues.columns)
    assert r.summary["seed"] == 2 and r.meta["backend"] == "sim"


def test_same_bytes_as_the_command_line(tmp_path):
    exe = REPO / "target" / "release" / "mplab"
    if not exe.exists():
        pytest.skip("no target/release/mplab (cargo build --release -p mplab)")
    mplab.run(SCEN / "two-paths.toml", set={"duration": "3s", "topology.loss": 0.01}, seed=7, out=tmp_path / "py")
    subprocess.run([str(exe), "run", str(SCEN / "two-paths.toml"), "--set", "duration=3s", "--set", "topology.loss=0.01", "--seed", "7", "--out", str(tmp_path / "cli"), "-q"], check=True)
    for f in ["summary.json", "flows.csv", "interfaces.csv", "queues.csv"]:
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    a = mplab.run(SCEN / "two-paths.toml", set={"duration": "3s", "topology.loss": 0.01}, seed=1)
    b = mplab.run(SCEN / "two-paths.toml", set={"duration": "3s", "topology.loss": 0.01}, seed=1)
    c = mplab.run(SCEN / "two-paths.toml", set={"duration": "3s", "topology.loss": 0.01}, seed=2)
    pd.testing.assert_frame_equal(a.subflows, b.subflows)
    assert not a.subflows.equals(c.subflows)


def built(rate="10Mbit", delay="10ms"):
    sc = mplab.Scenario("built", duration="4s")
    sc.host("client").host("server")
    sc.link("client:eth0", "server", rate=rate, delay=delay, queue={"kind": "droptail", "packets": 40})
    sc.flow("bulk", "client", "server", transport="tcp", app="bulk")
    return sc


def test_a_scenario_built_in_python_runs():
    r = mplab.run(built())
    one = 10e6 * 1448 / 1500
    assert 0.85 * one < r.goodput_bps <= one
    assert list(r.flows["transport"]) == ["tcp"]
    toml = built().to_toml()
    assert "[[links]]" in toml and 'rate = "10Mbit"' in toml


def test_set_edits_a_file_scenario_and_check_shows_it():
    sc = mplab.Scenario.from_file(SCEN / "two-paths.toml").set("topology.rate", "20Mbit").set("duration", "2s")
    eff = sc.check()
    assert 'rate = "20Mbit"' in eff
    r = mplab.run(sc)
    assert r.goodput_bps > TWO_PATHS_MAX  # twice the rate: above what 10 Mbit/s paths carry


def test_errors_name_the_field():
    sc = built()
    sc._tables()["links"][0]["rat"] = "10Mbit"
    with pytest.raises(ValueError, match=r"rat"):
        sc.check()
    with pytest.raises(ValueError, match=r"links\[0\]\.delay"):
        built(delay=True).check()
    with pytest.raises(ValueError, match=r"no_such_field"):
        mplab.run(SCEN / "two-paths.toml", set={"no_such_field": 1})
    with pytest.raises(ValueError, match=r"backend"):
        mplab.run(SCEN / "two-paths.toml", set={"duration": "1s"}, backend="ns3")
    with pytest.raises(TypeError, match=r"duration"):
        mplab.run(SCEN / "two-paths.toml", set={"duration": object()})
    with pytest.raises(TypeError, match=r"seed"):
        mplab.run(SCEN / "two-paths.toml", seed="one")
    with pytest.raises(FileNotFoundError):
        mplab.run(SCEN / "no-such.toml")
    with pytest.raises(ValueError, match=r":2:12: duration"):
        mplab.Scenario.from_toml('name = "x"\nduration = "5 parsecs"\n').check()


def test_sweep_aggregates_and_loads(tmp_path):
    s = mplab.sweep(SCEN / "two-paths.toml", params={"topology.rate": ["10Mbit", "20Mbit"]}, seeds=2, set={"duration": "2s", "topology.loss": 0.01}, out=tmp_path / "sw", jobs=2)
    assert s.failed == []
    assert len(s.runs[s.runs["flow"] == "all"]) == 4
    agg = s.aggregate[s.aggregate["flow"] == "all"].set_index("topology.rate")
    assert list(agg["n"]) == [2, 2]
    assert agg.loc["10Mbit", "goodput_bps_mean"] <= TWO_PATHS_MAX < agg.loc["20Mbit", "goodput_bps_mean"]
    again = mplab.load(tmp_path / "sw")
    assert isinstance(again, mplab.SweepResults)
    pd.testing.assert_frame_equal(again.aggregate, s.aggregate)
    one = s.run({"topology.rate": "20Mbit"}, seed=2)
    assert one.summary["seed"] == 2
    # Resumable: nothing runs again.
    s2 = mplab.sweep(SCEN / "two-paths.toml", params={"topology.rate": ["10Mbit", "20Mbit"]}, seeds=2, set={"duration": "2s", "topology.loss": 0.01}, out=tmp_path / "sw")
    pd.testing.assert_frame_equal(s2.aggregate, s.aggregate)


def test_a_sweep_of_a_built_scenario(tmp_path):
    s = mplab.sweep(built(), params={"links.0.rate": "5Mbit,10Mbit"}, out=tmp_path / "b")
    assert len(s.aggregate[s.aggregate["flow"] == "all"]) == 2


def test_simulations_release_the_gil():
    """While a simulation runs in another thread, this thread keeps
    running Python: it could not if the call held the GIL."""
    done = threading.Event()
    ticks = 0

    def sim():
        try:
            return mplab.run(SCEN / "two-paths.toml", set={"duration": "20s"})
        finally:
            done.set()

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        fut = pool.submit(sim)
        while not done.is_set():
            ticks += 1
        r = fut.result()
    assert r.goodput_bps > 0
    assert ticks > 10000, ticks


def test_threads_run_simulations_side_by_side():
    seeds = [1, 2, 3, 4]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        rs = list(pool.map(lambda s: mplab.run(SCEN / "two-paths.toml", set={"duration": "2s", "topology.loss": 0.01}, seed=s), seeds))
    for s, r in zip(seeds, rs):
        solo = mplab.run(SCEN / "two-paths.toml", set={"duration": "2s", "topology.loss": 0.01}, seed=s)
        pd.testing.assert_frame_equal(r.subflows, solo.subflows)


def test_a_run_without_out_cleans_up_after_itself(tmp_path):
    import gc

    r = mplab.run(SCEN / "tcp-single.toml", set={"duration": "1s"})
    d = r.dir
    assert (d / "summary.json").exists() and r.goodput_bps > 0
    del r
    gc.collect()
    assert not d.exists(), "the temporary results went with the Results object"
    kept = mplab.run(SCEN / "tcp-single.toml", set={"duration": "1s"}, out=tmp_path / "kept")
    del kept
    gc.collect()
    assert (tmp_path / "kept" / "summary.json").exists(), "an `out` directory stays"
