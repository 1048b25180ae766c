//! Typed errors of the codec. Malformed input always ends here, never in a panic.

use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WireError {
    /// The buffer ends before the structure it should hold.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    /// An option whose length octet is impossible for its kind or overruns
    /// the option space.
    #[error("option kind {kind} with bad length {len}")]
    BadLength { kind: u8, len: u8 },
    /// More options than the fixed-capacity representation holds.
    #[error("too many {0} options in one segment")]
    TooMany(&'static str),
    /// A typed value that has no encoding (e.g. a receiver key without a sender key).
    #[error("inconsistent value: {0}")]
    Inconsistent(&'static str),
    /// Encoded options exceed the 40-byte TCP option space.
    #[error("options need {0} bytes, more than the 40 available")]
    OptionsTooLong(usize),
    #[error("output buffer too small: need {need}, have {have}")]
    BufferTooSmall { need: usize, have: usize },
    /// The IP/TCP layers (etherparse) refused the packet.
    #[error("bad packet: {0}")]
    Packet(&'static str),
}
