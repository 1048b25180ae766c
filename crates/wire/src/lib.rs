//! # mplab-wire
//!
//! The bytes layer of mplab: TCP header options including every MPTCP v1
//! subtype (RFC 8684), MPTCP key/token/IDSN/HMAC/checksum crypto, and IP+TCP
//! packet parsing/serialisation on top of etherparse; the SCTP packet
//! codec ([`sctp`]), the 0-RTT TCP Convert Protocol codec (RFC 8803,
//! [`convert`]) and the framing of datagrams in a hybrid-access tunnel's
//! byte stream ([`tunnel`]).
//!
//! Typed values in, bytes out, and back; malformed input yields a typed
//! error ([`WireError`]; `SctpError`, `ConvertError` for those codecs),
//! never a panic, and the hot path never allocates.

pub mod convert;
pub mod crypto;
pub mod error;
pub mod mptcp;
pub mod packet;
pub mod pcap;
pub mod samples;
pub mod sctp;
pub mod tcp;
pub mod tunnel;

pub use error::WireError;
pub use mptcp::{AddAddr, AddrIdList, DataAck, Dss, DssMapping, MpCapable, MpJoin, MptcpOption, RawBytes};
pub use packet::{Datalink, TcpHeader, TcpPacket};
pub use tcp::{SackBlock, TcpOptions, Timestamps};
