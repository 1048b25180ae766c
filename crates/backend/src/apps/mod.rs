//! Applications (`app = ...` of a flow) over a byte stream: what iperf,
//! iperf3 -b, wget and a request/response client did in the seeds'
//! experiments, as small state machines over a stream socket. They never
//! see packets; the host stack calls them when the socket is connected,
//! writable, readable, or when their own timer fires. The same code runs on
//! every backend: over the simulator's and the userspace backend's stacks
//! and over a kernel socket.
//!
//! Each application is one file implementing [`Application`] (what it says
//! about itself, how it reads its fields from the flow, which end writes)
//! and [`StreamApp`] (its state machine on one end); a new one is that
//! file and its line in the `applications!` list below, which declares the
//! module. The datagram applications (`voip`, `game`) are a registry of
//! their own ([`crate::datagram`]); the gateways' programs (`tunnel`,
//! `converter`) are the scenario's own kinds, run by their drivers.
//!
//! Every receiver checks what it got: each chunk must start exactly where
//! the previous one ended (stream-offset continuity), and the host stack
//! flags any payload whose sender-side stream offset differs from where the
//! receiver placed it. A run therefore proves no byte was lost, duplicated
//! or misplaced.

mod end;
mod pattern;
mod receiver;

use core::fmt;
use core::ops::Range;

use mplab_scenario::network::{self, PluginTable, AppTable};
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};

pub use end::{App, EndState};
pub use pattern::{fill_pattern, pattern_byte, pattern_mismatch, Pattern};
pub use receiver::Receiver;

use mplab_proto::Instant;

/// What an application needs from a stream socket (TCP or MPTCP alike).
pub trait StreamSocket {
    /// Bytes the socket accepts right now (send buffer space).
    fn send_space(&self) -> u64;
    /// Queues `n` bytes of the stream; returns how many were accepted.
    fn send(&mut self, n: u64) -> u64;
    /// Contiguous bytes ready to be read.
    fn readable(&self) -> u64;
    /// Consumes up to `max` bytes; returns their stream offsets.
    fn recv(&mut self, max: u64) -> Range<u64>;
    /// Half-close after all queued data (FIN / DATA_FIN).
    fn close(&mut self);
    /// The peer closed its side and everything it sent was read.
    fn peer_closed(&self) -> bool;
}

/// Which end of a flow writes the stream (the other only acknowledges):
/// the writer is the end whose congestion control and scheduler shape the
/// transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sends {
    /// `from`, the end that connects.
    Client,
    /// `to`, the end that listens.
    Server,
    Both,
}

impl Sends {
    pub fn by(self, client: bool) -> bool {
        match self {
            Sends::Client => client,
            Sends::Server => !client,
            Sends::Both => true,
        }
    }
}

/// An application kind: what it says about itself and how a flow's fields
/// configure it. The value it builds is the state machine of one end
/// (each end starts from a copy).
pub trait Application: StreamApp + Clone + PartialEq + Sized {
    /// Its `app` name, the flow fields it takes, what it models, and what
    /// the kernel backend does with it.
    const ABOUT: About;
    const SENDS: Sends;
    /// Its results are latencies (request/response): the real-packet
    /// backends run its ends at a real-time priority, so that the
    /// machine's scheduling delays stay out of them.
    const TIMED: bool = false;

    /// Reads and checks its fields (every getter names a field it takes;
    /// `f.finish()` refuses the rest).
    fn from_fields(f: &mut Fields) -> Result<Self, PluginError>;

    /// Its parameters as network.json shows them, after `kind`.
    fn resolved(&self) -> Vec<(&'static str, Resolved)>;

    /// Bytes the transfer delivers in all, if it is bounded.
    fn bounded(&self) -> Option<u64> {
        None
    }

    /// Whether it finished its work, from what the receiving end read
    /// and the exchanges done.
    fn completed(&self, delivered: u64, _requests_done: u64) -> bool {
        self.bounded().is_some_and(|b| delivered >= b)
    }
}

/// One end's state machine. The end's common state ([`EndState`]: bytes
/// written and read, completion, stop time) is the runner's; each method
/// says what this application does with it.
pub trait StreamApp: fmt::Debug {
    /// Bytes this end writes in all, if bounded; `Some(0)`: it only reads.
    fn send_goal(&self, end: &EndState) -> Option<u64>;

    /// Bytes this end reads for its transfer to be complete, once known.
    fn recv_goal(&self, end: &EndState) -> Option<u64>;

    /// The connection is established.
    fn on_connected(&mut self, _end: &mut EndState, _now: Instant) {}

    /// It read `got` bytes (maybe none) and has not written yet.
    fn on_read(&mut self, _end: &mut EndState, _now: Instant, _got: u64) {}

    /// Writes what is due: by default as much as the goal and the socket
    /// allow, until stop.
    fn write(&mut self, end: &mut EndState, now: Instant, s: &mut dyn StreamSocket) {
        write_all(self.send_goal(end), end, now, s);
    }

    /// Whether this end closes its side now. By default once it wrote its
    /// goal or was stopped; an end that only reads closes after its peer,
    /// as an iperf server or a wget client does (and as Linux needs to keep
    /// accepting the peer's MP_JOINs).
    fn closes(&self, end: &EndState, now: Instant, s: &dyn StreamSocket) -> bool {
        match self.send_goal(end) {
            Some(0) => s.peer_closed(),
            goal => end.stopped(now) || goal.is_some_and(|g| end.sent >= g),
        }
    }

    /// Its own timer, for an end that still writes: by default the stop.
    fn timer(&self, end: &EndState) -> Option<Instant> {
        end.stop_at
    }
}

/// Writes as much as the goal and the socket allow, unless stopped.
fn write_all(goal: Option<u64>, end: &mut EndState, now: Instant, s: &mut dyn StreamSocket) {
    if !end.stopped(now) {
        let room = end.room(goal, s);
        if room > 0 {
            end.sent += s.send(room);
        }
    }
}

/// The end of a flow whose stream has no application of its own: the
/// flow's datagram application or the tunnel's gateways drive the socket;
/// this end only reads what arrives.
#[derive(Debug, Clone, PartialEq)]
pub struct Driven;

impl StreamApp for Driven {
    fn send_goal(&self, _: &EndState) -> Option<u64> {
        Some(0)
    }

    fn recv_goal(&self, _: &EndState) -> Option<u64> {
        None
    }
}

/// The same program on every backend: mplab's application over a kernel
/// socket, or over mplab's stack.
const EVERYWHERE: OnKernel = OnKernel::Runs("mplab's application over a kernel TCP/MPTCP socket");

/// A size the application needs, greater than 0.
fn need(f: &Fields, v: Option<mplab_scenario::Size>, field: &'static str) -> Result<u64, PluginError> {
    match v {
        Some(s) if s.bytes() > 0 => Ok(s.bytes()),
        Some(_) => Err(f.error_at(field, "must be greater than 0")),
        None => Err(f.missing(field)),
    }
}

/// `bytes` of a sender that may also run until stop.
fn positive_or_until_stop(f: &Fields, v: Option<mplab_scenario::Size>) -> Result<Option<u64>, PluginError> {
    match v {
        Some(s) if s.bytes() == 0 => Err(f.error_at("bytes", "must be greater than 0 (leave it out to send until stop)")),
        v => Ok(v.map(|s| s.bytes())),
    }
}

/// Declares each application's module, [`Kind`] (every application with
/// its state, and [`Driven`]) with its static dispatch, and the registry by
/// name ([`applications`], [`Kind::of`]).
macro_rules! applications {
    ($($(#[$attr:meta])* $module:ident :: $kind:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*

        /// The application of one end, with its state.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Kind {
            $($(#[$attr])* $kind($module::$kind),)*
            Driven(Driven),
        }

        impl Kind {
            /// The application `f`'s table names, its fields read and
            /// checked; `None` when no application has that name.
            fn from_fields(f: &mut Fields) -> Option<Result<Kind, PluginError>> {
                $($(#[$attr])* {
                    if f.kind() == <$module::$kind as Application>::ABOUT.name {
                        return Some(<$module::$kind as Application>::from_fields(f).map(Kind::$kind));
                    }
                })*
                None
            }

            /// What it says about itself; None for [`Driven`].
            pub fn about(&self) -> Option<About> {
                match self {
                    $($(#[$attr])* Kind::$kind(_) => Some(<$module::$kind as Application>::ABOUT),)*
                    Kind::Driven(_) => None,
                }
            }

            /// Which end writes the stream.
            pub fn sends(&self) -> Sends {
                match self {
                    $($(#[$attr])* Kind::$kind(_) => <$module::$kind as Application>::SENDS,)*
                    Kind::Driven(_) => Sends::Both,
                }
            }

            /// Its results are latencies ([`Application::TIMED`]).
            pub fn timed(&self) -> bool {
                match self {
                    $($(#[$attr])* Kind::$kind(_) => <$module::$kind as Application>::TIMED,)*
                    Kind::Driven(_) => false,
                }
            }

            fn resolved(&self) -> Vec<(&'static str, Resolved)> {
                match self {
                    $($(#[$attr])* Kind::$kind(a) => a.resolved(),)*
                    Kind::Driven(_) => Vec::new(),
                }
            }

            /// Bytes the transfer delivers in all, if bounded.
            pub fn bounded(&self) -> Option<u64> {
                match self {
                    $($(#[$attr])* Kind::$kind(a) => a.bounded(),)*
                    Kind::Driven(_) => None,
                }
            }

            /// Whether the application finished its work.
            pub fn completed(&self, delivered: u64, requests_done: u64) -> bool {
                match self {
                    $($(#[$attr])* Kind::$kind(a) => a.completed(delivered, requests_done),)*
                    Kind::Driven(_) => false,
                }
            }

            fn app(&self) -> &dyn StreamApp {
                match self {
                    $($(#[$attr])* Kind::$kind(a) => a,)*
                    Kind::Driven(a) => a,
                }
            }

            fn app_mut(&mut self) -> &mut dyn StreamApp {
                match self {
                    $($(#[$attr])* Kind::$kind(a) => a,)*
                    Kind::Driven(a) => a,
                }
            }
        }

        /// Every stream application, in the list's order (for `mplab
        /// plugins` and the unknown-name error).
        pub fn applications() -> Vec<About> {
            let mut v = Vec::new();
            $($(#[$attr])* v.push(<$module::$kind as Application>::ABOUT);)*
            v
        }
    };
}

applications! {
    bulk::Bulk,
    rate::Rate,
    download::Download,
    request::Request,
    #[cfg(test)]
    fixture_echo::Echo,
}

impl Kind {
    /// The stream application a flow's table names, checked: an unknown
    /// name or a bad field is an error at its field.
    pub fn of_table(table: &PluginTable, path: &str) -> Result<Kind, PluginError> {
        let mut f = Fields::new(table, path).keyed("app");
        Kind::from_fields(&mut f).unwrap_or_else(|| Err(unknown_app(table, path)))
    }

    /// The stream application of a flow: its own, or [`Driven`] for a
    /// flow whose application is one of the scenario's kinds (datagrams,
    /// gateways). The table was checked when the scenario was loaded
    /// ([`crate::plugins::check`]).
    pub fn of(app: &network::App) -> Kind {
        match app {
            network::App::Stream(t) => Kind::of_table(&t.table, &t.path).unwrap_or_else(|e| panic!("{e} (a network checked by mplab_backend::plugins::check has none)")),
            _ => Kind::Driven(Driven),
        }
    }

    /// Its parameters as network.json shows them, `kind` first.
    pub fn resolved_table(&self) -> Resolved {
        let name = self.about().map_or("driven", |a| a.name);
        Resolved::Map(std::iter::once(("kind".to_string(), Resolved::Str(name.into()))).chain(self.resolved().into_iter().map(|(k, v)| (k.to_string(), v))).collect())
    }
}

/// Checks a flow's stream application and records what it resolved to.
pub fn check(t: &mut AppTable) -> Result<(), PluginError> {
    t.resolved = Some(Kind::of_table(&t.table, &t.path)?.resolved_table());
    Ok(())
}

/// Checks every flow's stream application of a network built by code
/// (one loaded from a file was checked by [`crate::plugins::resolve`]), so
/// that a backend refuses a bad one before it runs anything.
pub fn check_flows(net: &network::Network) -> Result<(), PluginError> {
    for f in &net.flows {
        match &f.app {
            network::App::Stream(t) => drop(Kind::of_table(&t.table, &t.path)?),
            network::App::Datagram(t) => drop(crate::datagram::DatagramConfig::of(t)?),
            _ => {}
        }
    }
    Ok(())
}

/// Which end of a flow writes stream data: its stream application's, or
/// the scenario's own kinds' (datagram applications, gateways).
pub fn sends(app: &network::App, client: bool) -> bool {
    match app {
        network::App::Stream(_) => Kind::of(app).sends().by(client),
        // The client sends; a server that echoes sends too.
        network::App::Datagram(t) => client || crate::datagram::kind_of(&t.table.kind).is_some_and(|k| k.echoes),
        network::App::Tunnel { .. } | network::App::Converter { .. } => true,
    }
}

/// Whether the listening end (`to`) is the one that writes a flow's
/// stream, as in a download: the end whose sockets tell about the data.
pub fn server_sends(app: &network::App) -> bool {
    matches!(app, network::App::Stream(_)) && Kind::of(app).sends() == Sends::Server
}

/// The size of a `bulk` flow's transfer (`None` inside: until stop), for
/// the drivers that run no other application (SCTP on the real-packet
/// backends); `None` for any other application.
pub fn bulk_transfer(app: &network::App) -> Option<Option<u64>> {
    match app {
        network::App::Stream(_) => match Kind::of(app) {
            Kind::Bulk(b) => Some(b.bounded()),
            _ => None,
        },
        _ => None,
    }
}

/// The error for an `app` no application has: every name a flow may use,
/// the scenario's kinds with this registry's.
pub(crate) fn unknown_app(table: &PluginTable, path: &str) -> PluginError {
    let mut names: Vec<String> = applications().iter().chain(&crate::datagram::applications()).map(|a| format!("`{}`", a.name)).collect();
    names.extend(mplab_scenario::plugins::apps::REGISTRY.iter().map(|e| format!("`{}`", e.about.name)));
    PluginError::new(format!("{path}.app"), format!("unknown variant `{}`, expected one of {}", table.kind, names.join(", ")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A socket with an infinite pipe to itself: what is sent becomes readable.
    #[derive(Default)]
    pub(crate) struct Loop {
        pub queued: u64,
        pub read: u64,
        pub space: u64,
        pub closed: bool,
    }

    impl StreamSocket for Loop {
        fn send_space(&self) -> u64 {
            self.space
        }
        fn send(&mut self, n: u64) -> u64 {
            let n = n.min(self.space);
            self.queued += n;
            n
        }
        fn readable(&self) -> u64 {
            self.queued - self.read
        }
        fn recv(&mut self, max: u64) -> Range<u64> {
            let n = max.min(self.readable());
            let r = self.read..self.read + n;
            self.read += n;
            r
        }
        fn close(&mut self) {
            self.closed = true;
        }
        fn peer_closed(&self) -> bool {
            false
        }
    }

    /// One end of the application a flow's fields (`kind` = its `app`) give.
    pub(crate) fn app(fields: &str, client: bool) -> App {
        let table: PluginTable = toml::from_str(fields).unwrap();
        App::new(Kind::of_table(&table, "flows[0]").unwrap(), client, None)
    }

    #[test]
    fn bulk_sends_its_bytes_then_closes() {
        let mut s = Loop { space: 1000, ..Default::default() };
        let mut a = app("kind = \"bulk\"\nbytes = 2500", true);
        a.on_connected(Instant(0), &mut s);
        assert_eq!(a.sent, 1000);
        for _ in 0..3 {
            a.pump(Instant(1), &mut s);
        }
        assert_eq!(a.sent, 2500);
        assert!(s.closed);
        assert!(a.rx.ok());
    }

    #[test]
    fn a_bad_app_is_an_error_at_its_field() {
        let bad = |fields: &str| {
            let table: PluginTable = toml::from_str(fields).unwrap();
            Kind::of_table(&table, "flows[2]").unwrap_err().to_string()
        };
        assert!(bad("kind = \"bulkk\"").starts_with("flows[2].app: unknown variant `bulkk`, expected one of `bulk`, `rate`, `download`, `request`"), "{}", bad("kind = \"bulkk\""));
        assert_eq!(bad("kind = \"bulk\"\nrate = \"1Mbit\""), "flows[2].rate: does not apply to app = \"bulk\" (it takes bytes)");
        assert_eq!(bad("kind = \"rate\""), "flows[2]: missing field `rate` (app = \"rate\")");
        assert_eq!(bad("kind = \"download\"\nbytes = 0"), "flows[2].bytes: must be greater than 0");
        assert_eq!(bad("kind = \"request\"\nrequest_size = 10\nresponse_size = 10\ncount = 0"), "flows[2].count: must be at least 1 (leave it out to repeat until stop)");
    }

    #[test]
    fn each_application_says_which_end_writes() {
        let of = |fields: &str| Kind::of_table(&toml::from_str(fields).unwrap(), "f").unwrap().sends();
        assert_eq!(of("kind = \"bulk\""), Sends::Client);
        assert_eq!(of("kind = \"download\"\nbytes = 1"), Sends::Server);
        assert_eq!(of("kind = \"request\"\nrequest_size = 1\nresponse_size = 1"), Sends::Both);
    }
}
