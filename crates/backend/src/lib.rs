//! # mplab-backend
//!
//! What every mplab backend shares, so that one scenario means the same on
//! the simulator, the kernel backend and the userspace backend:
//!
//! * [`config`]: the one translation from a resolved scenario into the
//!   stack's configurations (path manager, limits and their defaults,
//!   scheduler, congestion control, buffers) and the link model's;
//! * [`link`] and [`rng`]: the link model (rate, delay, jitter, loss,
//!   queues) and its seeded random streams, on virtual time in the
//!   simulator and on a real clock in the kernel backend's emulator;
//! * [`apps`]: the applications as state machines over a stream socket,
//!   and the byte pattern every sender writes and every receiver checks;
//! * [`results`] and [`summary`]: the results types and the one summary
//!   computation every backend feeds;
//! * [`balancer`]: the load balancer's decisions (modes, tables), which
//!   the simulator's middlebox and the kernel backend's forwarder share;
//! * [`middlebox`]: the middlebox kinds (option stripping, NAT,
//!   resegmenting, rewriting, the load balancer and the attacker as boxes),
//!   each written once over a packet view the simulator's packets and the
//!   link emulator's frames provide;
//! * [`plugins`]: loading a scenario for a run with the plug-in tables
//!   whose registries live here (queue disciplines) checked, and the
//!   listing of every registry scenario files name;
//! * [`call_quality`]: what a real-time datagram stream experienced (loss,
//!   lateness, delay, jitter, interruptions, E-model R and MOS);
//! * [`transport`] and [`packet`]: transports as one axis, each an engine
//!   creating sans-IO endpoints over the model packet (one file and one
//!   `ENGINES` line per transport), driven by the simulator and, on real
//!   packets, by the userspace backend;
//! * [`host`]: the sans-IO host stack of mplab's own TCP and MPTCP
//!   (demultiplexing, listeners, joins by token, resets) and proto's
//!   connections behind one stream interface;
//! * [`convert`]: the hybrid-access gateways' RFC 8803 Transport
//!   Converter sessions (request, decision, answer).

pub mod apps;
pub mod attack;
pub mod balancer;
pub mod call_quality;
pub mod config;
pub mod convert;
pub mod datagram;
pub mod handover;
pub mod host;
pub mod link;
pub mod middlebox;
pub mod packet;
pub mod plugins;
pub mod quic;
mod quic_common;
pub mod quic_artefacts;
pub mod mpquic;
pub mod results;
pub mod rng;
pub mod summary;
pub mod transport;
pub mod workload;

pub use results::{RunResults, Summary};
