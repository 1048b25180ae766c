//! # mplab-proto
//!
//! The sans-IO protocol core: segments and time in, segments and timer
//! deadlines out. TCP connections (the subflow engine) with congestion
//! control behind a trait, and (later) MPTCP connections on top of them.

pub mod cc;
pub mod mptcp;
pub mod registry;
pub mod rng;
pub mod sctp;
pub mod tcp;
pub mod time;

pub use time::Instant;
