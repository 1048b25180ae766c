//! `[[flows]]` as written: who talks to whom, over which transport, running
//! which application.

use std::fmt;
use std::net::Ipv4Addr;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::units::{Duration, Size};
use crate::plugins::fields::PluginTable;
use crate::plugins::transports::Transport;
use crate::vocab::StackProfile;

/// One `[[flows]]` table. The fields every flow has are typed here; the
/// rest belong to its application (`bytes`, `rate`, `packet_size`, ...)
/// and are kept as written in `app_fields`, for the application's registry
/// entry to read and check (crates/backend `apps` for the byte-stream
/// applications, [`crate::plugins::apps`] for the scenario's own kinds).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Defaults to `flow{index}`.
    pub name: Option<String>,
    /// The node that opens the connection (the iperf client).
    pub from: String,
    /// The node that listens.
    pub to: String,
    pub from_addr: Option<Ipv4Addr>,
    pub to_addr: Option<Ipv4Addr>,
    pub transport: Transport,
    /// The application's name; `bulk` when unset.
    pub app: Option<String>,
    /// The application's fields, as written.
    pub app_fields: toml::Table,
    pub start: Option<Duration>,
    /// The start moves later by a random time below this, drawn from the
    /// seed: runs with other seeds then differ even without loss (as ns-3
    /// users start applications at random times).
    pub start_jitter: Option<Duration>,
    pub stop: Option<Duration>,
    /// Listening port on `to`; assigned from 5001 up when unset.
    pub port: Option<u16>,
    // Per-flow overrides of [transport].
    pub cc: Option<String>,
    pub rcv_buf: Option<Size>,
    pub snd_buf: Option<Size>,
    pub path_manager: Option<String>,
    pub subflows: Option<u32>,
    pub scheduler: Option<String>,
    pub checksum: Option<bool>,
    /// Stack profile of both ends, over the hosts' (`[transport.mptcp]`).
    pub profile: Option<StackProfile>,
}

impl FlowSpec {
    /// The application's name.
    pub fn app_name(&self) -> &str {
        self.app.as_deref().unwrap_or("bulk")
    }

    /// It runs between two gateway routers rather than two hosts.
    pub fn between_gateways(&self) -> bool {
        matches!(self.app_name(), "tunnel" | "converter")
    }

    /// The application's table: its name as `kind`, and its fields.
    pub fn app_table(&self) -> PluginTable {
        PluginTable { kind: self.app_name().to_string(), fields: self.app_fields.clone() }
    }
}

/// Reads a flow table field by field, so that every typed field is parsed
/// (and its error located) by the file format itself, and any other field
/// is kept for the application.
impl<'de> Deserialize<'de> for FlowSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = FlowSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a flow table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<FlowSpec, A::Error> {
                let (mut from, mut to, mut transport) = (None, None, None);
                let mut f = FlowSpec {
                    name: None,
                    from: String::new(),
                    to: String::new(),
                    from_addr: None,
                    to_addr: None,
                    transport: Transport::MPTCP,
                    app: None,
                    app_fields: toml::Table::new(),
                    start: None,
                    start_jitter: None,
                    stop: None,
                    port: None,
                    cc: None,
                    rcv_buf: None,
                    snd_buf: None,
                    path_manager: None,
                    subflows: None,
                    scheduler: None,
                    checksum: None,
                    profile: None,
                };
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "name" => f.name = m.next_value()?,
                        "from" => from = Some(m.next_value()?),
                        "to" => to = Some(m.next_value()?),
                        "from_addr" => f.from_addr = m.next_value()?,
                        "to_addr" => f.to_addr = m.next_value()?,
                        "transport" => transport = Some(m.next_value()?),
                        "app" => f.app = m.next_value()?,
                        "start" => f.start = m.next_value()?,
                        "start_jitter" => f.start_jitter = m.next_value()?,
                        "stop" => f.stop = m.next_value()?,
                        "port" => f.port = m.next_value()?,
                        "cc" => f.cc = m.next_value()?,
                        "rcv_buf" => f.rcv_buf = m.next_value()?,
                        "snd_buf" => f.snd_buf = m.next_value()?,
                        "path_manager" => f.path_manager = m.next_value()?,
                        "subflows" => f.subflows = m.next_value()?,
                        "scheduler" => f.scheduler = m.next_value()?,
                        "checksum" => f.checksum = m.next_value()?,
                        "profile" => f.profile = m.next_value()?,
                        _ => {
                            let v: toml::Value = m.next_value()?;
                            f.app_fields.insert(key, v);
                        }
                    }
                }
                f.from = from.ok_or_else(|| de::Error::missing_field("from"))?;
                f.to = to.ok_or_else(|| de::Error::missing_field("to"))?;
                f.transport = transport.ok_or_else(|| de::Error::missing_field("transport"))?;
                Ok(f)
            }
        }
        d.deserialize_map(Visit)
    }
}
