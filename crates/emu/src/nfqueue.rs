//! A minimal NFQUEUE client (netfilter's nfnetlink_queue, see
//! include/uapi/linux/netfilter/nfnetlink_queue.h): bind one queue in the
//! calling thread's network namespace, receive the packets an nftables
//! `queue` rule hands over (headers only), and give each a verdict, with a
//! firewall mark when accepting. The kernel backend's load balancer uses
//! it: the mark selects a routing table, one per backend.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_NETFILTER: i32 = 12;
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_MARK: u16 = 3;
const NFQA_IFINDEX_INDEV: u16 = 5;
const NFQA_PAYLOAD: u16 = 10;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLMSG_ERROR: u16 = 2;
const NLMSG_HDRLEN: usize = 16;
const NFGEN_HDRLEN: usize = 4;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;

/// What happens to a queued packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NfVerdict {
    /// Let it go on, with this firewall mark if given.
    Accept(Option<u32>),
    Drop,
}

/// A queued packet: its id, the interface it came in on, and its first
/// bytes (the IP header on).
#[derive(Debug)]
pub struct Queued<'a> {
    pub id: u32,
    pub indev: u32,
    pub payload: &'a [u8],
}

pub struct NfQueue {
    fd: OwnedFd,
    num: u16,
    seq: u32,
    buf: Vec<u8>,
    out: Vec<u8>,
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Appends a netlink attribute.
fn attr(out: &mut Vec<u8>, ty: u16, data: &[u8]) {
    let len = 4 + data.len();
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(data);
    out.resize(align4(out.len()), 0);
}

/// Walks the attributes in `b`: (type, payload).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([b[0], b[1]]));
        let ty = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let data = &b[4..len];
        b = &b[align4(len).min(b.len())..];
        Some((ty, data))
    })
}

impl NfQueue {
    /// Binds queue `num` in the calling thread's network namespace, copying
    /// `copy` bytes of each packet (enough for IP and TCP headers).
    pub fn open(num: u16, copy: u32) -> io::Result<NfQueue> {
        // SAFETY: plain socket(2); the fd is owned below.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_NETFILTER) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh fd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: zeroed sockaddr_nl is valid (pid 0: the kernel assigns).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: valid fd and address.
        if unsafe { libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_nl>() as u32) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut q = NfQueue { fd, num, seq: 0, buf: vec![0; 65536 + 4096], out: Vec::with_capacity(256) };
        q.config(|m| attr(m, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0]))?;
        let mut p = copy.to_be_bytes().to_vec();
        p.push(NFQNL_COPY_PACKET);
        q.config(|m| attr(m, NFQA_CFG_PARAMS, &p))?;
        q.config(|m| attr(m, NFQA_CFG_QUEUE_MAXLEN, &4096u32.to_be_bytes()))?;
        Ok(q)
    }

    fn header(&mut self, msg: u16, flags: u16) {
        self.seq = self.seq.wrapping_add(1);
        self.out.clear();
        self.out.extend_from_slice(&0u32.to_ne_bytes()); // length, set in send
        self.out.extend_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | msg).to_ne_bytes());
        self.out.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        self.out.extend_from_slice(&self.seq.to_ne_bytes());
        self.out.extend_from_slice(&0u32.to_ne_bytes());
        // nfgenmsg: family unspecified, version 0, the queue number.
        self.out.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]);
        self.out.extend_from_slice(&self.num.to_be_bytes());
    }

    fn send(&mut self) -> io::Result<()> {
        let len = self.out.len() as u32;
        self.out[..4].copy_from_slice(&len.to_ne_bytes());
        // SAFETY: sending our own buffer on our socket (to the kernel: pid 0).
        let n = unsafe { libc::send(self.fd.as_raw_fd(), self.out.as_ptr().cast(), self.out.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// A configuration request, acknowledged (an error comes back as one).
    fn config(&mut self, body: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.header(NFQNL_MSG_CONFIG, NLM_F_ACK);
        body(&mut self.out);
        self.send()?;
        // SAFETY: receiving into our buffer.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let b = &self.buf[..n as usize];
        if b.len() >= NLMSG_HDRLEN + 4 && u16::from_ne_bytes([b[4], b[5]]) == NLMSG_ERROR {
            let err = i32::from_ne_bytes([b[16], b[17], b[18], b[19]]);
            if err != 0 {
                return Err(io::Error::from_raw_os_error(-err));
            }
        }
        Ok(())
    }

    /// Several verdicts in one datagram (the kernel walks every netlink
    /// message of it): one system call per burst instead of one per segment.
    fn verdicts(&mut self, vs: Vec<(u32, NfVerdict)>) -> io::Result<()> {
        let mut batch = Vec::with_capacity(vs.len() * 40);
        for (id, v) in vs {
            self.header(NFQNL_MSG_VERDICT, 0);
            let (code, mark) = match v {
                NfVerdict::Accept(m) => (NF_ACCEPT, m),
                NfVerdict::Drop => (NF_DROP, None),
            };
            let mut vh = code.to_be_bytes().to_vec();
            vh.extend_from_slice(&id.to_be_bytes());
            attr(&mut self.out, NFQA_VERDICT_HDR, &vh);
            if let Some(m) = mark {
                attr(&mut self.out, NFQA_MARK, &m.to_be_bytes());
            }
            let len = self.out.len() as u32;
            self.out[..4].copy_from_slice(&len.to_ne_bytes());
            batch.extend_from_slice(&self.out);
            batch.resize(align4(batch.len()), 0);
        }
        if batch.is_empty() {
            return Ok(());
        }
        // SAFETY: sending our own buffer on our socket (to the kernel: pid 0).
        let n = unsafe { libc::send(self.fd.as_raw_fd(), batch.as_ptr().cast(), batch.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` for packets and gives each the verdict `f`
    /// returns. Returns how many were handled (0 on timeout).
    pub fn serve(&mut self, timeout_ms: i32, mut f: impl FnMut(&Queued<'_>) -> NfVerdict) -> io::Result<usize> {
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(e) };
        }
        if r == 0 {
            return Ok(0);
        }
        // Up to 64 queued messages per wake-up: under load the poll is
        // paid once per burst, not once per segment.
        let mut verdicts = Vec::new();
        for _ in 0..64 {
            // SAFETY: receiving into our buffer.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), libc::MSG_DONTWAIT) };
            if n < 0 {
                let e = io::Error::last_os_error();
                // ENOBUFS: the kernel dropped messages for a full socket buffer.
                if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) || e.raw_os_error() == Some(libc::ENOBUFS) {
                    break;
                }
                return Err(e);
            }
            let mut b = &self.buf[..n as usize];
            while b.len() >= NLMSG_HDRLEN {
                let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
                if len < NLMSG_HDRLEN || len > b.len() {
                    break;
                }
                let ty = u16::from_ne_bytes([b[4], b[5]]);
                if ty == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET && len >= NLMSG_HDRLEN + NFGEN_HDRLEN {
                    let (mut id, mut indev, mut payload) = (None, 0, &[][..]);
                    for (t, d) in attrs(&b[NLMSG_HDRLEN + NFGEN_HDRLEN..len]) {
                        match t {
                            NFQA_PACKET_HDR if d.len() >= 4 => id = Some(u32::from_be_bytes([d[0], d[1], d[2], d[3]])),
                            NFQA_IFINDEX_INDEV if d.len() >= 4 => indev = u32::from_be_bytes([d[0], d[1], d[2], d[3]]),
                            NFQA_PAYLOAD => payload = d,
                            _ => {}
                        }
                    }
                    if let Some(id) = id {
                        verdicts.push((id, f(&Queued { id, indev, payload })));
                    }
                }
                b = &b[align4(len).min(b.len())..];
            }
        }
        let k = verdicts.len();
        self.verdicts(verdicts)?;
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_and_bad_lengths_stop_the_walk() {
        let mut m = Vec::new();
        attr(&mut m, 7, &[1, 2, 3]);
        attr(&mut m, 9, &42u32.to_be_bytes());
        assert_eq!(m.len(), 8 + 8);
        let got: Vec<(u16, Vec<u8>)> = attrs(&m).map(|(t, d)| (t, d.to_vec())).collect();
        assert_eq!(got, vec![(7, vec![1, 2, 3]), (9, vec![0, 0, 0, 42])]);
        // A length past the end ends the walk instead of reading beyond.
        let bad = [200u8, 0, 1, 0, 0, 0];
        assert_eq!(attrs(&bad).count(), 0);
        assert_eq!(attrs(&[3, 0, 1, 0]).count(), 0, "shorter than a header");
    }
}
