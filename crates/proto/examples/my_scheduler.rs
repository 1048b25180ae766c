//! A user-written packet scheduler in one file: "cheapest first". Each
//! subflow has a cost (say, metered cellular on subflow 1); data goes to the
//! cheapest subflow with window space, and a more expensive one is used
//! only when every cheaper one is full. It plugs into a connection with
//! `Connection::set_scheduler`, without touching the connection code.
//!
//! ```sh
//! cargo run --release -p mplab-proto --example my_scheduler
//! ```

use core::time::Duration;
use std::net::SocketAddr;

use mplab_proto::mptcp::scheduler::{active, SchedContext, Scheduler, SubflowInfo};
use mplab_proto::mptcp::{Connection, MptcpConfig};
use mplab_proto::Instant;

#[derive(Debug)]
struct CheapestFirst {
    /// Cost per subflow index (missing: 1).
    costs: Vec<u32>,
}

impl Scheduler for CheapestFirst {
    fn name(&self) -> &'static str {
        "cheapest-first"
    }

    fn schedule(&mut self, subflows: &[SubflowInfo], _cx: &SchedContext, out: &mut Vec<usize>) {
        let cost = |i: usize| self.costs.get(i).copied().unwrap_or(1);
        if let Some(s) = active(subflows).filter(|s| s.has_window).min_by_key(|s| (cost(s.index), s.rtt(), s.index)) {
            out.push(s.index);
        }
    }
}

fn info(index: usize, rtt_ms: u64, has_window: bool) -> SubflowInfo {
    SubflowInfo {
        index,
        srtt: Some(Duration::from_millis(rtt_ms)),
        rttvar: Duration::ZERO,
        cwnd: 14_000,
        ssthresh: u64::MAX,
        in_flight: 0,
        unacked: 0,
        mss: 1400,
        backup: false,
        usable: true,
        has_window,
        unsent: 0,
        sndbuf: 64 * 1024,
    }
}

fn main() {
    let mut s = CheapestFirst { costs: vec![1, 10] };
    let cx = SchedContext { len: 1400, now: Instant(0), reinjection: false, queued: 1400, outstanding: 0, send_window: 1 << 20, window_blocked: 0 };
    let mut out = Vec::new();
    // Wi-Fi (subflow 0) is slower but cheap: it wins while it has window.
    s.schedule(&[info(0, 40, true), info(1, 20, true)], &cx, &mut out);
    assert_eq!(out, [0]);
    out.clear();
    s.schedule(&[info(0, 40, false), info(1, 20, true)], &cx, &mut out);
    assert_eq!(out, [1]);

    // Plugging it into a connection.
    let local: SocketAddr = "10.0.0.2:40000".parse().unwrap();
    let remote: SocketAddr = "10.0.0.1:5001".parse().unwrap();
    let mut conn = Connection::connect(MptcpConfig::default(), local, remote, 1, Instant(0));
    conn.set_scheduler(Box::new(s));
    assert_eq!(conn.scheduler_name(), "cheapest-first");
    println!("cheapest-first scheduler installed on a connection");
}
