//! How a sweep is submitted to Slurm: the settings of `[sweep.slurm]` in
//! a spec file and of the `--slurm-*` flags. Apart from `slurm` so that a
//! sweep spec can carry them without the sweep depending on the executor.

use serde::{Deserialize, Serialize};

/// Slurm settings: `[sweep.slurm]` in a spec file, or `--slurm-*` flags.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time` of each array task (Slurm's formats: "30", "1:00:00", "1-0").
    pub time: Option<String>,
    /// `--mem` per task ("2G").
    pub mem: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// At most this many array tasks at once (`--array=...%N`).
    pub max_concurrent: Option<u32>,
    /// Runs per array task; default from the runs' measured cost.
    pub runs_per_task: Option<usize>,
    /// Wall time an array task should take when `runs_per_task` is not
    /// given (minutes, default 10): few job starts, short enough to share.
    pub task_minutes: Option<f64>,
    /// More `#SBATCH` options, verbatim ("--qos=short", "--constraint=x").
    #[serde(default)]
    pub extra: Vec<String>,
    /// Lines run before mplab in each task ("module load rust").
    #[serde(default)]
    pub setup: Vec<String>,
}
