//! One scenario on Linux kernel (MP)TCP: topology in namespaces, the link
//! emulator, kernel configuration, applications, probes, and results in
//! the simulator's format (`mplab_backend::results`), with backend "kernel".
//! The run itself is [`crate::run`]'s pipeline of phases with every node
//! on the kernel's stack; this module keeps its public entry points and
//! the judgement of runs the host stalled.

use std::time::Duration;

use mplab_scenario::network::Network;

pub use crate::run::options::{KernelError, KernelOptions, KernelRun};
pub use crate::run::setup::preflight;

/// Above this p99 lateness (µs) of the emulator's frames, a real-time run
/// measured the host rather than the scenario: the virtual machine stopped
/// running the emulator's thread for a while. The heaviest test loads on
/// this 2-core machine otherwise stay below 4 ms (docs/kernel-backend.md).
pub const HOST_STALL_P99_US: f64 = 5000.0;

/// The emulator's p99 lateness (µs) when the host stalled the run (see
/// [`HOST_STALL_P99_US`]), read from the run's meta.json; None otherwise.
pub fn host_stall(meta: &serde_json::Value) -> Option<f64> {
    meta["emulator"]["lateness_p99_us"].as_f64().filter(|p99| *p99 > HOST_STALL_P99_US)
}

/// How many times in all a real-time run the host stalled is tried, and
/// the pause before each repeat: the virtual machine's stall spells last a
/// minute or so.
pub const STALL_ATTEMPTS: usize = 3;
pub const STALL_PAUSE: Duration = Duration::from_secs(10);

/// Runs `once(attempt)` (attempt 0, 1, ...) again while the host stalls
/// it ([`host_stall`] on the run's meta.json), at most [`STALL_ATTEMPTS`]
/// times in all, saying so on stderr; the last attempt is returned,
/// stalled or not. For callers whose figures compare real time (tests,
/// `mplab attack`); `mplab run` runs once and leaves meta.json to judge.
pub fn unless_host_stalled<T, E>(once: impl FnMut(usize) -> Result<T, E>, meta: impl Fn(&T) -> &serde_json::Value) -> Result<T, E> {
    repeat_while_stalled(once, meta, STALL_PAUSE)
}

/// [`unless_host_stalled`] with its pause between attempts as a parameter.
fn repeat_while_stalled<T, E>(mut once: impl FnMut(usize) -> Result<T, E>, meta: impl Fn(&T) -> &serde_json::Value, pause: Duration) -> Result<T, E> {
    let mut attempt = 0;
    loop {
        let r = once(attempt)?;
        attempt += 1;
        match host_stall(meta(&r)) {
            Some(p99) if attempt < STALL_ATTEMPTS => {
                eprintln!("host stall: the emulator sent a hundredth of its frames {p99:.0} us late or later; running again in {} s (attempt {} of {STALL_ATTEMPTS})", pause.as_secs(), attempt + 1);
                std::thread::sleep(pause);
            }
            _ => return Ok(r),
        }
    }
}

/// Runs `net` on the kernel. The caller has checked it with
/// [`crate::kconf::unsupported`].
pub fn run(net: &Network, opts: &KernelOptions) -> Result<KernelRun, KernelError> {
    crate::run::run(net, opts, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_stalled_when_a_hundredth_of_its_frames_left_over_5_ms_late() {
        let meta = |p99: serde_json::Value| serde_json::json!({ "emulator": { "lateness_p99_us": p99 } });
        assert_eq!(host_stall(&meta(6300.0.into())), Some(6300.0));
        assert_eq!(host_stall(&meta(3800.0.into())), None, "the heaviest test loads on a quiet host");
        assert_eq!(host_stall(&meta(HOST_STALL_P99_US.into())), None);
        assert_eq!(host_stall(&meta(serde_json::Value::Null)), None, "no frames: nothing to judge");
        assert_eq!(host_stall(&serde_json::json!({})), None);
    }

    #[test]
    fn a_stalled_run_is_repeated_at_most_three_times_in_all() {
        let meta = |p99: f64| serde_json::json!({ "emulator": { "lateness_p99_us": p99 } });
        // The pause is the real one's business; here 1 ms.
        let pause = Duration::from_millis(1);
        let mut calls = 0;
        let r = repeat_while_stalled(|a| { calls += 1; Ok::<_, ()>((a, meta(100.0))) }, |r| &r.1, pause);
        assert_eq!((r.unwrap().0, calls), (0, 1), "a clean run is not repeated");
        let r = repeat_while_stalled(|_| Err::<(usize, serde_json::Value), _>("setup failed"), |r| &r.1, pause);
        assert_eq!(r.unwrap_err(), "setup failed");
        // Two stalled attempts, then a clean one.
        let r = repeat_while_stalled(|a| Ok::<_, ()>((a, meta(if a < 2 { 9000.0 } else { 100.0 }))), |r| &r.1, pause);
        assert_eq!(r.unwrap().0, 2);
        // Stalled throughout: the third attempt is the caller's.
        let mut calls = 0;
        let r = repeat_while_stalled(|a| { calls += 1; Ok::<_, ()>((a, meta(9000.0))) }, |r| &r.1, pause);
        assert_eq!((r.unwrap().0, calls), (STALL_ATTEMPTS - 1, STALL_ATTEMPTS));
    }
}
