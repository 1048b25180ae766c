//! # mplab-proto
//!
//! The sans-IO protocol core: segments and time in, segments and timer
//! deadlines out. TCP subflows, and (later) MPTCP connections on top of them.

pub mod time;

pub use time::Instant;
