//! A user-written congestion control in one file: "gentle", a Reno whose
//! multiplicative decrease is 0.8 instead of 0.5 (the kind of variant a
//! student tries first). It plugs into a connection through a
//! `CcChoice::custom` factory in `TcpConfig::cc` — every TCP connection
//! (every MPTCP subflow) gets its own instance — without touching the
//! registry or the connection code.
//!
//! ```sh
//! cargo run --release -p mplab-proto --example my_cc
//! ```

use std::net::SocketAddr;

use mplab_proto::cc::{avoidance_bytes, AckEvent, CcChoice, CcState, CongestionControl};
use mplab_proto::tcp::{Connection, TcpConfig};
use mplab_proto::Instant;

#[derive(Debug, Default)]
struct Gentle {
    /// Bytes acknowledged in congestion avoidance since the last increase.
    acked: u64,
}

impl CongestionControl for Gentle {
    fn name(&self) -> &'static str {
        "gentle"
    }

    fn on_ack(&mut self, s: &mut CcState, ev: &AckEvent<'_>) {
        // One MSS per window of acknowledged bytes, as Reno.
        self.acked += avoidance_bytes(s, ev);
        while self.acked >= s.cwnd {
            self.acked -= s.cwnd;
            s.cwnd += s.mss;
        }
    }

    fn on_congestion_event(&mut self, s: &mut CcState, _now: Instant, _in_flight: u64) {
        s.ssthresh = (s.cwnd * 4 / 5).max(s.min_cwnd());
        s.cwnd = s.ssthresh;
        self.acked = 0;
    }
}

fn main() {
    // The algorithm alone: a loss at 50 segments leaves 40.
    let mut s = CcState::new(1000);
    s.cwnd = 50_000;
    Gentle::default().on_congestion_event(&mut s, Instant(0), 50_000);
    assert_eq!((s.cwnd, s.ssthresh), (40_000, 40_000));

    // Plugged into a connection's configuration.
    let cfg = TcpConfig { cc: CcChoice::custom("gentle", || Box::new(Gentle::default())), ..TcpConfig::default() };
    assert_eq!(cfg.cc.name(), "gentle");
    let local: SocketAddr = "10.0.0.2:40000".parse().unwrap();
    let remote: SocketAddr = "10.0.0.1:5001".parse().unwrap();
    let conn = Connection::connect(cfg, local, remote, 1, Instant(0));
    assert_eq!(conn.cc_name(), "gentle");
    println!("gentle congestion control installed on a connection (initial cwnd {} bytes)", conn.cc_state().cwnd);
}
