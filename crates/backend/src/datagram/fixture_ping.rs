//! A test-only datagram application, added as a newcomer adds one: this
//! file and its line in `datagram_applications!`. A ping: one 100-byte
//! datagram every 10 ms, each echoed.

use super::{DatagramKind, OVER_UDP, PARAMS};
use mplab_scenario::plugins::About;

pub const KIND: DatagramKind = DatagramKind {
    about: About { name: "fixture-ping", params: PARAMS, what: "test fixture: a 100-byte datagram every 10 ms, each echoed", kernel: OVER_UDP },
    packet_size: 100,
    interval_ms: 10,
    echoes: true,
    playout_ms: 50.0,
};

#[cfg(test)]
mod tests {
    use mplab_proto::Instant;
    use mplab_scenario::Scenario;

    use crate::datagram::DatagramApp;

    /// Named by a scenario over UDP, the kind is checked by the registry,
    /// shows its defaults in the resolved network, and its two ends run
    /// the shared state machine: every update is echoed, and the report
    /// gives its round trips.
    #[test]
    fn a_datagram_application_added_by_one_file_is_chosen_by_its_name() {
        let text = "name = \"t\"\nduration = \"1s\"\n[topology]\nkind = \"parallel\"\npaths = 1\nrate = \"10Mbit\"\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"udp\"\napp = \"fixture-ping\"\n";
        let net = crate::plugins::resolve(&Scenario::from_str(text, "t.toml").unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let app = &net.flows[0].app;
        assert_eq!(serde_json::to_string(app).unwrap(), r#"{"kind":"fixture-ping","packet_bytes":100,"interval_ns":10000000}"#);
        let stop = Instant(1_000_000_000);
        let mut c = DatagramApp::new(app, true, Instant::ZERO, stop).unwrap();
        let mut s = DatagramApp::new(app, false, Instant::ZERO, stop).unwrap();
        // A 2 ms one-way path: each update and its echo cross it.
        let mut t = Instant::ZERO;
        while let Some(next) = c.poll_timer() {
            t = next;
            c.on_timer(t);
            while let Some(d) = c.poll_transmit() {
                s.on_datagram(Instant(t.0 + 2_000_000), &d);
                while let Some(e) = s.poll_transmit() {
                    c.on_datagram(Instant(t.0 + 4_000_000), &e);
                }
            }
        }
        assert_eq!(t, Instant(990_000_000), "100 updates, 10 ms apart");
        let r = DatagramApp::report(&c, &s, Instant(3_000_000_000));
        assert_eq!(r.app, "fixture-ping");
        assert_eq!((r.rtt_p50_ms, r.rtt_max_ms, r.echo_loss_ratio), (Some(4.0), Some(4.0), Some(0.0)));
    }
}
