//! Adding an MPTCP endpoint over generic netlink (the `mptcp_pm` family of
//! include/uapi/linux/mptcp_pm.h), for the endpoint flags the host's
//! iproute2 does not know: Linux 6.18's `laminar` (iproute2 6.1 here
//! refuses the word). Every other endpoint goes through `ip mptcp`, as
//! before. The request is built by hand: a netlink header, a generic
//! netlink header, and the endpoint as one nested attribute.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::sys;

const NETLINK_GENERIC: i32 = 16;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLMSG_ERROR: u16 = 2;
const NLA_F_NESTED: u16 = 1 << 15;
/// The generic netlink controller, which names the families' ids.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const MPTCP_PM_CMD_ADD_ADDR: u8 = 1;
const MPTCP_PM_VER: u8 = 1;
const MPTCP_PM_ATTR_ADDR: u16 = 1;
const ADDR_ATTR_FAMILY: u16 = 1;
const ADDR_ATTR_ID: u16 = 2;
const ADDR_ATTR_ADDR4: u16 = 3;
const ADDR_ATTR_FLAGS: u16 = 6;

/// The endpoint flags' bits (MPTCP_PM_ADDR_FLAG_*).
fn flag_bit(word: &str) -> Option<u32> {
    Some(match word {
        "signal" => 1,
        "subflow" => 1 << 1,
        "backup" => 1 << 2,
        "fullmesh" => 1 << 3,
        "laminar" => 1 << 5,
        _ => return None,
    })
}

/// Whether `ip mptcp` cannot add the endpoint line `line` itself.
pub fn needs_netlink(line: &str) -> bool {
    line.split_whitespace().any(|w| w == "laminar")
}

/// One endpoint as `kconf` writes it: `endpoint add ADDR [id ID] FLAG...`.
#[derive(Debug)]
struct EndpointLine {
    addr: Ipv4Addr,
    id: Option<u8>,
    flags: u32,
}

fn parse(line: &str) -> Result<EndpointLine, String> {
    let bad = || format!("endpoint line {line:?}: expected `endpoint add ADDR [id ID] FLAG...`");
    let mut w = line.split_whitespace();
    if (w.next(), w.next()) != (Some("endpoint"), Some("add")) {
        return Err(bad());
    }
    let addr = w.next().and_then(|a| a.parse().ok()).ok_or_else(bad)?;
    let (mut id, mut flags) = (None, 0);
    while let Some(word) = w.next() {
        match word {
            "id" => id = Some(w.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?),
            f => flags |= flag_bit(f).ok_or_else(|| format!("endpoint line {line:?}: unknown flag {f:?}"))?,
        }
    }
    Ok(EndpointLine { addr, id, flags })
}

/// Appends one attribute (padded to 4 bytes).
fn attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// A whole request: netlink header, generic netlink header, attributes.
fn message(family: u16, flags: u16, seq: u32, cmd: u8, version: u8, attrs: &[u8]) -> Vec<u8> {
    let len = 16 + 4 + attrs.len();
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&family.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&[cmd, version, 0, 0]);
    m.extend_from_slice(attrs);
    m
}

/// The attributes after the generic header of the first message in `reply`.
fn reply_attrs(reply: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let len = u32::from_ne_bytes(reply.get(..4)?.try_into().ok()?) as usize;
    let body = reply.get(20..len.min(reply.len()))?;
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= body.len() {
        let l = u16::from_ne_bytes([body[at], body[at + 1]]) as usize;
        let k = u16::from_ne_bytes([body[at + 2], body[at + 3]]) & !NLA_F_NESTED;
        if l < 4 || at + l > body.len() {
            break;
        }
        out.push((k, &body[at + 4..at + l]));
        at += l.next_multiple_of(4);
    }
    Some(out)
}

fn socket() -> Result<OwnedFd, String> {
    // SAFETY: plain socket call.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_GENERIC) };
    if fd < 0 {
        return Err(format!("netlink socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh fd.
    let s = unsafe { OwnedFd::from_raw_fd(fd) };
    // A kernel that does not answer must not hang the run.
    let tv = libc::timeval { tv_sec: 5, tv_usec: 0 };
    sys::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv, "SO_RCVTIMEO").map_err(|e| e.to_string())?;
    Ok(s)
}

/// Sends `msg` and returns the kernel's first reply.
fn exchange(s: &OwnedFd, msg: &[u8]) -> Result<Vec<u8>, String> {
    // SAFETY: a valid buffer; the kernel is the default destination.
    if unsafe { libc::send(s.as_raw_fd(), msg.as_ptr() as *const libc::c_void, msg.len(), 0) } < 0 {
        return Err(format!("netlink send: {}", std::io::Error::last_os_error()));
    }
    let mut buf = vec![0u8; 8192];
    // SAFETY: a valid buffer.
    let n = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
    if n < 20 {
        return Err(format!("netlink reply: {}", if n < 0 { std::io::Error::last_os_error().to_string() } else { "too short".into() }));
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// Adds the endpoint of `line` (`endpoint add ADDR [id ID] FLAG...`) to
/// the MPTCP path manager of namespace `ns`.
pub fn add_endpoint(ns: &str, line: &str) -> Result<(), String> {
    let e = parse(line)?;
    let ctx = format!("namespace {ns}: {line}");
    sys::in_netns(ns, move || {
        let s = socket().map_err(std::io::Error::other)?;
        let mut a = Vec::new();
        attr(&mut a, CTRL_ATTR_FAMILY_NAME, b"mptcp_pm\0");
        let reply = exchange(&s, &message(GENL_ID_CTRL, 0, 1, CTRL_CMD_GETFAMILY, 1, &a)).map_err(std::io::Error::other)?;
        let family = reply_attrs(&reply)
            .and_then(|v| v.into_iter().find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID).and_then(|(_, p)| p.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]]))))
            .ok_or_else(|| std::io::Error::other("the kernel has no mptcp_pm netlink family"))?;
        let mut inner = Vec::new();
        attr(&mut inner, ADDR_ATTR_FAMILY, &(libc::AF_INET as u16).to_ne_bytes());
        if let Some(id) = e.id {
            attr(&mut inner, ADDR_ATTR_ID, &[id]);
        }
        attr(&mut inner, ADDR_ATTR_ADDR4, &e.addr.octets());
        attr(&mut inner, ADDR_ATTR_FLAGS, &e.flags.to_ne_bytes());
        let mut a = Vec::new();
        attr(&mut a, MPTCP_PM_ATTR_ADDR | NLA_F_NESTED, &inner);
        let reply = exchange(&s, &message(family, NLM_F_ACK, 2, MPTCP_PM_CMD_ADD_ADDR, MPTCP_PM_VER, &a)).map_err(std::io::Error::other)?;
        let kind = u16::from_ne_bytes([reply[4], reply[5]]);
        let errno = i32::from_ne_bytes(reply[16..20].try_into().unwrap_or_default());
        match (kind, errno) {
            (NLMSG_ERROR, 0) => Ok(()),
            (NLMSG_ERROR, e) => Err(std::io::Error::from_raw_os_error(-e)),
            _ => Err(std::io::Error::other(format!("unexpected netlink reply type {kind}"))),
        }
    })
    .map_err(|e| format!("{ctx}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_lines_parse_with_their_flag_bits() {
        let e = parse("endpoint add 10.0.1.1 id 2 subflow laminar").unwrap();
        assert_eq!((e.addr, e.id, e.flags), ("10.0.1.1".parse().unwrap(), Some(2), 0b10_0010));
        assert!(needs_netlink("endpoint add 10.0.1.1 id 2 laminar"));
        assert!(!needs_netlink("endpoint add 10.0.1.1 id 2 subflow backup"));
        assert!(parse("endpoint add 10.0.1.1 id 2 turbulent").unwrap_err().contains("unknown flag"));
        assert!(parse("endpoint del 10.0.1.1").is_err());
    }

    /// The request's layout: 16 + 4 bytes of headers, then the nested
    /// endpoint whose attributes are each 4-byte aligned.
    #[test]
    fn the_add_request_is_laid_out_as_the_kernel_reads_it() {
        let mut inner = Vec::new();
        attr(&mut inner, ADDR_ATTR_FAMILY, &2u16.to_ne_bytes());
        attr(&mut inner, ADDR_ATTR_ID, &[3]);
        attr(&mut inner, ADDR_ATTR_ADDR4, &[10, 0, 1, 1]);
        assert_eq!(inner.len(), 8 + 8 + 8);
        assert_eq!(&inner[8..13], &[5u8, 0, 2, 0, 3]); // little-endian length 5, type 2, the id
        assert_eq!(&inner[20..24], &[10, 0, 1, 1]);
        let m = message(0x1c, NLM_F_ACK, 7, MPTCP_PM_CMD_ADD_ADDR, 1, &inner);
        assert_eq!(u32::from_ne_bytes(m[..4].try_into().unwrap()) as usize, m.len());
        assert_eq!(u16::from_ne_bytes([m[6], m[7]]), NLM_F_REQUEST | NLM_F_ACK);
        assert_eq!(&m[16..20], &[1, 1, 0, 0]);
    }
}
