//! The scenario texts the root tests and the userspace benchmark build
//! their runs from (the benchmark includes this file by path).

#![allow(dead_code)]

/// Two direct paths of `rate` and one-way `delay` (none: no delay) with
/// `queue` packets of drop-tail queue between `client` and `server`, each
/// with its stack (`"mplab"` or `"kernel"`); `extra` adds transport
/// settings, flows and probes.
#[allow(clippy::too_many_arguments)]
pub fn two_paths_with(name: &str, duration: &str, client: &str, server: &str, rate: &str, delay: Option<&str>, queue: u32, extra: &str) -> String {
    let delay = delay.map(|d| format!("delay = \"{d}\"\n")).unwrap_or_default();
    format!(
        r#"
name = "{name}"
duration = "{duration}"

[[nodes]]
name = "client"
stack = "{client}"
[[nodes]]
name = "server"
stack = "{server}"

[[links]]
name = "p0"
a = "client:eth0"
b = "server:eth0"
rate = "{rate}"
{delay}queue = {{ kind = "droptail", packets = {queue} }}
a_addr = "10.9.0.1/24"
b_addr = "10.9.0.2/24"

[[links]]
name = "p1"
a = "client:eth1"
b = "server:eth1"
rate = "{rate}"
{delay}queue = {{ kind = "droptail", packets = {queue} }}
a_addr = "10.9.1.1/24"
b_addr = "10.9.1.2/24"

{extra}
"#
    )
}

/// Two direct 10 Mbit/s, 10 ms paths between `client` and `server`, each
/// with its stack; probes every 250 ms; fullmesh unless `extra` says otherwise.
pub fn two_paths(duration: &str, client: &str, server: &str, extra: &str) -> String {
    two_paths_with("us", duration, client, server, "10Mbit", Some("10ms"), 40, &format!("[probes]\ninterval = \"250ms\"\n{extra}"))
}

/// `client` with two 10 Mbit/s, 10 ms uplinks to a router, and `server`
/// behind it on 100 Mbit/s: every subflow's replies come back on the
/// interface it left from (device-bound kernel subflows need that).
pub fn via_router(duration: &str, client: &str, server: &str, extra: &str) -> String {
    format!(
        r#"
name = "usr"
duration = "{duration}"

[[nodes]]
name = "client"
stack = "{client}"
[[nodes]]
name = "r"
kind = "router"
[[nodes]]
name = "server"
stack = "{server}"

[[links]]
name = "p0"
a = "client:eth0"
b = "r"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}
a_addr = "10.9.0.1/24"
b_addr = "10.9.0.2/24"

[[links]]
name = "p1"
a = "client:eth1"
b = "r"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 40 }}
a_addr = "10.9.1.1/24"
b_addr = "10.9.1.2/24"

[[links]]
name = "lan"
a = "r"
b = "server:eth0"
rate = "100Mbit"
a_addr = "10.9.2.1/24"
b_addr = "10.9.2.2/24"

[probes]
interval = "250ms"
{extra}
"#
    )
}

/// Seed 000's first lab: a client with two 10 Mbit/s uplinks (10 ms) via
/// two gateways and a firewall to a 100 Mbit/s server; MPTCP fullmesh.
pub fn lab1(duration: &str, extra: &str) -> String {
    format!(
        r#"
name = "lab1"
duration = "{duration}"

[[nodes]]
name = "client"
[[nodes]]
name = "gw1"
kind = "router"
[[nodes]]
name = "gw2"
kind = "router"
[[nodes]]
name = "fw"
kind = "router"
[[nodes]]
name = "server"

[[links]]
name = "wan1"
a = "client:eth0"
b = "gw1"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 100 }}
a_addr = "10.0.220.2/24"
b_addr = "10.0.220.1/24"

[[links]]
name = "wan2"
a = "client:eth1"
b = "gw2"
rate = "10Mbit"
delay = "10ms"
queue = {{ kind = "droptail", packets = 100 }}
a_addr = "10.0.221.2/24"
b_addr = "10.0.221.1/24"

[[links]]
a = "gw1"
b = "fw"
rate = "1Gbit"

[[links]]
a = "gw2"
b = "fw"
rate = "1Gbit"

[[links]]
name = "lan"
a = "fw"
b = "server"
rate = "100Mbit"
a_addr = "10.0.222.1/24"
b_addr = "10.0.222.2/24"

[transport.mptcp]
path_manager = "fullmesh"

[probes]
interval = "250ms"
{extra}
"#
    )
}

/// A phone with Wi-Fi (20 Mbit/s, 5 ms) and LTE (10 Mbit/s down, 5 up,
/// 30 ms), a server 10-14 ms behind each; `mptcp` is the
/// `[transport.mptcp]` table and `events` the events. The connection
/// starts on LTE: Linux 6.18 does not end the first subflow when the
/// endpoint of its address is deleted (docs/mobile.md), so the address
/// that comes and goes is a joined one here.
pub fn phone(duration: &str, mptcp: &str, events: &str) -> String {
    format!(
        r#"
name = "kernel-mobility"
duration = "{duration}"

[[nodes]]
name = "phone"
[[nodes]]
name = "ap"
kind = "router"
[[nodes]]
name = "enb"
kind = "router"
[[nodes]]
name = "internet"
kind = "router"
[[nodes]]
name = "server"

[[links]]
name = "wifi"
a = "phone:wlan0"
b = "ap"
a_addr = "192.168.1.10/24"
b_addr = "192.168.1.1/24"
rate = "20Mbit"
delay = "5ms"
queue = {{ kind = "droptail", packets = 100 }}

[[links]]
name = "lte"
a = "phone:rmnet0"
b = "enb"
a_addr = "10.64.0.10/24"
b_addr = "10.64.0.1/24"
delay = "30ms"
queue = {{ kind = "droptail", packets = 300 }}
[links.ab]
rate = "5Mbit"
[links.ba]
rate = "10Mbit"

[[links]]
a = "ap"
b = "internet"
rate = "1Gbit"
delay = "5ms"

[[links]]
a = "enb"
b = "internet"
rate = "1Gbit"
delay = "10ms"

[[links]]
a = "internet"
b = "server"
rate = "1Gbit"
delay = "2ms"

{mptcp}

[[flows]]
name = "dl"
from = "phone"
to = "server"
from_addr = "10.64.0.10"
transport = "mptcp"
app = "download"
bytes = "1GB"

{events}

[probes]
interval = "100ms"
"#
    )
}

/// The phone's MPTCP set-up for a handover: the connection starts on
/// LTE, marked backup (MP_PRIO), and Wi-Fi joins.
pub const PHONE_BACKUP_LTE: &str = r#"[transport.mptcp]
path_manager = "endpoints"

[[transport.mptcp.endpoints]]
node = "phone"
iface = "rmnet0"
flags = ["subflow", "backup"]

[[transport.mptcp.endpoints]]
node = "phone"
iface = "wlan0"
flags = ["subflow"]"#;

/// At 5 s LTE turns regular and Wi-Fi backup (MP_PRIO both ways), and
/// Wi-Fi goes at 6.5 s.
pub const MAKE_BEFORE_BREAK: &str = r#"
[[events]]
at = "5s"
node = "phone"
iface = "wlan0"
action = "handover"
to = "rmnet0"
mode = "make_before_break"
overlap = "1500ms"
"#;
