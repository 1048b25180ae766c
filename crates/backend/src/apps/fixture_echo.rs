//! A test-only application that proves the axis: added with this file and
//! its line in `applications!`, nothing else. The client writes `bytes`,
//! the server writes back every byte it reads, and the transfer is done
//! when the client has read them all back.

use mplab_proto::Instant;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};
use mplab_scenario::Size;

use super::{Application, EndState, Sends, StreamApp, StreamSocket};

#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    bytes: u64,
}

impl Application for Echo {
    const ABOUT: About = About { name: "echo", params: &["bytes"], what: "the client writes `bytes`, the server writes back what it reads (a test fixture)", kernel: OnKernel::Refuses("a test fixture") };
    const SENDS: Sends = Sends::Both;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let bytes = f.get::<Size>("bytes")?;
        f.finish()?;
        Ok(Echo { bytes: super::need(f, bytes, "bytes")? })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("bytes", self.bytes.into())]
    }

    fn bounded(&self) -> Option<u64> {
        Some(self.bytes)
    }
}

impl StreamApp for Echo {
    fn send_goal(&self, _: &EndState) -> Option<u64> {
        Some(self.bytes)
    }

    fn recv_goal(&self, end: &EndState) -> Option<u64> {
        end.client.then_some(self.bytes)
    }

    /// The server writes back no more than it has read.
    fn write(&mut self, end: &mut EndState, _: Instant, s: &mut dyn StreamSocket) {
        let due = if end.client { self.bytes } else { end.rx.delivered };
        let n = due.saturating_sub(end.sent).min(s.send_space());
        if n > 0 {
            end.sent += s.send(n);
        }
    }

    fn closes(&self, end: &EndState, _: Instant, _: &dyn StreamSocket) -> bool {
        end.sent >= self.bytes
    }
}

#[cfg(test)]
mod tests {
    use core::ops::Range;

    use super::*;
    use crate::apps::{App, Kind};

    /// One direction of a connection: bytes written, read, and closed.
    #[derive(Default)]
    struct Pipe {
        written: u64,
        read: u64,
        closed: bool,
    }

    /// One end's socket over the two pipes of a connection.
    struct Sock<'a> {
        out: &'a mut Pipe,
        inp: &'a mut Pipe,
    }

    impl StreamSocket for Sock<'_> {
        fn send_space(&self) -> u64 {
            1000 - (self.out.written - self.out.read)
        }
        fn send(&mut self, n: u64) -> u64 {
            let n = n.min(self.send_space());
            self.out.written += n;
            n
        }
        fn readable(&self) -> u64 {
            self.inp.written - self.inp.read
        }
        fn recv(&mut self, max: u64) -> Range<u64> {
            let n = max.min(self.readable());
            self.inp.read += n;
            self.inp.read - n..self.inp.read
        }
        fn close(&mut self) {
            self.out.closed = true;
        }
        fn peer_closed(&self) -> bool {
            self.inp.closed && self.readable() == 0
        }
    }

    /// A scenario naming the fixture loads and checks like any other
    /// application, and its two ends complete the exchange over a socket.
    #[test]
    fn a_new_application_is_one_file_and_one_line() {
        let text = "name = \"echo\"\nduration = \"10s\"\n[topology]\nkind = \"parallel\"\npaths = 1\nrate = \"10Mbit\"\n[[flows]]\nfrom = \"client\"\nto = \"server\"\ntransport = \"tcp\"\napp = \"echo\"\nbytes = \"5KB\"\n";
        let sc = mplab_scenario::Scenario::from_str(text, "echo.toml").unwrap();
        let net = crate::plugins::resolve(&sc).unwrap();
        let kind = Kind::of(&net.flows[0].app);
        assert_eq!((kind.about().unwrap().name, kind.bounded()), ("echo", Some(5000)));
        let json = serde_json::to_string(&net.flows[0].app).unwrap();
        assert_eq!(json, r#"{"kind":"echo","bytes":5000}"#);

        let (mut up, mut down) = (Pipe::default(), Pipe::default());
        let mut c = App::new(kind.clone(), true, None);
        let mut s = App::new(kind, false, None);
        c.on_connected(Instant(0), &mut Sock { out: &mut up, inp: &mut down });
        s.on_connected(Instant(0), &mut Sock { out: &mut down, inp: &mut up });
        for t in 1..100 {
            s.pump(Instant(t), &mut Sock { out: &mut down, inp: &mut up });
            c.pump(Instant(t), &mut Sock { out: &mut up, inp: &mut down });
        }
        assert_eq!((c.sent, s.rx.delivered, s.sent, c.rx.delivered), (5000, 5000, 5000, 5000));
        assert!(c.completed_at.is_some() && c.rx.ok() && s.rx.ok());
        assert!(c.is_closed() && s.is_closed());

        let bad = sc.plugin_error(&Kind::of_table(&mplab_scenario::network::PluginTable { kind: "echo".into(), fields: toml::from_str("byte = 1").unwrap() }, "flows[0]").unwrap_err());
        assert!(bad.to_string().contains("flows[0].byte: does not apply to app = \"echo\" (it takes bytes)"), "{bad}");
    }
}
