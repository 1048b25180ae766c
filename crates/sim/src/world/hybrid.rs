//! The hybrid-access state of a world: the tunnels (`app = "tunnel"`,
//! [`super::tunnel`]) and the RFC 8803 converters (`app = "converter"`,
//! [`super::converter`]) with what they keep per node and per flow. The
//! world's core types (its nodes and flows) carry none of it: the fabric,
//! the hosts and the flows' output ask here whether a node is a gateway
//! or a flow is a converter's connection.

use mplab_scenario::network::Network;

use super::converter::{self, Conversion, ConverterRt};
use super::flows::Leg;
use super::tunnel::{self, Gateway, TunnelRt};

pub(super) struct HybridAccess {
    pub(super) tunnels: Vec<TunnelRt>,
    /// Per node: the tunnel ends it holds (a gateway's, by traffic class).
    pub(super) gateways: Vec<Vec<Gateway>>,
    /// Per flow: the tunnel it carries, by index.
    pub(super) tunnel_of: Vec<Option<u32>>,
    pub(super) converters: Vec<ConverterRt>,
    /// Per node, the converter it is the CPE or the HAG of.
    pub(super) converter_at: Vec<Option<u32>>,
    pub(super) conversions: Vec<Conversion>,
    /// Per flow: a converter's connection (its conversion, which leg).
    pub(super) relay: Vec<Option<(u32, Leg)>>,
    /// Per flow: a scenario flow a converter took (its conversion).
    pub(super) relay_of_user: Vec<Option<u32>>,
    /// A converter is moving bytes: the legs it services do not pump again.
    pub(super) pumping: bool,
}

impl HybridAccess {
    pub(super) fn new(net: &Network) -> HybridAccess {
        let (tunnels, gateways) = tunnel::build(net);
        let (converters, converter_at) = converter::build(net);
        let mut tunnel_of = vec![None; net.flows.len()];
        for (i, t) in tunnels.iter().enumerate() {
            tunnel_of[t.flow()] = Some(i as u32);
        }
        let n = net.flows.len();
        HybridAccess { tunnels, gateways, tunnel_of, converters, converter_at, conversions: Vec::new(), relay: vec![None; n], relay_of_user: vec![None; n], pumping: false }
    }

    /// A flow added during the run (a converter's connection).
    pub(super) fn add_flow(&mut self, relay: Option<(u32, Leg)>) {
        self.tunnel_of.push(None);
        self.relay.push(relay);
        self.relay_of_user.push(None);
    }
}
