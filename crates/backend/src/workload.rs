//! What a backend does to the resolved workload before it runs it, the
//! same on every backend: flows' random start times.

use mplab_scenario::Network;

use crate::rng::RngStreams;

/// The random streams of start times: one per flow, apart from every
/// element's stream the simulator draws (links, ECMP, endpoints).
const START_JITTER_STREAM_BASE: u64 = 0x5a_0000_0000;

/// Moves each flow with a `start_jitter` later by a uniform draw below it,
/// from the run's seed: the same seed, the same starts, on every backend.
pub fn apply_start_jitter(net: &mut Network) {
    let streams = RngStreams::new(net.seed);
    for f in net.flows.iter_mut().filter(|f| f.start_jitter_ns > 0) {
        let mut r = streams.stream(START_JITTER_STREAM_BASE + f.id as u64);
        f.start_ns += r.next_u64() % f.start_jitter_ns;
        f.start_jitter_ns = 0;
    }
}
