//! SCTP on the real backends: the kernel here has no SCTP, so each host
//! of an SCTP flow runs usrsctp, the FreeBSD stack as a userland library,
//! in its own process inside the host's namespace, over raw IPv4
//! protocol-132 packets through mplab's link emulator. This is the
//! reference the simulator's SCTP model is held against.
//!
//! * [`ffi`]: the library, loaded at run time.
//! * [`host`]: one end (client or server), its spec and its output lines.
//! * [`flow`]: the two ends of a scenario flow, as the kernel backend runs them.

pub mod ffi;
pub mod flow;
pub mod host;
