//! What a real-packet run takes and gives: its options, its errors and
//! its results (the public types of [`crate::kernel`] and
//! [`crate::userspace`]).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use mplab_backend::results::RunResults;

pub struct KernelOptions {
    /// Where pcaps go (`probes.pcap`), if any.
    pub pcap_dir: Option<PathBuf>,
    /// Set by a signal handler (or a test) to end the run early; the run
    /// then tears everything down and returns `Interrupted`.
    pub abort: Arc<AtomicBool>,
    /// Use this namespace prefix instead of a fresh `mplab-<pid>-<rand>`.
    pub prefix: Option<String>,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions { pcap_dir: None, abort: Arc::new(AtomicBool::new(false)), prefix: None }
    }
}

#[derive(Debug)]
pub enum KernelError {
    /// Not root, or the scenario asks for something the kernel cannot do.
    Usage(String),
    /// Setting up or running failed (the message names the step).
    Failed(String),
    /// Ended by the abort flag (Ctrl-C); everything was torn down.
    Interrupted,
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelError::Usage(m) | KernelError::Failed(m) => f.write_str(m),
            KernelError::Interrupted => f.write_str("interrupted; namespaces removed"),
        }
    }
}

impl std::error::Error for KernelError {}

pub struct KernelRun {
    pub results: RunResults,
    /// Run facts for meta.json: namespaces prefix, emulator timing, MPTcpExt and TcpExt counters.
    pub meta: serde_json::Value,
}
