//! SCTP on the real backends: the kernel here has no SCTP, so each host
//! of an SCTP flow runs usrsctp, the FreeBSD stack as a userland library,
//! in its own process inside the host's namespace, over raw IPv4
//! protocol-132 packets through mplab's link emulator. This is the
//! reference the simulator's SCTP model is held against.
//!
//! * [`ffi`]: the library, loaded at run time.
//! * [`host`]: one end (client or server), its spec and its output lines.
//! * [`flow`]: the two ends of a scenario flow, as the kernel backend runs them.
//!
//! What usrsctp can run ([`unsupported`]) lives here, below both the
//! backend checks (`kconf`) and the flow runner, which uses the flows' shared
//! state (`apps`).

pub mod ffi;
pub mod flow;
pub mod host;

use mplab_scenario::network::Flow;

/// Why the kernel backend cannot run this SCTP flow, if it cannot.
pub fn unsupported(f: &Flow) -> Option<String> {
    if f.servers.len() > 1 {
        return Some("an SCTP flow to a load-balanced service".into());
    }
    if mplab_backend::apps::bulk_transfer(&f.app).is_none() {
        return Some("SCTP flows on the kernel backend run app = \"bulk\" only".into());
    }
    None
}
