//! `app = "voip"`: a voice call, one way from `from` to `to`, measured by
//! what the listener hears (loss, delay, jitter, interruptions, MOS).

use super::{DatagramKind, OVER_UDP, PARAMS};
use mplab_scenario::plugins::About;

pub const KIND: DatagramKind = DatagramKind {
    about: About { name: "voip", params: PARAMS, what: "a voice call over UDP: one `packet_size` datagram (160 B) every `interval` (20 ms); the result is its loss, delay, jitter, longest interruption and MOS", kernel: OVER_UDP },
    packet_size: 160,
    interval_ms: 20,
    echoes: false,
    // A common fixed jitter buffer.
    playout_ms: 60.0,
};
