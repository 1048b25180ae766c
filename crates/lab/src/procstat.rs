//! What a long run costs this process and the kernel, sampled while it
//! goes on (`mplab soak`, `mplab load`): resident memory (huge pages
//! included), open descriptors, threads and the kernel's slab; and the
//! mplab hosts' packet-loop figures from a run's meta.json.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// One sample of the process and the kernel.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    pub wall_s: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub threads: u64,
    /// /proc/meminfo `Slab:`: the kernel's objects, sockets among them.
    pub slab_kib: u64,
}

fn field(text: &str, key: &str) -> u64 {
    text.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The process and the kernel now, `t0` being the run's start.
pub fn sample(t0: Instant) -> Sample {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0);
    Sample {
        wall_s: t0.elapsed().as_secs_f64(),
        // The simulator's packet pool may sit on huge pages, which VmRSS leaves out.
        rss_kib: field(&status, "VmRSS:") + field(&status, "HugetlbPages:"),
        fds,
        threads: field(&status, "Threads:"),
        slab_kib: field(&meminfo, "Slab:"),
    }
}

/// A thread sampling every `every` until [`Sampler::finish`]; past 2000
/// samples every other one is dropped and the spacing doubled, so a long
/// run keeps an even record.
pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Sampler {
    pub fn start(t0: Instant, first: Sample, every: Duration) -> Sampler {
        let samples = Arc::new(Mutex::new(vec![first]));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (samples, stop) = (samples.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut stride, mut k) = (1usize, 0usize);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(every);
                    k += 1;
                    if k % stride != 0 {
                        continue;
                    }
                    let mut v = samples.lock().unwrap_or_else(|e| e.into_inner());
                    v.push(sample(t0));
                    if v.len() >= 2000 {
                        let kept: Vec<Sample> = v.iter().step_by(2).copied().collect();
                        *v = kept;
                        stride *= 2;
                    }
                }
            })
        };
        Sampler { samples, stop, thread }
    }

    /// Stops the thread; the samples in time order.
    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.samples.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// The mplab hosts' packet loops in a run's meta.json: the longest pass
/// (wall time), the most CPU one pass took, and the passes over 10 ms; None
/// without mplab hosts.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LoopFigures {
    pub max_pass_ms: Option<f64>,
    pub max_pass_cpu_ms: Option<f64>,
    pub passes_over_10ms: Option<u64>,
}

pub fn loop_figures(meta: &serde_json::Value) -> LoopFigures {
    let Some(hosts) = meta.get("mplab_hosts").and_then(|h| h.as_object()) else { return LoopFigures::default() };
    LoopFigures {
        max_pass_ms: hosts.values().filter_map(|h| h["max_pass_ms"].as_f64()).reduce(f64::max),
        max_pass_cpu_ms: hosts.values().filter_map(|h| h["max_pass_cpu_ms"].as_f64()).reduce(f64::max),
        passes_over_10ms: Some(hosts.values().filter_map(|h| h["passes_over_10ms"].as_u64()).sum()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_figures_take_the_worst_host() {
        let meta = serde_json::json!({"mplab_hosts": {"a": {"max_pass_ms": 3.0, "max_pass_cpu_ms": 1.0, "passes_over_10ms": 2}, "b": {"max_pass_ms": 12.5, "max_pass_cpu_ms": 0.5, "passes_over_10ms": 1}}});
        let f = loop_figures(&meta);
        assert_eq!((f.max_pass_ms, f.max_pass_cpu_ms, f.passes_over_10ms), (Some(12.5), Some(1.0), Some(3)));
        assert!(loop_figures(&serde_json::json!({})).max_pass_ms.is_none());
    }

    #[test]
    fn a_sample_sees_this_process() {
        let s = sample(Instant::now());
        assert!(s.rss_kib > 0 && s.fds > 0 && s.threads >= 1, "{s:?}");
    }
}
