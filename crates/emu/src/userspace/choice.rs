//! Which nodes run mplab's stack under the userspace backend, and which
//! gateway flows end in it. The backend's checks, the run's plan and the
//! TUN set-up all read this; it reads only the scenario.

use mplab_scenario::network::{App, Network, NodeKind};

/// Which nodes run mplab's stack under the userspace backend: every host
/// whose `stack` is unset or `"mplab"`, and the gateway routers of the
/// hybrid-access flows that carry a connection ([`on_gateway_stack`]).
/// Other routers are the kernel's.
pub fn mplab_nodes(net: &Network) -> Vec<bool> {
    let mine = |n: &mplab_scenario::network::Node| n.stack.as_deref().is_none_or(|s| s == "mplab" || s == "userspace");
    net.nodes.iter().map(|n| mine(n) && (n.kind == NodeKind::Host || net.flows.iter().any(|f| on_gateway_stack(f) && (f.from == n.id || f.to == n.id)))).collect()
}

/// Whether flow `f` is a gateway connection mplab's stack can end in a
/// router: a stream-mode tunnel's, or a converter's carriers. The router
/// still forwards with Linux; a datagram-mode tunnel has no connection
/// (kernel UDP).
pub fn on_gateway_stack(f: &mplab_scenario::network::Flow) -> bool {
    matches!(f.app, App::Tunnel { mode: mplab_scenario::network::TunnelMode::Stream, .. } | App::Converter { .. }) && f.transport.over_tcp()
}
