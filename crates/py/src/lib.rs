//! The native half of the `mplab` Python package (crates/py/python/mplab):
//! scenario checking, runs on every backend and sweeps, through the same
//! library as the `mplab` command line. Functions take and return plain
//! strings and lists; the Python half turns results directories into
//! pandas DataFrames. Every long call releases the GIL, so a Python thread
//! pool runs simulations on every core.
//!
//! Errors: a bad scenario, a bad override or an unsupported setting raise
//! `ValueError` with the message the command line prints (file, line,
//! field); a run that happens but fails (I/O, data that did not verify)
//! raises `RuntimeError`.

use std::path::{Path, PathBuf};

use mplab::run::RunError;
use mplab_scenario::Scenario;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

fn to_py(e: RunError) -> PyErr {
    match e {
        RunError::Usage(m) => PyValueError::new_err(m),
        RunError::Failed(m) => PyRuntimeError::new_err(m),
    }
}

/// The scenario `text` (named `name` in errors) with `sets` applied.
fn scenario(text: &str, name: &str, sets: &[(String, String)]) -> Result<Scenario, RunError> {
    let mut sc = Scenario::from_str(text, name).map_err(|e| RunError::Usage(e.to_string()))?;
    if !sets.is_empty() {
        sc.set_all(sets.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| RunError::Usage(e.to_string()))?;
    }
    Ok(sc)
}

/// Checks a scenario as `mplab run` would before running it on the
/// simulator; returns its effective TOML (overrides applied).
#[pyfunction]
#[pyo3(signature = (text, name, sets=Vec::new()))]
fn check(text: &str, name: &str, sets: Vec<(String, String)>) -> PyResult<String> {
    let sc = scenario(text, name, &sets).map_err(to_py)?;
    let net = mplab_backend::plugins::resolve(&sc).map_err(|e| PyValueError::new_err(e.to_string()))?;
    mplab::run::sim_preflight(&sc, &net).map_err(to_py)?;
    Ok(sc.effective_toml())
}

/// Converts a JSON document (a scenario built as Python dicts and lists)
/// to TOML text.
#[pyfunction]
fn json_to_toml(json: &str) -> PyResult<String> {
    let v: toml::Value = serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("not a scenario table: {e}")))?;
    match v {
        toml::Value::Table(t) => toml::to_string(&t).map_err(|e| PyValueError::new_err(e.to_string())),
        _ => Err(PyValueError::new_err("a scenario is a table (a dict) at the top")),
    }
}

/// Runs a scenario on `backend` ("sim", "kernel" or "userspace") and
/// writes its results directory `out`; returns summary.json's text.
#[pyfunction]
#[pyo3(signature = (text, name, out, sets=Vec::new(), seed=None, backend="sim"))]
fn run(py: Python<'_>, text: &str, name: &str, out: PathBuf, sets: Vec<(String, String)>, seed: Option<u64>, backend: &str) -> PyResult<String> {
    let mut sets = sets;
    if let Some(s) = seed {
        sets.push(("seed".into(), s.to_string()));
    }
    let (text, name, backend) = (text.to_string(), name.to_string(), backend.to_string());
    let r: Result<String, RunError> = py.detach(move || {
        let sc = scenario(&text, &name, &sets)?;
        let net = mplab_backend::plugins::resolve(&sc).map_err(|e| RunError::Usage(e.to_string()))?;
        let (results, _) = match backend.as_str() {
            "sim" => mplab::run::simulate(&sc, net, &out, false, None)?,
            "kernel" | "userspace" => mplab::run::run_real(&backend, &sc, net, &out)?,
            other => return Err(RunError::Usage(format!("backend {other:?}: want \"sim\", \"kernel\" or \"userspace\""))),
        };
        mplab::run::check(&results)?;
        Ok(serde_json::to_string(&results.summary).unwrap_or_default())
    });
    r.map_err(to_py)
}

/// Runs a sweep on this machine (the local executor); returns (runs in
/// all, already done, run now, failures as "point; seed: why").
#[pyfunction]
#[pyo3(signature = (file, out, params=Vec::new(), points=Vec::new(), seeds=None, sets=Vec::new(), jobs=None, plots=true))]
#[allow(clippy::too_many_arguments)]
fn sweep(py: Python<'_>, file: PathBuf, out: Option<PathBuf>, params: Vec<String>, points: Vec<String>, seeds: Option<String>, sets: Vec<String>, jobs: Option<usize>, plots: bool) -> PyResult<(usize, usize, usize, Vec<String>, String)> {
    let r: Result<_, RunError> = py.detach(move || {
        let spec = mplab::sweep::spec_from(&file, &params, &points, None, seeds.as_deref(), &sets).map_err(RunError::Usage)?;
        let out = out.unwrap_or_else(|| mplab::sweep::default_out(&file));
        let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
        let opt = mplab::sweep::SweepOptions { out: out.clone(), jobs, quiet: true, verbose: false, plots, max_runs: None };
        let o = mplab::sweep::sweep(&spec, &opt)?;
        Ok((o.total, o.skipped, o.ran, o.failed, out.display().to_string()))
    });
    r.map_err(to_py)
}

/// Aggregates a sweep directory's finished runs (CSV, Parquet, plots).
#[pyfunction]
fn collect(py: Python<'_>, dir: PathBuf) -> PyResult<usize> {
    py.detach(move || mplab::sweep::finish(Path::new(&dir), false, serde_json::json!({ "executor": "python" }))).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

#[pymodule]
fn _mplab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(collect, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
