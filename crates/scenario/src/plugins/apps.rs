//! Applications (`app = ...` of a flow): what runs on the two ends of a
//! connection. The state machines live in crates/backend (`apps`), shared
//! by every backend; this registry checks a flow's fields.

use super::about::{only_its_fields, About, OnKernel};
use crate::error::{diag, Diag};
use crate::network::App;
use crate::schema::FlowSpec;
use crate::units::Size;

/// One application kind.
pub struct AppEntry {
    pub about: About,
    /// Checks the flow's fields and builds the validated application.
    pub(crate) resolve: fn(&FlowSpec, &str) -> Result<App, Diag>,
    /// It sends datagrams (`transport = "udp"`), not a byte stream.
    pub datagram: bool,
}

/// The same program on every backend: mplab's application over a kernel
/// socket, or over mplab's stack.
const EVERYWHERE: OnKernel = OnKernel::Runs("mplab's application over a kernel TCP/MPTCP socket");
/// The datagram applications likewise, over a kernel UDP socket.
const OVER_UDP: OnKernel = OnKernel::Runs("mplab's application over a kernel UDP socket");

/// The applications by name; one line each.
pub const REGISTRY: &[AppEntry] = &[
    AppEntry { about: About { name: "bulk", params: &["bytes"], what: "send as fast as the transport allows, `bytes` or until `stop` (iperf)", kernel: EVERYWHERE }, resolve: bulk, datagram: false },
    AppEntry { about: About { name: "rate", params: &["bytes", "rate"], what: "send at `rate` at the application level (iperf3 -b)", kernel: EVERYWHERE }, resolve: rate, datagram: false },
    AppEntry { about: About { name: "download", params: &["bytes"], what: "`to` sends `bytes` back to `from`; the result is the completion time (wget)", kernel: EVERYWHERE }, resolve: download, datagram: false },
    AppEntry {
        about: About { name: "request", params: &["request_size", "response_size", "count", "interval"], what: "`count` request/response exchanges, one every `interval`; the results are their latencies", kernel: EVERYWHERE },
        resolve: request,
        datagram: false,
    },
    AppEntry {
        about: About { name: "voip", params: &["packet_size", "interval"], what: "a voice call over UDP: one `packet_size` datagram (160 B) every `interval` (20 ms); the result is its loss, delay, jitter, longest interruption and MOS", kernel: OVER_UDP },
        resolve: voip,
        datagram: true,
    },
    AppEntry {
        about: About { name: "game", params: &["packet_size", "interval"], what: "a game's updates over UDP: one `packet_size` datagram (64 B) every `interval` (30 ms), each echoed; the results are its round-trip latency percentiles and loss", kernel: OVER_UDP },
        resolve: game,
        datagram: true,
    },
    AppEntry {
        about: About {
            name: "tunnel",
            params: &["mtu", "carries", "mode"],
            what: "a hybrid-access tunnel between two gateway routers (`from` the CPE, `to` the HAG): the IPv4 packets they forward between their other interfaces (UDP and TCP alike, as OpenVPN carries them) ride in this TCP or MPTCP connection, each behind a 2-byte length, up to `mtu` (1500) bytes",
            kernel: OnKernel::Runs("a gateway program in each gateway's namespace: a TUN device fed by a policy rule, and a kernel MPTCP socket"),
        },
        resolve: tunnel,
        datagram: false,
    },
    AppEntry {
        about: About {
            name: "converter",
            params: &["carries", "refuse", "fast_open"],
            what: "RFC 8803 Transport Converters in two gateway routers (`from` the CPE, `to` the HAG): each TCP connection of `carries` (\"tcp\") the CPE forwards from its LAN side ends there and goes on to the HAG in a connection of this flow's transport, led by a Convert message naming the destination (in the SYN with `fast_open = true`, TCP Fast Open); the HAG connects to the server unless it lies in `refuse`",
            kernel: OnKernel::Runs("a converter program in each gateway's namespace: an nftables redirect to a TCP listener on the CPE, kernel MPTCP sockets with TCP Fast Open between the gateways"),
        },
        resolve: converter,
        datagram: false,
    },
];

/// The flow's application, with the fields that don't apply to it refused
/// so `rate = ...` on a bulk flow isn't silently ignored.
pub(crate) fn resolve(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let name = f.app.name();
    let e = REGISTRY.iter().find(|e| e.about.name == name).expect("every schema AppKind has a registry entry");
    let given = [
        ("bytes", f.bytes.is_some()),
        ("rate", f.rate.is_some()),
        ("request_size", f.request_size.is_some()),
        ("response_size", f.response_size.is_some()),
        ("count", f.count.is_some()),
        ("interval", f.interval.is_some()),
        ("packet_size", f.packet_size.is_some()),
        ("mtu", f.mtu.is_some()),
        ("carries", f.carries.is_some()),
        ("mode", f.mode.is_some()),
        ("refuse", f.refuse.is_some()),
        ("fast_open", f.fast_open.is_some()),
    ];
    only_its_fields(&e.about, &given, path, "app")?;
    let udp = f.transport.delivery() == super::transports::Delivery::Datagrams;
    if e.datagram && !udp {
        return diag(format!("{path}.transport"), format!("app = {name:?} sends datagrams: give transport = \"udp\""));
    }
    if udp && !e.datagram {
        return diag(format!("{path}.app"), format!("app = {name:?} needs a byte stream; over transport = \"udp\" use app = \"voip\" or \"game\""));
    }
    if f.bytes.is_some_and(|b| b.bytes() == 0) {
        return diag(format!("{path}.bytes"), "must be greater than 0 (leave it out to send until stop)");
    }
    (e.resolve)(f, path)
}

/// A size the application needs, greater than 0.
fn need(f: &FlowSpec, v: Option<Size>, path: &str, field: &str) -> Result<u64, Diag> {
    match v {
        Some(s) if s.bytes() > 0 => Ok(s.bytes()),
        Some(_) => diag(format!("{path}.{field}"), "must be greater than 0"),
        None => diag(path, format!("app = {:?} needs `{field}`", f.app.name())),
    }
}

fn bulk(f: &FlowSpec, _: &str) -> Result<App, Diag> {
    Ok(App::Bulk { bytes: f.bytes.map(|b| b.bytes()) })
}

fn rate(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let rate = f.rate.ok_or_else(|| Diag::new(path, "app = \"rate\" needs `rate`"))?;
    if rate.bps() == 0 {
        return diag(format!("{path}.rate"), "must be greater than 0");
    }
    Ok(App::Rate { rate_bps: rate.bps(), bytes: f.bytes.map(|b| b.bytes()) })
}

fn download(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    Ok(App::Download { bytes: need(f, f.bytes, path, "bytes")? })
}

fn request(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    if f.count == Some(0) {
        return diag(format!("{path}.count"), "must be at least 1 (leave it out to repeat until stop)");
    }
    Ok(App::Request {
        request_bytes: need(f, f.request_size, path, "request_size")?,
        response_bytes: need(f, f.response_size, path, "response_size")?,
        count: f.count,
        interval_ns: f.interval.unwrap_or_default().as_nanos(),
    })
}

/// Header of mplab's datagram applications (sequence number, send time):
/// a datagram cannot be smaller.
pub const DATAGRAM_HEADER: u64 = 20;
/// The largest UDP payload over IPv4 (65535 - 20 - 8).
const MAX_DATAGRAM: u64 = 65_507;

/// `packet_size` and `interval` of a datagram application, with defaults.
fn datagram_fields(f: &FlowSpec, path: &str, size: u64, interval_ms: u64) -> Result<(u32, u64), Diag> {
    let size = f.packet_size.map_or(size, |s| s.bytes());
    if !(DATAGRAM_HEADER..=MAX_DATAGRAM).contains(&size) {
        return diag(format!("{path}.packet_size"), format!("must be {DATAGRAM_HEADER} B (its sequence number and send time) to {MAX_DATAGRAM} B (UDP over IPv4), got {size} B"));
    }
    let interval = f.interval.map_or(interval_ms * 1_000_000, |d| d.as_nanos());
    if !(1_000_000..=10_000_000_000).contains(&interval) {
        return diag(format!("{path}.interval"), "must be 1ms to 10s");
    }
    Ok((size as u32, interval))
}

fn voip(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let (packet_bytes, interval_ns) = datagram_fields(f, path, 160, 20)?;
    Ok(App::Voip { packet_bytes, interval_ns })
}

fn game(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let (packet_bytes, interval_ns) = datagram_fields(f, path, 64, 30)?;
    Ok(App::Game { packet_bytes, interval_ns })
}

fn tunnel(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let mtu = f.mtu.unwrap_or(1500);
    if !(68..=65_535).contains(&mtu) {
        return diag(format!("{path}.mtu"), format!("must be between 68 and 65535, got {mtu}"));
    }
    if !f.transport.over_tcp() {
        return diag(format!("{path}.transport"), "a tunnel rides a TCP or MPTCP connection");
    }
    let datagram = match f.mode.as_deref() {
        None | Some("stream") => false,
        Some("datagram") => true,
        Some(m) => return diag(format!("{path}.mode"), format!("{m:?}: expected \"stream\" (frames in the byte stream) or \"datagram\" (UDP on every access link)")),
    };
    Ok(App::Tunnel { mtu, class: traffic_class(f.carries.as_deref().unwrap_or("all"), &format!("{path}.carries"))?, datagram })
}

fn converter(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    if !f.transport.over_tcp() {
        return diag(format!("{path}.transport"), "converters talk over a TCP or MPTCP connection");
    }
    let class = traffic_class(f.carries.as_deref().unwrap_or("tcp"), &format!("{path}.carries"))?;
    if class.proto != Some(6) {
        return diag(format!("{path}.carries"), format!("{:?}: a converter converts TCP connections: give \"tcp\" or \"tcp:PORT[-PORT]\"", class.name()));
    }
    let mut refuse = Vec::new();
    for (k, s) in f.refuse.iter().flatten().enumerate() {
        let p = s.parse::<std::net::Ipv4Addr>().map(crate::network::Prefix::host).or_else(|_| crate::routing::parse_prefix(s)).map_err(|why| Diag::new(format!("{path}.refuse[{k}]"), why))?;
        refuse.push(p);
    }
    Ok(App::Converter { class, refuse, fast_open: f.fast_open.unwrap_or(false) })
}

/// `all`, `udp`, `tcp`, optionally with `:PORT` or `:LOW-HIGH`.
fn traffic_class(s: &str, path: &str) -> Result<crate::network::TrafficClass, Diag> {
    let bad = || Diag::new(path, format!("{s:?}: expected \"all\", \"udp\" or \"tcp\", optionally with a port or range (\"udp:5000-5099\")"));
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
