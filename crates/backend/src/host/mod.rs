//! The host stack every backend that runs mplab's own TCP and MPTCP
//! shares, without I/O: which connection an arriving segment belongs to
//! ([`demux`]), the reset a stray segment is answered with ([`reset`]),
//! and proto's TCP and MPTCP connections behind one stream interface
//! ([`stream`]). The simulator and the userspace backend feed it packets
//! and time, and do the sending themselves.

pub mod demux;
pub mod reset;
pub mod stream;

pub use demux::{Arrival, HostStack, KnownTupleJoin, Tables};
pub use reset::{reset_for, write_reset};
pub use stream::{AsStreamConn, Out, StreamConn};
