//! `app = "game"`: a game's updates from `from`, each echoed by `to`,
//! measured by their round trips and loss.

use super::{DatagramKind, OVER_UDP, PARAMS};
use mplab_scenario::plugins::About;

pub const KIND: DatagramKind = DatagramKind {
    about: About { name: "game", params: PARAMS, what: "a game's updates over UDP: one `packet_size` datagram (64 B) every `interval` (30 ms), each echoed; the results are its round-trip latency percentiles and loss", kernel: OVER_UDP },
    packet_size: 64,
    interval_ms: 30,
    echoes: true,
    // An update is stale once it is this late.
    playout_ms: 100.0,
};
