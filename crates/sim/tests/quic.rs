//! QUIC flows (`transport = "quic"`, quinn-proto) on the simulator, over
//! one 10 Mbit/s, 20 ms link. A QUIC packet of a full 1500-byte path
//! carries at most 1472 - 1 - 8 - 1 - 4 - 16 = ~1440 bytes of stream data
//! (short header, connection ID, packet number, STREAM frame header,
//! AEAD tag), so a long transfer reaches about 9.5 Mbit/s of goodput.

mod support;

use support::*;

fn link(extra: &str, app: &str) -> String {
    format!(
        r#"
name = "quic"
duration = "20s"

[[nodes]]
name = "client"

[[nodes]]
name = "server"

[[links]]
a = "client"
b = "server"
rate = "10Mbit"
delay = "20ms"
queue = {{ kind = "droptail", packets = 100 }}
{extra}

[[flows]]
name = "q"
from = "client"
to = "server"
transport = "quic"
{app}
"#
    )
}

#[test]
fn a_quic_download_fills_the_link_and_verifies() {
    let r = run(&link("", "app = \"download\"\nbytes = \"10MB\""));
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified, "{f:?}");
    let mbit = 10e6 * 8.0 / f.completion_time_s.unwrap() / 1e6;
    assert!((8.5..9.7).contains(&mbit), "{mbit} Mbit/s");
}

#[test]
fn quic_recovers_losses_and_delivers_every_byte() {
    let r = run(&link("loss = 0.02", "app = \"bulk\"\nbytes = \"5MB\""));
    let f = &r.summary.flows[0];
    assert!(f.completed && f.verified && f.bytes_delivered == 5_000_000, "{f:?}");
    assert!(f.retransmitted_segments > 0, "{f:?}");
}

#[test]
fn quic_runs_are_deterministic() {
    let text = link("loss = 0.01\njitter = \"2ms\"", "app = \"bulk\"\nstop = \"10s\"");
    assert_eq!(serde_json::to_string(&run(&text).summary).unwrap(), serde_json::to_string(&run(&text).summary).unwrap());
}
