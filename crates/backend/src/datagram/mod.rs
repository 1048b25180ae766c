//! Datagram applications (`app = ...` of a flow over a transport that
//! delivers datagrams, `transport = "udp"`): a sender on its own schedule
//! (a voice codec does not slow down), the receiver measuring what
//! arrived and when. Each kind is one file holding its [`DatagramKind`]
//! (what it says about itself, its defaults, whether the server echoes,
//! its playout deadline) and one line in the `datagram_applications!`
//! list below, which declares the module; every kind runs the same state
//! machine ([`DatagramApp`]) on every backend.

mod app;

pub use app::{build, DatagramApp, DatagramSummary, Header, HEADER};

use mplab_scenario::network::AppTable;
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::units::{Duration, Size};

/// One datagram application kind: its facts and defaults.
#[derive(Debug)]
pub struct DatagramKind {
    /// Its `app` name, the flow fields it takes, what it models, and what
    /// the kernel backend does with it.
    pub about: About,
    /// `packet_size` and `interval` when the flow leaves them out.
    pub packet_size: u64,
    pub interval_ms: u64,
    /// The server echoes every datagram: the client measures round trips.
    pub echoes: bool,
    /// The playout buffer the receiver gives each datagram beyond the
    /// first one's delay, ms: a later one counts as lost.
    pub playout_ms: f64,
}

/// The flow fields every datagram application takes.
pub const PARAMS: &[&str] = &["packet_size", "interval"];

/// How the kernel backend runs them.
pub const OVER_UDP: mplab_scenario::plugins::OnKernel = mplab_scenario::plugins::OnKernel::Runs("mplab's application over a kernel UDP socket");

/// Declares the kinds' modules (each holds `pub const KIND`) and lists
/// them in order.
macro_rules! datagram_applications {
    ($($(#[$attr:meta])* $module:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*
        /// Every datagram application, in the order `mplab plugins` and
        /// error messages list them.
        pub static KINDS: &[&DatagramKind] = &[$($(#[$attr])* &$module::KIND),*];
    };
}

datagram_applications! {
    voip,
    game,
    #[cfg(test)]
    fixture_ping,
}

/// The kind named `name`.
pub fn kind_of(name: &str) -> Option<&'static DatagramKind> {
    KINDS.iter().copied().find(|k| k.about.name == name)
}

/// What every datagram application is about, for `mplab plugins`.
pub fn applications() -> Vec<About> {
    KINDS.iter().map(|k| k.about).collect()
}

/// A datagram cannot be smaller than mplab's header (sequence number,
/// send time).
const SMALLEST: u64 = HEADER as u64;
/// The largest UDP payload over IPv4 (65535 - 20 - 8).
const LARGEST: u64 = 65_507;

/// A flow's datagram application, its fields read and checked.
#[derive(Debug, Clone, Copy)]
pub struct DatagramConfig {
    pub kind: &'static DatagramKind,
    pub packet_bytes: u32,
    pub interval_ns: u64,
}

impl DatagramConfig {
    /// Reads and checks the flow's application table (`path` names its
    /// fields in errors).
    pub fn of(t: &AppTable) -> Result<DatagramConfig, PluginError> {
        // An unknown name is refused by the caller, which lists every
        // application (`plugins::check`).
        let Some(kind) = kind_of(&t.table.kind) else { return Err(PluginError::new(format!("{}.app", t.path), format!("no datagram application `{}`", t.table.kind))) };
        let mut f = Fields::new(&t.table, &t.path).keyed("app");
        let packet_size = f.get::<Size>("packet_size")?;
        let interval = f.get::<Duration>("interval")?;
        f.finish()?;
        let size = packet_size.map_or(kind.packet_size, |s| s.bytes());
        if !(SMALLEST..=LARGEST).contains(&size) {
            return Err(f.error_at("packet_size", format!("must be {SMALLEST} B (its sequence number and send time) to {LARGEST} B (UDP over IPv4), got {size} B")));
        }
        let interval_ns = interval.map_or(kind.interval_ms * 1_000_000, |d| d.as_nanos());
        if !(1_000_000..=10_000_000_000).contains(&interval_ns) {
            return Err(f.error_at("interval", "must be 1ms to 10s"));
        }
        Ok(DatagramConfig { kind, packet_bytes: size as u32, interval_ns })
    }

    /// As network.json shows it.
    pub fn resolved(&self) -> Resolved {
        Resolved::map([("kind", self.kind.about.name.into()), ("packet_bytes", u64::from(self.packet_bytes).into()), ("interval_ns", self.interval_ns.into())])
    }
}

/// Checks a flow's datagram application and records what it resolved to.
pub fn check(t: &mut AppTable) -> Result<(), PluginError> {
    t.resolved = Some(DatagramConfig::of(t)?.resolved());
    Ok(())
}

/// A flow's datagram application from its fields as a scenario writes
/// them (`packet_size = "100B"`), checked, for tests.
#[cfg(test)]
pub(crate) fn datagram_app(name: &str, fields: &str) -> mplab_scenario::network::App {
    let fields: toml::Table = fields.parse().expect("fields in TOML");
    let mut t = AppTable::new(mplab_scenario::network::PluginTable { kind: name.into(), fields }, "flows[0]");
    check(&mut t).unwrap_or_else(|e| panic!("{e:?}"));
    mplab_scenario::network::App::Datagram(t)
}
