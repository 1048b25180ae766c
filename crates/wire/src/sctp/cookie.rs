//! The state cookie (RFC 9260 5.1.3): everything the responder needs to
//! build the association when the COOKIE ECHO comes back, so that it keeps
//! no state between INIT and COOKIE ECHO. Sealed with HMAC-SHA256 under a
//! secret only the responder knows; a cookie whose MAC does not verify is
//! discarded, one older than its lifetime is stale (checked by the caller,
//! which knows the time).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::crypto::mac_eq;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the MAC appended to the cookie body.
pub const MAC_LEN: usize = 32;
/// Peer addresses a cookie carries at most (bounds the cookie size).
pub const MAX_ADDRS: usize = 16;

/// What the cookie remembers about the association being set up.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CookieContents {
    /// The responder's tag (the peer puts it in every packet).
    pub local_tag: u32,
    /// The initiator's tag from its INIT.
    pub peer_tag: u32,
    pub local_initial_tsn: u32,
    pub peer_initial_tsn: u32,
    pub peer_a_rwnd: u32,
    pub peer_outbound_streams: u16,
    pub peer_inbound_streams: u16,
    pub local_port: u16,
    pub peer_port: u16,
    /// Both sides listed NR-SACK (0x10) in Supported Extensions.
    pub nr_sack: bool,
    /// When the cookie was made, in the responder's clock (nanoseconds).
    pub created_ns: u64,
    /// How long it stays valid (cookie lifetime plus any preservative).
    pub lifetime_ns: u64,
    /// The initiator's addresses (the source of the INIT first).
    pub peer_addrs: Vec<IpAddr>,
}

/// Why a cookie was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieError {
    /// Too short, or the body does not parse.
    Malformed,
    /// The MAC does not match: forged, corrupted, or made under another secret.
    BadMac,
}

fn mac(key: &[u8], body: &[u8]) -> [u8; MAC_LEN] {
    // HMAC accepts keys of any length: this cannot fail.
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(body);
    m.finalize().into_bytes().into()
}

impl CookieContents {
    fn body(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + 17 * self.peer_addrs.len());
        for v in [self.local_tag, self.peer_tag, self.local_initial_tsn, self.peer_initial_tsn, self.peer_a_rwnd] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for v in [self.peer_outbound_streams, self.peer_inbound_streams, self.local_port, self.peer_port] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.push(self.nr_sack as u8);
        b.extend_from_slice(&self.created_ns.to_be_bytes());
        b.extend_from_slice(&self.lifetime_ns.to_be_bytes());
        let addrs = &self.peer_addrs[..self.peer_addrs.len().min(MAX_ADDRS)];
        b.push(addrs.len() as u8);
        for a in addrs {
            match a {
                IpAddr::V4(a) => {
                    b.push(4);
                    b.extend_from_slice(&a.octets());
                }
                IpAddr::V6(a) => {
                    b.push(6);
                    b.extend_from_slice(&a.octets());
                }
            }
        }
        b
    }

    /// The cookie bytes: the body, then HMAC-SHA256(key, body). Addresses
    /// beyond [`MAX_ADDRS`] are dropped.
    pub fn seal(&self, key: &[u8]) -> Vec<u8> {
        let mut b = self.body();
        let m = mac(key, &b);
        b.extend_from_slice(&m);
        b
    }

    /// Verifies the MAC, then parses the body.
    pub fn open(key: &[u8], cookie: &[u8]) -> Result<CookieContents, CookieError> {
        if cookie.len() < MAC_LEN {
            return Err(CookieError::Malformed);
        }
        let (body, tag) = cookie.split_at(cookie.len() - MAC_LEN);
        if !mac_eq(&mac(key, body), tag) {
            return Err(CookieError::BadMac);
        }
        Self::parse(body).ok_or(CookieError::Malformed)
    }

    fn parse(b: &[u8]) -> Option<CookieContents> {
        let mut r = Reader(b);
        let mut c = CookieContents {
            local_tag: r.u32()?,
            peer_tag: r.u32()?,
            local_initial_tsn: r.u32()?,
            peer_initial_tsn: r.u32()?,
            peer_a_rwnd: r.u32()?,
            peer_outbound_streams: r.u16()?,
            peer_inbound_streams: r.u16()?,
            local_port: r.u16()?,
            peer_port: r.u16()?,
            nr_sack: r.u8()? != 0,
            created_ns: r.u64()?,
            lifetime_ns: r.u64()?,
            peer_addrs: Vec::new(),
        };
        let n = r.u8()? as usize;
        if n > MAX_ADDRS {
            return None;
        }
        for _ in 0..n {
            let a = match r.u8()? {
                4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(r.take(4)?).ok()?)),
                6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(r.take(16)?).ok()?)),
                _ => return None,
            };
            c.peer_addrs.push(a);
        }
        r.0.is_empty().then_some(c)
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        Some(h)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CookieContents {
        CookieContents {
            local_tag: 1,
            peer_tag: 2,
            local_initial_tsn: 3,
            peer_initial_tsn: 4,
            peer_a_rwnd: 65536,
            peer_outbound_streams: 10,
            peer_inbound_streams: 10,
            local_port: 5000,
            peer_port: 5001,
            nr_sack: true,
            created_ns: 123,
            lifetime_ns: 60_000_000_000,
            peer_addrs: vec!["10.0.0.1".parse().unwrap(), "2001:db8::1".parse().unwrap()],
        }
    }

    #[test]
    fn seal_open_roundtrip() {
        let c = sample();
        let b = c.seal(b"secret");
        assert_eq!(CookieContents::open(b"secret", &b), Ok(c));
    }

    #[test]
    fn tampered_or_wrong_key_is_refused() {
        let b = sample().seal(b"secret");
        assert_eq!(CookieContents::open(b"other", &b), Err(CookieError::BadMac));
        for i in 0..b.len() {
            let mut t = b.clone();
            t[i] ^= 0x40;
            assert_eq!(CookieContents::open(b"secret", &t), Err(CookieError::BadMac), "byte {i}");
        }
        assert_eq!(CookieContents::open(b"secret", &b[..10]), Err(CookieError::Malformed));
    }
}
