"""mplab, the Multipath TCP lab, from Python.

    import mplab
    r = mplab.run("scenarios/two-paths.toml", set={"duration": "10s"}, seed=3)
    r.flows          # one row per flow: goodput, retransmissions, ...
    r.subflows       # the subflows' time series (goodput, cwnd, srtt, ...)
    s = mplab.sweep("scenarios/seed001-fig9.sweep.toml", seeds=2)
    s.aggregate      # mean / stdev / 95 % CI per point and flow
    mplab.load("results/two-paths")      # a run or a sweep directory

    sc = mplab.Scenario("mine", duration="10s")
    sc.host("client").host("server")
    sc.link("client:eth0", "server", rate="10Mbit", delay="10ms")
    sc.flow("bulk", "client", "server", transport="tcp", app="bulk")
    mplab.run(sc)

The runs go through the same library as the `mplab` command line: the
same scenario checks and error messages (a `ValueError` naming the line
and the field), the same results directories (docs/results.md). Runs and
sweeps release the GIL: a `concurrent.futures.ThreadPoolExecutor` runs
simulations on every core.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
import weakref
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _mplab

__version__ = _mplab.__version__

__all__ = ["Scenario", "Results", "SweepResults", "run", "sweep", "load", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]


def _value(path: str, v: Any) -> str:
    """A Python value as an override value (`--set PATH=VALUE`)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    if isinstance(v, (list, tuple, dict)):
        try:
            return _toml_inline(v)
        except TypeError as e:
            raise TypeError(f"{path}: {e}") from None
    raise TypeError(f"{path}: {type(v).__name__} is not a scenario value (want str, int, float, bool, list or dict)")


def _toml_inline(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_inline(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_inline(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"{type(v).__name__} is not a scenario value")


def _sets(set: Optional[Mapping[str, Any]]) -> List[tuple]:
    if set is None:
        return []
    if not isinstance(set, Mapping):
        raise TypeError(f"set: want a dict of path -> value, got {type(set).__name__}")
    return [(str(k), _value(str(k), v)) for k, v in set.items()]


class Scenario:
    """A scenario to build or edit from Python, checked like a file.

    Build one node, link and flow at a time (keyword arguments are the
    scenario format's fields, docs/scenario.md), or start from a file or
    TOML text and change fields with `set` (the command line's `--set`).
    `check()` validates it now; `run` validates it anyway.
    """

    def __init__(self, name: str = "scenario", **fields: Any):
        self._table: Dict[str, Any] = {"name": name}
        for k, v in fields.items():
            self._table[k] = v
        self._text: Optional[str] = None
        self._file = "<python scenario>"
        self._sets: List[tuple] = []

    @classmethod
    def from_file(cls, path: PathLike) -> "Scenario":
        sc = cls.from_toml(pathlib.Path(path).read_text(), name=str(path))
        return sc

    @classmethod
    def from_toml(cls, text: str, name: str = "<python scenario>") -> "Scenario":
        sc = cls.__new__(cls)
        sc._table, sc._text, sc._file, sc._sets = {}, text, name, []
        return sc

    # ---- building -------------------------------------------------------

    def _tables(self) -> Dict[str, Any]:
        if self._text is not None:
            try:
                import tomllib  # Python 3.11+
            except ImportError:  # pragma: no cover
                import tomli as tomllib  # type: ignore
            self._table = tomllib.loads(self._text)
            self._text = None
        return self._table

    def _add(self, array: str, entry: Dict[str, Any]) -> "Scenario":
        self._tables().setdefault(array, []).append({k: v for k, v in entry.items() if v is not None})
        return self

    def host(self, name: str, **fields: Any) -> "Scenario":
        """A host (runs flows)."""
        return self._add("nodes", {"name": name, **fields})

    def router(self, name: str, **fields: Any) -> "Scenario":
        """A router (forwards; may hold middleboxes)."""
        return self._add("nodes", {"name": name, "kind": "router", **fields})

    def link(self, a: str, b: str, name: Optional[str] = None, **fields: Any) -> "Scenario":
        """A link between `a` and `b` ("node" or "node:iface"), e.g.
        rate="10Mbit", delay="10ms", loss=0.01, queue={"kind": "droptail", "packets": 40}."""
        return self._add("links", {"name": name, "a": a, "b": b, **fields})

    def flow(self, name: str, src: str, dst: str, **fields: Any) -> "Scenario":
        """A flow from `src` to `dst`, e.g. transport="mptcp", app="bulk"."""
        return self._add("flows", {"name": name, "from": src, "to": dst, **fields})

    def middlebox(self, kind: str, **fields: Any) -> "Scenario":
        return self._add("middleboxes", {"kind": kind, **fields})

    def event(self, at: str, link: str, action: str, **fields: Any) -> "Scenario":
        return self._add("events", {"at": at, "link": link, "action": action, **fields})

    def set(self, path: str, value: Any) -> "Scenario":
        """Changes one field, as `mplab run --set PATH=VALUE` does
        ("links.0.rate", "transport.mptcp.scheduler", "duration")."""
        self._sets.append((path, _value(path, value)))
        return self

    # ---- output ----------------------------------------------------------

    def to_toml(self) -> str:
        """The scenario as TOML (before the `set` changes)."""
        if self._text is not None:
            return self._text
        try:
            doc = json.dumps(self._table)
        except TypeError as e:
            raise TypeError(f"scenario {self._table.get('name')!r}: {e}") from None
        return _mplab.json_to_toml(doc)

    def check(self) -> str:
        """Validates the scenario; returns its effective TOML. Raises
        ValueError with the line and the field of the first problem."""
        return _mplab.check(self.to_toml(), self._file, self._sets)

    def __repr__(self) -> str:
        t = self._tables() if self._text is None else {}
        return f"Scenario({t.get('name', self._file)!r})"


def _frame(path: pathlib.Path) -> pd.DataFrame:
    return pd.read_csv(path) if path.exists() and path.stat().st_size > 0 else pd.DataFrame()


class Results:
    """A run's results directory as DataFrames.

    `flows`: one row per flow (summary.json); `paths`: one row per subflow
    and its totals; `subflows`: the subflows' time series (flows.csv rows
    of one subflow each); `connections`: the connection-level time series
    (flows.csv's `subflow == "all"` rows: goodput of the whole flow);
    `interfaces`, `queues`: time series; `balancers`, `servers`: load
    balancers' counters when the run had some; `summary`, `meta`: dicts.
    """

    def __init__(self, dir: PathLike):
        self.dir = pathlib.Path(dir)
        p = self.dir / "summary.json"
        if not p.exists():
            raise FileNotFoundError(f"{self.dir}: not a run's results directory (no summary.json)")
        self.summary: Dict[str, Any] = json.loads(p.read_text())
        m = self.dir / "meta.json"
        self.meta: Dict[str, Any] = json.loads(m.read_text()) if m.exists() else {}
        flows = self.summary.get("flows", [])
        self.flows = pd.DataFrame([{k: v for k, v in f.items() if k != "subflows"} for f in flows])
        self.paths = pd.DataFrame([{"flow": f["name"], **s} for f in flows for s in f.get("subflows", [])])
        series = _frame(self.dir / "flows.csv")
        # flows.csv holds both levels; a subflow's rows and a connection's
        # total must not be summed or averaged together.
        whole = series["subflow"].astype(str) == "all" if "subflow" in series else pd.Series(False, index=series.index)
        self.subflows = series[~whole].reset_index(drop=True)
        self.connections = series[whole].reset_index(drop=True)
        self.interfaces = _frame(self.dir / "interfaces.csv")
        self.queues = _frame(self.dir / "queues.csv")
        self.balancers = _frame(self.dir / "balancers.csv")
        self.servers = _frame(self.dir / "servers.csv")

    @property
    def goodput_bps(self) -> float:
        """The flows' goodput, summed (bit/s)."""
        return float(self.flows["goodput_bps"].sum()) if len(self.flows) else 0.0

    def __repr__(self) -> str:
        return f"Results({str(self.dir)!r}: {len(self.flows)} flows, {self.goodput_bps / 1e6:.2f} Mbit/s)"


class SweepResults:
    """A sweep directory: `runs` (a row per run and flow, runs.csv),
    `aggregate` (mean / stdev / 95 % CI per point and flow), `spec`
    (sweep.json); `run(point, seed)` loads one run."""

    def __init__(self, dir: PathLike):
        self.dir = pathlib.Path(dir)
        p = self.dir / "sweep.json"
        if not p.exists():
            raise FileNotFoundError(f"{self.dir}: not a sweep directory (no sweep.json)")
        self.spec: Dict[str, Any] = json.loads(p.read_text())
        if not (self.dir / "runs.csv").exists():
            _mplab.collect(str(self.dir))
        self.runs = _frame(self.dir / "runs.csv")
        self.aggregate = _frame(self.dir / "aggregate.csv")
        self.failed: List[str] = []

    def run(self, point: Union[str, Mapping[str, Any]], seed: int) -> Results:
        """One run: `point` is its id (the `point` column) or its values."""
        if not isinstance(point, str):
            want = {k: _value(k, v) for k, v in point.items()}
            ids = [p["id"] for p in self.spec["points"] if p["set"] == want]
            if not ids:
                raise KeyError(f"no point {want} in this sweep")
            point = ids[0]
        return Results(self.dir / "runs" / point / f"seed-{seed}")

    def __repr__(self) -> str:
        return f"SweepResults({str(self.dir)!r}: {len(self.spec.get('points', []))} points, {self.runs['seed'].nunique() if len(self.runs) else 0} seeds)"


def _scenario_text(scenario: Union[PathLike, Scenario]) -> tuple:
    if isinstance(scenario, Scenario):
        return scenario.to_toml(), scenario._file, list(scenario._sets)
    if isinstance(scenario, (str, os.PathLike)):
        p = pathlib.Path(scenario)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such scenario file")
        return p.read_text(), str(p), []
    raise TypeError(f"scenario: want a file path or an mplab.Scenario, got {type(scenario).__name__}")


def run(
    scenario: Union[PathLike, Scenario],
    set: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    backend: str = "sim",
    out: Optional[PathLike] = None,
) -> Results:
    """Runs a scenario (a file or a `Scenario`) on `backend` ("sim";
    "kernel" and "userspace" need root) and returns its results. `set`
    changes fields first, as `--set` does. Without `out` the results go to
    a temporary directory (`Results.dir`) removed with the `Results`
    object: pass `out` to keep them."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise TypeError(f"seed: want a non-negative int, got {seed!r}")
    if not isinstance(backend, str):
        raise TypeError(f"backend: want a str, got {type(backend).__name__}")
    text, name, sets = _scenario_text(scenario)
    sets += _sets(set)
    d = pathlib.Path(out) if out is not None else pathlib.Path(tempfile.mkdtemp(prefix="mplab-run-"))
    try:
        _mplab.run(text, name, str(d), sets, seed, backend)
    except BaseException:
        if out is None:
            shutil.rmtree(d, ignore_errors=True)
        raise
    r = Results(d)
    if out is None:
        # A run's pcaps and CSVs are tens of megabytes: gone with the object.
        weakref.finalize(r, shutil.rmtree, str(d), True)
    return r


def sweep(
    scenario: Union[PathLike, Scenario],
    params: Optional[Mapping[str, Union[str, Sequence[Any]]]] = None,
    points: Optional[Iterable[Mapping[str, Any]]] = None,
    seeds: Union[int, str, Sequence[int], None] = None,
    set: Optional[Mapping[str, Any]] = None,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    plots: bool = False,
) -> SweepResults:
    """Runs a sweep on this machine's cores (resumable: finished runs are
    kept). `scenario`: a scenario or a spec file (*.sweep.toml), or a
    `Scenario`; `params`: path -> values ("10Mbit,20Mbit", "1..4" or a
    list), a grid; or `points`: a list of dicts; `seeds`: a count, a list
    or "1..5"."""
    if isinstance(scenario, Scenario):
        base = pathlib.Path(out) if out is not None else pathlib.Path(tempfile.mkdtemp(prefix="mplab-sweep-"))
        base.mkdir(parents=True, exist_ok=True)
        f = base.parent / (base.name + ".scenario.toml")
        f.write_text(scenario.to_toml())
        extra = [f"{k}={v}" for k, v in scenario._sets]
        file, out = f, base
    else:
        file, extra = pathlib.Path(scenario), []
        if not file.exists():
            raise FileNotFoundError(f"{file}: no such scenario or sweep spec file")
    ps: List[str] = []
    for k, v in (params or {}).items():
        if isinstance(v, str):
            ps.append(f"{k}={v}")
        elif isinstance(v, (list, tuple)):
            ps.append(f"{k}=" + ",".join(_value(k, x) for x in v))
        else:
            raise TypeError(f"params[{k!r}]: want a str (\"10Mbit,20Mbit\", \"1..4\") or a list, got {type(v).__name__}")
    pts = [";".join(f"{k}={_value(k, v)}" for k, v in p.items()) for p in (points or [])]
    if seeds is None:
        sd = None
    elif isinstance(seeds, bool):
        raise TypeError("seeds: want a count, a list or a range string")
    elif isinstance(seeds, int):
        sd = str(seeds)
    elif isinstance(seeds, str):
        sd = seeds
    else:
        sd = ",".join(str(int(s)) for s in seeds)
    sets = extra + [f"{k}={v}" for k, v in _sets(set)]
    total, skipped, ran, failed, d = _mplab.sweep(str(file), None if out is None else str(out), ps, pts, sd, sets, jobs, plots)
    r = SweepResults(d)
    r.failed = failed
    return r


def load(dir: PathLike) -> Union[Results, SweepResults]:
    """A run's or a sweep's results directory."""
    d = pathlib.Path(dir)
    if (d / "sweep.json").exists():
        return SweepResults(d)
    return Results(d)
