//! One flow end's connection on mplab's stack: an MPTCP connection or,
//! for `transport = "tcp"` flows, proto's plain TCP engine. The host loop
//! drives both through one interface, the backends' shared
//! [`mplab_backend::host::StreamConn`], so the applications, verification
//! and probes are the same for either.

pub use mplab_backend::host::stream::{Out, StreamConn as Conn};
