//! The reset a host answers a segment nobody wants with (RFC 9293
//! 3.10.7.1).

use std::net::IpAddr;

use mplab_wire::packet::build_ip_tcp;
use mplab_wire::TcpHeader;

/// The RST answering segment `h` carrying `payload_len` bytes of data:
/// `<SEQ=SEG.ACK><CTL=RST>` if it had an ACK, else
/// `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`. None for a RST (a reset
/// is never answered).
pub fn reset_for(h: &TcpHeader, payload_len: u32) -> Option<TcpHeader> {
    h.reset_reply(payload_len)
}

/// The IP packet of that RST into `out`, from the segment's destination
/// `dst` back to its source `src` (TTL 64, IP id 0, no options, no data).
/// False when there is nothing to send.
pub fn write_reset(src: IpAddr, dst: IpAddr, h: &TcpHeader, payload_len: u32, out: &mut Vec<u8>) -> bool {
    match reset_for(h, payload_len) {
        Some(r) => build_ip_tcp(dst, src, 64, 0, &r, &[], out).is_ok(),
        None => false,
    }
}
