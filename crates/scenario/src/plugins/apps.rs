//! The applications (`app = ...` of a flow) this crate knows itself: the
//! gateways' programs (`tunnel`, `converter`), whose validated forms the
//! backends' drivers take ([`crate::network::App`]). Any other name is an
//! application of a crates/backend registry, read as the flow's transport
//! delivers: a byte-stream application (`mplab_backend::apps`: `bulk`,
//! `rate`, `download`, `request`, ...) or, over a transport of datagrams,
//! a datagram application (`mplab_backend::datagram`: `voip`, `game`);
//! the backend reads and checks the flow's fields when the scenario is
//! loaded for a run.

use super::about::{About, OnKernel};
use super::fields::{Fields, PluginError};
use crate::error::{diag, Diag};
use crate::network::{App, AppTable, TunnelMode};
use crate::plugins::transports::Transport;
use crate::schema::FlowSpec;

/// One application kind of this crate.
pub struct AppEntry {
    pub about: About,
    /// Reads and checks the flow's fields and builds the validated
    /// application.
    pub(crate) resolve: fn(&mut Fields, &FlowSpec) -> Result<App, PluginError>,
}

/// The applications of this crate by name; one entry each.
pub const REGISTRY: &[AppEntry] = &[
    AppEntry {
        about: About {
            name: "tunnel",
            params: &["mtu", "carries", "mode"],
            what: "a hybrid-access tunnel between two gateway routers (`from` the CPE, `to` the HAG): the IPv4 packets they forward between their other interfaces (UDP and TCP alike, as OpenVPN carries them) ride in this TCP, MPTCP or MPQUIC connection, each behind a 2-byte length, up to `mtu` (1500) bytes; `mode` = \"datagram\" sends each in UDP on every access link, and over MPQUIC \"quic-datagram\" puts UDP in QUIC DATAGRAM frames",
            kernel: OnKernel::Runs("a gateway program in each gateway's namespace: a TUN device fed by a policy rule, and a kernel MPTCP socket (MPQUIC: noq over a UDP socket)"),
        },
        resolve: tunnel,
    },
    AppEntry {
        about: About {
            name: "converter",
            params: &["carries", "refuse", "fast_open"],
            what: "RFC 8803 Transport Converters in two gateway routers (`from` the CPE, `to` the HAG): each TCP connection of `carries` (\"tcp\") the CPE forwards from its LAN side ends there and goes on to the HAG in a connection of this flow's transport, led by a Convert message naming the destination (in the SYN with `fast_open = true`, TCP Fast Open); the HAG connects to the server unless it lies in `refuse`",
            kernel: OnKernel::Runs("a converter program in each gateway's namespace: an nftables redirect to a TCP listener on the CPE, kernel MPTCP sockets with TCP Fast Open between the gateways"),
        },
        resolve: converter,
    },
];

/// The flow's application: one of this crate's, its fields read and
/// checked (a field that does not apply to it is refused, so `rate = ...`
/// on a tunnel flow isn't silently ignored), or a byte-stream or datagram
/// application kept for crates/backend's registries to check.
pub(crate) fn resolve(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let table = f.app_table();
    let udp = f.transport.delivery() == super::transports::Delivery::Datagrams;
    let Some(e) = REGISTRY.iter().find(|e| e.about.name == table.kind) else {
        let t = AppTable::new(table, path);
        return Ok(if udp { App::Datagram(t) } else { App::Stream(t) });
    };
    if udp {
        return diag(format!("{path}.app"), needs_a_stream(e.about.name));
    }
    let mut fields = Fields::new(&table, path).keyed("app");
    (e.resolve)(&mut fields, f).map_err(|e| Diag::new(e.path, e.message))
}

/// Why an application that needs a byte stream cannot run over UDP.
pub fn needs_a_stream(name: &str) -> String {
    format!("app = {name:?} needs a byte stream; over transport = \"udp\" use app = \"voip\" or \"game\"")
}

fn tunnel(f: &mut Fields, flow: &FlowSpec) -> Result<App, PluginError> {
    let mtu = f.get::<u32>("mtu")?;
    let carries = f.get::<String>("carries")?;
    let mode = f.get::<String>("mode")?;
    f.finish()?;
    let mtu = mtu.unwrap_or(1500);
    if !(68..=65_535).contains(&mtu) {
        return Err(f.error_at("mtu", format!("must be between 68 and 65535, got {mtu}")));
    }
    let mpquic = flow.transport == Transport::MPQUIC;
    if !flow.transport.over_tcp() && !mpquic {
        return Err(f.error_at("transport", "a tunnel rides a TCP, MPTCP or MPQUIC connection"));
    }
    let mode = match mode.as_deref() {
        None | Some("stream") => TunnelMode::Stream,
        Some("datagram") => TunnelMode::Datagram,
        Some("quic-datagram") if mpquic => TunnelMode::QuicDatagram,
        Some("quic-datagram") => return Err(f.error_at("mode", format!("\"quic-datagram\" puts UDP in QUIC DATAGRAM frames: it needs transport = \"mpquic\", not {:?}", flow.transport.name()))),
        Some(m) => return Err(f.error_at("mode", format!("{m:?}: expected \"stream\" (frames in the byte stream), \"datagram\" (UDP on every access link) or, over MPQUIC, \"quic-datagram\" (UDP in QUIC DATAGRAM frames, the rest in the stream)"))),
    };
    Ok(App::Tunnel { mtu, class: traffic_class(carries.as_deref().unwrap_or("all")).map_err(|m| PluginError::new(f.field_path("carries"), m))?, mode })
}

fn converter(f: &mut Fields, flow: &FlowSpec) -> Result<App, PluginError> {
    let carries = f.get::<String>("carries")?;
    let refuse_given = f.get::<Vec<String>>("refuse")?;
    let fast_open = f.get::<bool>("fast_open")?;
    f.finish()?;
    if !flow.transport.over_tcp() {
        return Err(f.error_at("transport", "converters talk over a TCP or MPTCP connection"));
    }
    let class = traffic_class(carries.as_deref().unwrap_or("tcp")).map_err(|m| PluginError::new(f.field_path("carries"), m))?;
    if class.proto != Some(6) {
        return Err(f.error_at("carries", format!("{:?}: a converter converts TCP connections: give \"tcp\" or \"tcp:PORT[-PORT]\"", class.name())));
    }
    let mut refuse = Vec::new();
    for (k, s) in refuse_given.iter().flatten().enumerate() {
        let p = s.parse::<std::net::Ipv4Addr>().map(crate::network::Prefix::host).or_else(|_| crate::routing::parse_prefix(s)).map_err(|why| PluginError::new(format!("{}[{k}]", f.field_path("refuse")), why))?;
        refuse.push(p);
    }
    Ok(App::Converter { class, refuse, fast_open: fast_open.unwrap_or(false) })
}

/// `all`, `udp`, `tcp`, optionally with `:PORT` or `:LOW-HIGH`.
fn traffic_class(s: &str) -> Result<crate::network::TrafficClass, String> {
    let bad = || format!("{s:?}: expected \"all\", \"udp\" or \"tcp\", optionally with a port or range (\"udp:5000-5099\")");
    let (proto, ports) = match s.split_once(':') {
        Some((p, r)) => (p, Some(r)),
        None => (s, None),
    };
    let proto = match proto {
        "all" => None,
        "tcp" => Some(6),
        "udp" => Some(17),
        _ => return Err(bad()),
    };
    let ports = match ports {
        None => None,
        Some(r) => {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            let (a, b): (u16, u16) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            if a == 0 || a > b {
                return Err(bad());
            }
            Some((a, b))
        }
    };
    Ok(crate::network::TrafficClass { proto, ports })
}
