//! mplab's lab: running scenarios on every backend, sweeps (local and
//! Slurm), results tables, plots, reports, traces and validation. The
//! `mplab` command line (main.rs) and the Python package (crates/py) are
//! its two front ends.

pub mod attack;
pub mod capture;
pub mod compare;
pub mod figures;
pub mod grid;
pub mod load;
pub mod parq;
pub mod plot;
pub mod plugins;
pub mod procstat;
pub mod report;
pub mod run;
pub mod slurm;
pub mod slurm_options;
pub mod soak;
pub mod sweep;
pub mod table;
pub mod trace;
pub mod trace_gen;
pub mod trace_link;
pub mod validate;
