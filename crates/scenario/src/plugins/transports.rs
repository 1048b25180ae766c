//! Transports (`transport = ...` of a flow): what a flow's bytes or
//! datagrams travel in. Each entry states the facts the rest of mplab
//! decides by: the IP protocol its packets are carried in (which the hosts
//! demultiplex on), whether it offers a byte stream or datagrams (which
//! applications it can carry), and which per-flow fields apply to it. The
//! engines that run a transport are the backends' own (the simulator's
//! `transport` registry in crates/sim, the real-packet backends' flow
//! drivers in crates/emu); a flow names its transport by [`Transport`],
//! a handle on its entry here.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::about::{About, OnKernel};
use crate::error::{diag, Diag};

/// The IP protocol a transport's packets are carried in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// TCP segments (IP protocol 6): TCP, and MPTCP's subflows.
    Tcp,
    /// UDP datagrams (17): plain UDP, and QUIC's packets.
    Udp,
    /// SCTP packets (132).
    Sctp,
}

/// What a transport offers the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A reliable, ordered byte stream each way.
    Stream,
    /// Datagrams, each delivered whole or not at all.
    Datagrams,
}

/// One transport.
#[derive(Debug)]
pub struct TransportEntry {
    /// `params`: the per-flow fields that apply to it (of [`FLOW_FIELDS`]).
    pub about: About,
    /// Other names a scenario may use for it.
    pub aliases: &'static [&'static str],
    pub carrier: Carrier,
    pub delivery: Delivery,
    /// Why the stream fields (`cc`, `rcv_buf`, `snd_buf`) do not apply to
    /// it, when it has its own answer to what they set.
    pub own_control: Option<&'static str>,
    /// The scenario table holding its transport-wide settings, where a
    /// user looking for a per-flow knob it does not take should look.
    pub settings: Option<&'static str>,
}

/// The per-flow fields whose meaning depends on the transport, in the
/// order a flow's fields are checked.
pub const FLOW_FIELDS: &[&str] = &["cc", "rcv_buf", "snd_buf", "path_manager", "subflows", "scheduler", "checksum", "profile"];

const STREAM: &[&str] = &["cc", "rcv_buf", "snd_buf"];

pub static MPTCP: TransportEntry = TransportEntry {
    about: About {
        name: "mptcp",
        params: &["cc", "rcv_buf", "snd_buf", "path_manager", "subflows", "scheduler", "checksum", "profile"],
        what: "Multipath TCP (RFC 8684): one byte stream over subflows on several paths",
        kernel: OnKernel::Runs("a kernel MPTCP socket (IPPROTO_MPTCP); mplab's stack on the userspace backend"),
    },
    aliases: &[],
    carrier: Carrier::Tcp,
    delivery: Delivery::Stream,
    own_control: None,
    settings: None,
};

pub static TCP: TransportEntry = TransportEntry {
    about: About {
        name: "tcp",
        params: &["cc", "rcv_buf", "snd_buf", "profile"],
        what: "TCP (RFC 9293): one byte stream over one path",
        kernel: OnKernel::Runs("a kernel TCP socket; mplab's stack on the userspace backend"),
    },
    aliases: &[],
    carrier: Carrier::Tcp,
    delivery: Delivery::Stream,
    own_control: None,
    settings: None,
};

pub static SCTP: TransportEntry = TransportEntry {
    about: About {
        name: "sctp",
        // Its congestion control is RFC 9260's own (per destination).
        params: &["rcv_buf", "snd_buf"],
        what: "SCTP (RFC 9260): multihomed, new data to the primary destination",
        kernel: OnKernel::Runs("usrsctp over the hosts' interfaces (this kernel has no SCTP)"),
    },
    aliases: &[],
    carrier: Carrier::Sctp,
    delivery: Delivery::Stream,
    own_control: None,
    settings: Some("[transport.sctp]"),
};

pub static CMT_SCTP: TransportEntry = TransportEntry {
    about: About {
        name: "cmt-sctp",
        params: &["rcv_buf", "snd_buf"],
        what: "SCTP with Concurrent Multipath Transfer over every destination",
        kernel: OnKernel::Runs("usrsctp over the hosts' interfaces (this kernel has no SCTP)"),
    },
    aliases: &["cmt_sctp"],
    carrier: Carrier::Sctp,
    delivery: Delivery::Stream,
    own_control: None,
    settings: Some("[transport.sctp]"),
};

pub static UDP: TransportEntry = TransportEntry {
    about: About {
        name: "udp",
        params: &[],
        what: "UDP datagrams (RFC 768) for the real-time applications: no connection, no retransmission, no congestion control",
        kernel: OnKernel::Runs("a kernel UDP socket"),
    },
    aliases: &[],
    carrier: Carrier::Udp,
    delivery: Delivery::Datagrams,
    own_control: Some("no congestion control, no buffers"),
    settings: None,
};

pub static QUIC: TransportEntry = TransportEntry {
    about: About {
        name: "quic",
        params: &[],
        what: "QUIC (RFC 9000) over UDP, quinn's stack: a byte stream each way, QUIC's own congestion control and loss recovery",
        kernel: OnKernel::Runs("quinn over kernel UDP sockets"),
    },
    aliases: &[],
    carrier: Carrier::Udp,
    delivery: Delivery::Stream,
    own_control: Some("quinn's own congestion control and flow control"),
    settings: None,
};

pub static MPQUIC: TransportEntry = TransportEntry {
    about: About {
        name: "mpquic",
        // Paths are opened as the scenario's path manager opens MPTCP's
        // subflows ([transport.mptcp] path_manager, endpoints, limits);
        // `rcv_buf`/`snd_buf` are its flow-control and send windows.
        params: &["cc", "rcv_buf", "snd_buf", "path_manager", "subflows"],
        what: "Multipath QUIC (RFC 10069) over UDP, noq's stack: a byte stream each way over paths the path manager opens, per-path congestion control",
        kernel: OnKernel::Runs("noq over kernel UDP sockets, one per local address"),
    },
    aliases: &["multipath-quic"],
    carrier: Carrier::Udp,
    delivery: Delivery::Stream,
    own_control: None,
    settings: None,
};

/// The bundled transports by name; one line each.
pub static REGISTRY: &[&TransportEntry] = &[&MPTCP, &TCP, &SCTP, &CMT_SCTP, &UDP, &QUIC, &MPQUIC];

/// Transports plugged in from another crate: the file that implements
/// one (a backend's engine) adds its facts here itself, so that scenario
/// files may name it, with
/// `#[linkme::distributed_slice(mplab_scenario::plugins::transports::PLUGGED_FACTS)]`
/// on a `static` holding its `&TransportEntry`.
#[linkme::distributed_slice]
pub static PLUGGED_FACTS: [&'static TransportEntry];

/// Every transport: the bundled ones in their order, then the plugged.
pub fn entries() -> impl Iterator<Item = &'static TransportEntry> {
    REGISTRY.iter().copied().chain(PLUGGED_FACTS.iter().copied())
}

/// A flow's transport: a handle on its registry entry, written in files
/// and in network.json by its name.
#[derive(Clone, Copy)]
pub struct Transport(&'static TransportEntry);

impl Transport {
    pub const TCP: Transport = Transport(&TCP);
    pub const MPTCP: Transport = Transport(&MPTCP);
    pub const SCTP: Transport = Transport(&SCTP);
    pub const CMT_SCTP: Transport = Transport(&CMT_SCTP);
    pub const UDP: Transport = Transport(&UDP);
    pub const QUIC: Transport = Transport(&QUIC);
    pub const MPQUIC: Transport = Transport(&MPQUIC);

    /// The transport a scenario names `name` (or one of its aliases).
    pub fn from_name(name: &str) -> Option<Transport> {
        entries().find(|e| e.about.name == name || e.aliases.contains(&name)).map(Transport)
    }

    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        self.0.about.name
    }

    pub fn entry(self) -> &'static TransportEntry {
        self.0
    }

    pub fn carrier(self) -> Carrier {
        self.0.carrier
    }

    pub fn delivery(self) -> Delivery {
        self.0.delivery
    }

    /// SCTP or CMT-SCTP: an association.
    pub fn is_sctp(self) -> bool {
        self.0.carrier == Carrier::Sctp
    }

    /// Its packets are TCP segments (TCP, MPTCP's subflows).
    pub fn over_tcp(self) -> bool {
        self.0.carrier == Carrier::Tcp
    }

    /// Its packets are UDP datagrams (UDP itself, QUIC).
    pub fn over_udp(self) -> bool {
        self.0.carrier == Carrier::Udp
    }

    /// Whether the per-flow `field` (one of [`FLOW_FIELDS`]) applies.
    pub fn takes(self, field: &str) -> bool {
        self.0.about.params.contains(&field)
    }

    /// Refuses the first of the flow's set fields (`given`, in
    /// [`FLOW_FIELDS`] order) that does not apply to this transport.
    pub(crate) fn check_fields(self, given: &[(&str, bool)], path: &str) -> Result<(), Diag> {
        for &(field, set) in given {
            if !set || self.takes(field) {
                continue;
            }
            if let (Some(why), true) = (self.0.own_control, STREAM.contains(&field)) {
                return diag(format!("{path}.{field}"), format!("does not apply to transport = {:?} ({why})", self.name()));
            }
            if let Some(table) = self.0.settings {
                return diag(format!("{path}.{field}"), format!("does not apply to transport = {:?} (see {table})", self.name()));
            }
            let takers: Vec<String> = entries().filter(|e| e.about.params.contains(&field)).map(|e| format!("{:?}", e.about.name)).collect();
            return diag(format!("{path}.{field}"), format!("only applies to transport = {}", takers.join(" or ")));
        }
        Ok(())
    }
}

impl PartialEq for Transport {
    fn eq(&self, other: &Transport) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Transport {}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Transport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Transport {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Transport, D::Error> {
        let name = String::deserialize(d)?;
        Transport::from_name(&name).ok_or_else(|| {
            let names: Vec<String> = entries().map(|e| format!("`{}`", e.about.name)).collect();
            serde::de::Error::custom(format!("unknown transport `{name}`, expected one of {}", names.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_find_their_entry() {
        for e in entries() {
            assert_eq!(Transport::from_name(e.about.name).map(Transport::name), Some(e.about.name));
            for a in e.aliases {
                assert_eq!(Transport::from_name(a).map(Transport::name), Some(e.about.name));
            }
            assert!(e.about.params.iter().all(|p| FLOW_FIELDS.contains(p)), "{}: a field no flow has", e.about.name);
        }
        assert_eq!(Transport::from_name("cmt_sctp"), Some(Transport::CMT_SCTP));
        assert_eq!(Transport::from_name("tcpx"), None);
    }

    #[test]
    fn a_field_of_another_transport_names_who_takes_it() {
        let e = Transport::UDP.check_fields(&[("cc", true)], "flows[0]").unwrap_err();
        assert_eq!(e.message, "does not apply to transport = \"udp\" (no congestion control, no buffers)");
        let e = Transport::SCTP.check_fields(&[("rcv_buf", true), ("profile", true)], "flows[0]").unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("flows[0].profile", "does not apply to transport = \"sctp\" (see [transport.sctp])"));
        let e = Transport::TCP.check_fields(&[("profile", true), ("scheduler", true)], "flows[0]").unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("flows[0].scheduler", "only applies to transport = \"mptcp\""));
        assert!(Transport::MPTCP.check_fields(&FLOW_FIELDS.iter().map(|f| (*f, true)).collect::<Vec<_>>(), "f").is_ok());
    }
}
