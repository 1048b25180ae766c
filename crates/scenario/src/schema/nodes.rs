//! `[[nodes]]` as written, and the two ways a file names a place on them:
//! an endpoint (`"node"` or `"node:ifname"`) and an address (`"10.0.1.2/24"`).

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::vocab::NodeKind;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub kind: NodeKind,
    /// Which stack runs on this node when a backend can mix them
    /// (`"kernel"`, `"mplab"`); free text checked by the backend.
    #[serde(default)]
    pub stack: Option<String>,
}

/// `"node"` or `"node:ifname"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointRef {
    pub node: String,
    pub iface: Option<String>,
}

impl FromStr for EndpointRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (node, iface) = match s.split_once(':') {
            Some((n, i)) => (n, Some(i)),
            None => (s, None),
        };
        if node.is_empty() || iface.is_some_and(str::is_empty) {
            return Err(format!("invalid endpoint {s:?}: expected \"node\" or \"node:ifname\""));
        }
        Ok(EndpointRef { node: node.to_string(), iface: iface.map(str::to_string) })
    }
}

impl fmt::Display for EndpointRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.iface {
            Some(i) => write!(f, "{}:{i}", self.node),
            None => f.write_str(&self.node),
        }
    }
}

/// An IPv4 address with a prefix length: `"10.0.1.2/24"`. Without `/len`
/// the prefix is taken from the link's `subnet`, or /24.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    pub addr: Ipv4Addr,
    pub prefix: Option<u8>,
}

impl Cidr {
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Self {
        Cidr { addr, prefix: Some(prefix) }
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid address {s:?}: expected an IPv4 address like \"10.0.1.2/24\"");
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: Ipv4Addr = a.trim().parse().map_err(|_| bad())?;
        let prefix = match p {
            Some(p) => {
                let n: u8 = p.trim().parse().map_err(|_| bad())?;
                if n > 32 {
                    return Err(format!("invalid address {s:?}: prefix length must be at most 32"));
                }
                Some(n)
            }
            None => None,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix {
            Some(p) => write!(f, "{}/{p}", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// Deserialises any `FromStr<Err = String>` type from a TOML string.
macro_rules! string_deserialize {
    ($ty:ty, $expecting:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

string_deserialize!(EndpointRef, "a node name or \"node:ifname\"");
string_deserialize!(Cidr, "an IPv4 address like \"10.0.1.2/24\"");
