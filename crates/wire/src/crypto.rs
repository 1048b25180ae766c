//! MPTCP v1 cryptography (RFC 8684 sections 3.1, 3.2, 3.3.1, 3.4.1).
//!
//! All with HMAC-SHA256 / SHA-256, the only algorithm v1 defines (flag H).

use core::net::IpAddr;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// Token and initial data sequence number derived from a 64-bit key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyMaterial {
    pub key: u64,
    /// Most significant 32 bits of SHA-256(key): names the connection in MP_JOIN.
    pub token: u32,
    /// Least significant 64 bits of SHA-256(key): the IDSN of this key's sender.
    pub idsn: u64,
}

impl KeyMaterial {
    pub fn from_key(key: u64) -> Self {
        let d = Sha256::digest(key.to_be_bytes());
        let token = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
        let mut tail = [0u8; 8];
        tail.copy_from_slice(&d[24..32]);
        KeyMaterial { key, token, idsn: u64::from_be_bytes(tail) }
    }
}

/// Compares two MACs in time that does not depend on where they differ:
/// an attacker timing the answers (or a fuzzer tracing comparisons) learns
/// nothing about the expected value.
pub fn mac_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

pub fn token(key: u64) -> u32 {
    KeyMaterial::from_key(key).token
}

pub fn idsn(key: u64) -> u64 {
    KeyMaterial::from_key(key).idsn
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC accepts keys of any length; the unwrap cannot fail.
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

fn key_pair(first: u64, second: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&first.to_be_bytes());
    k[8..].copy_from_slice(&second.to_be_bytes());
    k
}

/// Full MP_JOIN HMAC computed by the host owning `own_key`:
/// HMAC-SHA256(key = own_key || peer_key, msg = own_nonce || peer_nonce).
pub fn join_hmac(own_key: u64, peer_key: u64, own_nonce: u32, peer_nonce: u32) -> [u8; 32] {
    hmac_sha256(&key_pair(own_key, peer_key), &[&own_nonce.to_be_bytes(), &peer_nonce.to_be_bytes()])
}

/// The truncated HMAC the responder B puts in the MP_JOIN SYN/ACK:
/// leftmost 64 bits of HMAC(K_B||K_A, R_B||R_A).
pub fn join_synack_hmac(key_b: u64, key_a: u64, nonce_b: u32, nonce_a: u32) -> u64 {
    let h = join_hmac(key_b, key_a, nonce_b, nonce_a);
    u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]])
}

/// The HMAC the initiator A puts in the MP_JOIN third ACK:
/// leftmost 160 bits of HMAC(K_A||K_B, R_A||R_B).
pub fn join_ack_hmac(key_a: u64, key_b: u64, nonce_a: u32, nonce_b: u32) -> [u8; 20] {
    let h = join_hmac(key_a, key_b, nonce_a, nonce_b);
    let mut out = [0u8; 20];
    out.copy_from_slice(&h[..20]);
    out
}

/// ADD_ADDR HMAC: rightmost 64 bits of HMAC(K_sender||K_receiver,
/// address id || address || port). Linux always includes the two port
/// octets, zero when the option carries no port; so do we.
pub fn add_addr_hmac(sender_key: u64, receiver_key: u64, addr_id: u8, addr: IpAddr, port: Option<u16>) -> u64 {
    let port = port.unwrap_or(0).to_be_bytes();
    let k = key_pair(sender_key, receiver_key);
    let h = match addr {
        IpAddr::V4(a) => hmac_sha256(&k, &[&[addr_id], &a.octets(), &port]),
        IpAddr::V6(a) => hmac_sha256(&k, &[&[addr_id], &a.octets(), &port]),
    };
    u64::from_be_bytes([h[24], h[25], h[26], h[27], h[28], h[29], h[30], h[31]])
}

/// One's-complement 16-bit sum over `data` continuing from `acc` (not folded).
fn ones_sum(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u64) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// DSS checksum (RFC 8684 3.3.1): one's complement of the one's-complement
/// sum over the pseudo-header DSN(64) || SSN(32) || data-level length(16) ||
/// zero(16) followed by the payload the mapping covers. `ssn` is relative to
/// the subflow's initial sequence number, as carried in the DSS option.
pub fn dss_checksum(dsn: u64, ssn: u32, data_len: u16, payload: &[u8]) -> u16 {
    let mut ph = [0u8; 16];
    ph[..8].copy_from_slice(&dsn.to_be_bytes());
    ph[8..12].copy_from_slice(&ssn.to_be_bytes());
    ph[12..14].copy_from_slice(&data_len.to_be_bytes());
    !fold(ones_sum(ones_sum(0, &ph), payload))
}

/// True when `checksum` is right for this mapping and payload: summing with
/// the checksum included yields all ones.
pub fn dss_checksum_ok(dsn: u64, ssn: u32, data_len: u16, payload: &[u8], checksum: u16) -> bool {
    dss_checksum(dsn, ssn, data_len, payload) == checksum
}

/// Expands a 32-bit sequence number on the wire to the 64-bit value closest
/// to `reference` (RFC 8684 3.3: implementations infer the upper bits).
pub fn expand_seq32(reference: u64, low: u32) -> u64 {
    let cand = (reference & !0xffff_ffff) | low as u64;
    let half = 1u64 << 31;
    if cand > reference && cand - reference > half && cand >= (1 << 32) {
        cand - (1 << 32)
    } else if cand < reference && reference - cand > half {
        cand.wrapping_add(1 << 32)
    } else {
        cand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_wraps_both_ways() {
        assert_eq!(expand_seq32(0x1_0000_0010, 0x20), 0x1_0000_0020);
        assert_eq!(expand_seq32(0x1_ffff_fff0, 0x10), 0x2_0000_0010);
        assert_eq!(expand_seq32(0x2_0000_0010, 0xffff_fff0), 0x1_ffff_fff0);
        assert_eq!(expand_seq32(5, 0xffff_fff0), 0xffff_fff0);
    }

    #[test]
    fn checksum_odd_payload_pads_with_zero() {
        let a = dss_checksum(1, 2, 3, &[0xab]);
        let b = dss_checksum(1, 2, 3, &[0xab, 0x00]);
        assert_eq!(a, b);
    }
}
