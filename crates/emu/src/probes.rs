//! Probes of a kernel run: interface counters (/proc/net/dev of each
//! namespace), TCP_INFO and MPTCP_FULL_INFO (or MPTCP_TCPINFO +
//! MPTCP_SUBFLOW_ADDRS) of the senders, MPTCP subflow flags through
//! sock_diag, MPTcpExt counters, and pcaps through AF_PACKET.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::sys;

pub const SOL_MPTCP: i32 = 284;
pub const MPTCP_INFO: i32 = 1;
pub const MPTCP_TCPINFO: i32 = 2;
pub const MPTCP_SUBFLOW_ADDRS: i32 = 3;

/// The fields of `struct tcp_info` the results use.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpInfo {
    pub rtt_us: u32,
    pub snd_cwnd: u32,
    pub snd_mss: u32,
    pub unacked: u32,
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
    /// `tcpi_bytes_retrans` (Linux 4.19+).
    pub bytes_retrans: Option<u64>,
    pub total_rto: Option<u16>,
}

/// Size of the `struct tcp_info` we ask for (Linux 6.7+ has total_rto at 240).
pub const TCP_INFO_LEN: usize = 248;

impl TcpInfo {
    pub fn parse(b: &[u8]) -> Option<TcpInfo> {
        let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_ne_bytes(s.try_into().unwrap()));
        let u64_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_ne_bytes(s.try_into().unwrap()));
        Some(TcpInfo {
            snd_mss: u32_at(16)?,
            unacked: u32_at(24)?,
            rtt_us: u32_at(68)?,
            snd_cwnd: u32_at(80)?,
            total_retrans: u32_at(100)?,
            bytes_acked: u64_at(120).unwrap_or(0),
            bytes_sent: u64_at(200).unwrap_or(0),
            bytes_retrans: u64_at(208),
            total_rto: b.get(240..242).map(|s| u16::from_ne_bytes(s.try_into().unwrap())),
        })
    }
    pub fn cwnd_bytes(&self) -> u64 {
        u64::from(self.snd_cwnd) * u64::from(self.snd_mss)
    }
    pub fn in_flight_bytes(&self) -> u64 {
        u64::from(self.unacked) * u64::from(self.snd_mss)
    }
}

/// An MPTCP socket's send buffer (`SO_SNDBUF`: for MPTCP, `tcp_wmem[0]`
/// plus its subflows' autotuned buffers) and the bytes it holds, written
/// and not yet DATA_ACKed (SIOCOUTQ: `write_seq - snd_una`).
pub fn send_buffer(fd: RawFd) -> Option<(u64, u64)> {
    let buf = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF).ok()?;
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int through the pointer.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued as *mut libc::c_int) };
    (r == 0 && buf >= 0 && queued >= 0).then_some((buf as u64, queued as u64))
}

pub fn tcp_info(fd: RawFd) -> Option<TcpInfo> {
    tcp_info_and_state(fd).map(|(i, _)| i)
}

/// TCP_INFO and the socket's TCP state (`tcpi_state`, Linux's numbering).
pub fn tcp_info_and_state(fd: RawFd) -> Option<(TcpInfo, Option<u8>)> {
    let mut b = [0u8; TCP_INFO_LEN];
    let n = sys::getsockopt_buf(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut b).ok()?;
    Some((TcpInfo::parse(&b[..n])?, tcpi_state(&b[..n])))
}

/// `tcpi_state`, the first byte of `struct tcp_info` (TCP_ESTABLISHED = 1,
/// ..., include/net/tcp_states.h).
pub fn tcpi_state(b: &[u8]) -> Option<u8> {
    b.first().copied()
}

/// A Linux TCP state as the results report a subflow: data still flows
/// while either side is closing.
pub fn subflow_state(tcp_state: u8) -> mplab_backend::results::SubflowState {
    use mplab_backend::results::SubflowState as S;
    match tcp_state {
        // SYN_SENT, SYN_RECV, NEW_SYN_RECV
        2 | 3 | 12 => S::Connecting,
        // ESTABLISHED, FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK, CLOSING
        1 | 4 | 5 | 8 | 9 | 11 => S::Established,
        // TIME_WAIT, CLOSE, LISTEN (never a subflow)
        _ => S::Closed,
    }
}

/// One subflow of an MPTCP connection as the kernel reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubflowInfo {
    pub local: String,
    pub remote: String,
    pub info: TcpInfo,
    /// The kernel's subflow id (MPTCP_FULL_INFO): 1, 2, ... in creation
    /// order and never reused within the connection, unlike the addresses.
    /// None from the older MPTCP_TCPINFO + MPTCP_SUBFLOW_ADDRS path.
    pub id: Option<u32>,
    /// MPTCP subflow flags and address ids (sock_diag), when read.
    pub flags: Option<SubflowFlags>,
    /// `tcpi_state` of the subflow, when its TCP_INFO was read.
    pub tcp_state: Option<u8>,
}

/// `MPTCP_SUBFLOW_FLAG_*` of include/uapi/linux/mptcp.h.
pub const SUBFLOW_FLAG_MCAP_REM: u32 = 1 << 0;
pub const SUBFLOW_FLAG_MCAP_LOC: u32 = 1 << 1;
pub const SUBFLOW_FLAG_JOIN_REM: u32 = 1 << 2;
pub const SUBFLOW_FLAG_JOIN_LOC: u32 = 1 << 3;
/// The peer marked the subflow backup (its MP_JOIN or MP_PRIO B bit).
pub const SUBFLOW_FLAG_BKUP_REM: u32 = 1 << 4;
/// This end asked for backup (a `backup` endpoint, or MP_PRIO sent).
pub const SUBFLOW_FLAG_BKUP_LOC: u32 = 1 << 5;
pub const SUBFLOW_FLAG_FULLY_ESTABLISHED: u32 = 1 << 6;
pub const SUBFLOW_FLAG_CONNECTED: u32 = 1 << 7;

/// What the kernel's MPTCP subflow diag (INET_ULP_INFO_MPTCP) says about a subflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubflowFlags {
    pub flags: u32,
    /// Address ids of the two ends (MPTCP_SUBFLOW_ATTR_ID_LOC / _REM).
    pub local_id: u8,
    pub remote_id: u8,
}

impl SubflowFlags {
    /// Backup in either direction: requested by this end or by the peer.
    pub fn backup(&self) -> bool {
        self.flags & (SUBFLOW_FLAG_BKUP_LOC | SUBFLOW_FLAG_BKUP_REM) != 0
    }
}

fn sockaddr_at(b: &[u8]) -> String {
    // struct sockaddr_in: family (2), port (2, BE), addr (4)
    if b.len() < 8 || u16::from_ne_bytes([b[0], b[1]]) != libc::AF_INET as u16 {
        return "?".into();
    }
    format!("{}.{}.{}.{}:{}", b[4], b[5], b[6], b[7], u16::from_be_bytes([b[2], b[3]]))
}

pub const MPTCP_FULL_INFO: i32 = 4;
/// `struct mptcp_full_info` up to `mptcp_info`: six u32 sizes and counts,
/// then the two user pointers (u64) to the subflow-info and tcp_info arrays.
pub const FULL_INFO_HDR: usize = 40;
/// `struct mptcp_subflow_info`: u32 id, then `struct mptcp_subflow_addrs`
/// (two 128-byte sockaddr_storage, 8-byte aligned, so at offset 8).
pub const SFINFO_LEN: usize = 264;
const SFINFO_ADDRS: usize = 8;
/// Room for `struct mptcp_info` after the header (96 bytes in 6.x; the
/// kernel copies at most its own size).
const MPTCP_INFO_ROOM: usize = 256;
/// At most this many subflows are read per connection.
const MAX_SUBFLOWS: usize = 16;

/// Parses what MPTCP_FULL_INFO returned: `hdr` is the `mptcp_full_info`
/// the kernel wrote back, `sf` and `ti` the arrays its pointers named. The
/// element sizes and the count are the kernel's (it writes the sizes it
/// used, the smaller of ours and its own, and the real subflow count, which
/// may exceed the arrays).
pub fn parse_full_info(hdr: &[u8], sf: &[u8], ti: &[u8]) -> Option<Vec<SubflowInfo>> {
    let u32_at = |o: usize| hdr.get(o..o + 4).map(|s| u32::from_ne_bytes(s.try_into().unwrap()) as usize);
    let (ti_user, sf_user, num, arrays) = (u32_at(4)?, u32_at(12)?, u32_at(16)?, u32_at(20)?);
    let n = num.min(arrays);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let s = sf.get(i * sf_user..(i + 1) * sf_user)?;
        let t = if ti_user > 0 { ti.get(i * ti_user..(i + 1) * ti_user)? } else { &[] };
        let id = s.get(0..4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
        let addrs = s.get(SFINFO_ADDRS..).unwrap_or(&[]);
        out.push(SubflowInfo {
            local: sockaddr_at(addrs),
            remote: sockaddr_at(addrs.get(128..).unwrap_or(&[])),
            info: TcpInfo::parse(t).unwrap_or_default(),
            tcp_state: tcpi_state(t),
            id,
            flags: None,
        });
    }
    Some(out)
}

/// MPTCP_FULL_INFO (Linux 6.6+): ids, addresses and tcp_info of every
/// subflow in one consistent read. Err carries the kernel's error
/// (EOPNOTSUPP after a fallback to TCP, EINVAL or ENOPROTOOPT on kernels
/// without it).
pub fn mptcp_full_info(fd: RawFd) -> std::io::Result<Vec<SubflowInfo>> {
    let mut sf = vec![0u8; MAX_SUBFLOWS * SFINFO_LEN];
    let mut ti = vec![0u8; MAX_SUBFLOWS * TCP_INFO_LEN];
    let mut hdr = vec![0u8; FULL_INFO_HDR + MPTCP_INFO_ROOM];
    hdr[4..8].copy_from_slice(&(TCP_INFO_LEN as u32).to_ne_bytes());
    hdr[12..16].copy_from_slice(&(SFINFO_LEN as u32).to_ne_bytes());
    hdr[20..24].copy_from_slice(&(MAX_SUBFLOWS as u32).to_ne_bytes());
    hdr[24..32].copy_from_slice(&(sf.as_mut_ptr() as u64).to_ne_bytes());
    hdr[32..40].copy_from_slice(&(ti.as_mut_ptr() as u64).to_ne_bytes());
    sys::getsockopt_buf(fd, SOL_MPTCP, MPTCP_FULL_INFO, &mut hdr)?;
    parse_full_info(&hdr, &sf, &ti).ok_or_else(|| std::io::Error::other("MPTCP_FULL_INFO: short answer"))
}

/// The subflows of an MPTCP socket, or None when the socket is not (or no
/// longer) MPTCP. MPTCP_FULL_INFO when the kernel has it, else
/// MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS (two reads, no ids; a subflow may
/// come or go between them).
pub fn mptcp_subflows(fd: RawFd) -> Option<Vec<SubflowInfo>> {
    match mptcp_full_info(fd) {
        Ok(v) => Some(v),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) | Some(libc::ENOPROTOOPT)) => mptcp_subflows_legacy(fd),
        Err(_) => None,
    }
}

/// The pre-6.6 way: MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS.
pub fn mptcp_subflows_legacy(fd: RawFd) -> Option<Vec<SubflowInfo>> {
    const HDR: usize = 16;
    const MAX: usize = MAX_SUBFLOWS;
    let get = |opt: i32, size_user: usize| -> Option<(Vec<u8>, usize)> {
        let mut b = vec![0u8; HDR + MAX * size_user];
        b[0..4].copy_from_slice(&(HDR as u32).to_ne_bytes());
        b[12..16].copy_from_slice(&(size_user as u32).to_ne_bytes());
        sys::getsockopt_buf(fd, SOL_MPTCP, opt, &mut b).ok()?;
        let num = u32::from_ne_bytes(b[4..8].try_into().unwrap()) as usize;
        let user = u32::from_ne_bytes(b[12..16].try_into().unwrap()) as usize;
        if user == 0 && num > 0 {
            return None;
        }
        Some((b, num.min(MAX)))
    };
    let (ti, n_ti) = get(MPTCP_TCPINFO, TCP_INFO_LEN)?;
    let ti_user = u32::from_ne_bytes(ti[12..16].try_into().unwrap()) as usize;
    // struct mptcp_subflow_addrs: two __kernel_sockaddr_storage (128 bytes each).
    let (ad, n_ad) = get(MPTCP_SUBFLOW_ADDRS, 256)?;
    let ad_user = u32::from_ne_bytes(ad[12..16].try_into().unwrap()) as usize;
    let n = n_ti.min(n_ad);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let t = &ti[HDR + i * ti_user..HDR + (i + 1) * ti_user];
        let a = &ad[HDR + i * ad_user..HDR + (i + 1) * ad_user];
        out.push(SubflowInfo { local: sockaddr_at(&a[0..]), remote: sockaddr_at(a.get(128..).unwrap_or(&[])), info: TcpInfo::parse(t).unwrap_or_default(), id: None, flags: None, tcp_state: tcpi_state(t) });
    }
    Some(out)
}

// ------------------------------------------------------------- sock_diag
//
// Per-subflow MPTCP flags (backup, join, ...) and address ids are not in
// MPTCP_FULL_INFO (its `struct mptcp_subflow_info` is the id and the
// addresses only); the kernel reports them through inet_diag as the TCP
// subflow's ULP info (what `ss -tni` prints as `tcp-ulp-mptcp flags:...`).

const NETLINK_SOCK_DIAG: i32 = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
/// `INET_DIAG_INFO` as an `idiag_ext` bit (1 << (2 - 1)).
const INET_DIAG_EXT_INFO: u8 = 1 << 1;
const INET_DIAG_ULP_INFO: u16 = 19;
const INET_ULP_INFO_MPTCP: u16 = 3;
const MPTCP_SUBFLOW_ATTR_FLAGS: u16 = 8;
const MPTCP_SUBFLOW_ATTR_ID_REM: u16 = 9;
const MPTCP_SUBFLOW_ATTR_ID_LOC: u16 = 10;
/// Size of `struct inet_diag_msg` (family, state, timer, retrans, the
/// 48-byte `inet_diag_sockid`, expires, rqueue, wqueue, uid, inode).
const INET_DIAG_MSG_LEN: usize = 72;

/// A NETLINK_SOCK_DIAG socket of one namespace: its dumps list that
/// namespace's TCP sockets, MPTCP subflows with their ULP info.
pub struct SockDiag {
    fd: OwnedFd,
}

/// Subflow flags by `(local, remote)` as `addr:port` strings.
pub type FlagsByAddr = BTreeMap<(String, String), SubflowFlags>;

/// A namespace's sock_diag socket shared by every flow sending from
/// there: one dump per probe tick, however many flows read it (a dump per
/// flow would cost the square of the connections).
pub struct SharedDiag {
    diag: SockDiag,
    last: std::cell::RefCell<Option<(u64, std::rc::Rc<FlagsByAddr>)>>,
}

impl SharedDiag {
    pub fn new(diag: SockDiag) -> SharedDiag {
        SharedDiag { diag, last: std::cell::RefCell::new(None) }
    }

    /// The subflow flags as of probe tick `tick` (dumped on the first call
    /// of the tick).
    pub fn flags(&self, tick: u64) -> Option<std::rc::Rc<FlagsByAddr>> {
        let mut last = self.last.borrow_mut();
        match &*last {
            Some((t, f)) if *t == tick => Some(f.clone()),
            _ => {
                let f = std::rc::Rc::new(self.diag.subflow_flags().ok()?);
                *last = Some((tick, f.clone()));
                Some(f)
            }
        }
    }
}

impl SockDiag {
    pub fn open(ns: &str) -> std::io::Result<SockDiag> {
        sys::in_netns(ns, || {
            // SAFETY: plain socket call.
            let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, NETLINK_SOCK_DIAG) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: a fresh fd we own.
            let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            // A dump never blocks the probe loop for long.
            let tv = libc::timeval { tv_sec: 0, tv_usec: 100_000 };
            sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv, "SO_RCVTIMEO")?;
            Ok(SockDiag { fd })
        })
    }

    /// The MPTCP subflows among the namespace's IPv4 TCP sockets.
    pub fn subflow_flags(&self) -> std::io::Result<FlagsByAddr> {
        let mut req = [0u8; 16 + 56];
        req[0..4].copy_from_slice(&(72u32).to_ne_bytes());
        req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&1u32.to_ne_bytes());
        // struct inet_diag_req_v2: family, protocol, ext, pad, states, sockid.
        req[16] = libc::AF_INET as u8;
        req[17] = libc::IPPROTO_TCP as u8;
        req[18] = INET_DIAG_EXT_INFO;
        // Every state but LISTEN (10): listeners have no subflow info.
        let states: u32 = 0xfff & !(1 << 10);
        req[20..24].copy_from_slice(&states.to_ne_bytes());
        let fd = self.fd.as_raw_fd();
        // SAFETY: req is a valid buffer; the kernel is the default destination.
        if unsafe { libc::send(fd, req.as_ptr() as *const libc::c_void, req.len(), 0) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut out = FlagsByAddr::new();
        let mut buf = vec![0u8; 64 * 1024];
        // A dump of a few sockets is one or two datagrams; bounded anyway.
        for _ in 0..256 {
            // SAFETY: valid buffer.
            let r = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if parse_diag_dump(&buf[..r as usize], &mut out)? {
                return Ok(out);
            }
        }
        Err(std::io::Error::other("sock_diag dump did not end"))
    }
}

fn nl_attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        // NLA_F_NESTED / NLA_F_NET_BYTEORDER are flags, not the type.
        let ty = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let data = &b[4..len];
        b = &b[len.next_multiple_of(4).min(b.len())..];
        Some((ty, data))
    })
}

/// Parses one datagram of a sock_diag dump into `out`; true at NLMSG_DONE.
pub fn parse_diag_dump(mut b: &[u8], out: &mut FlagsByAddr) -> std::io::Result<bool> {
    while b.len() >= 16 {
        let len = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
        let ty = u16::from_ne_bytes([b[4], b[5]]);
        if len < 16 || len > b.len() {
            return Err(std::io::Error::other("sock_diag: truncated message"));
        }
        let payload = &b[16..len];
        match ty {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let e = payload.get(0..4).map_or(0, |s| i32::from_ne_bytes(s.try_into().unwrap()));
                if e != 0 {
                    return Err(std::io::Error::from_raw_os_error(-e));
                }
            }
            SOCK_DIAG_BY_FAMILY if payload.len() >= INET_DIAG_MSG_LEN && payload[0] == libc::AF_INET as u8 => {
                // inet_diag_sockid at 4: sport, dport (BE), src[16], dst[16].
                let id = &payload[4..];
                let (sport, dport) = (u16::from_be_bytes([id[0], id[1]]), u16::from_be_bytes([id[2], id[3]]));
                let local = format!("{}.{}.{}.{}:{sport}", id[4], id[5], id[6], id[7]);
                let remote = format!("{}.{}.{}.{}:{dport}", id[20], id[21], id[22], id[23]);
                let ulp = nl_attrs(&payload[INET_DIAG_MSG_LEN..]).find(|(t, _)| *t == INET_DIAG_ULP_INFO).map(|(_, d)| d);
                let mptcp = ulp.and_then(|u| nl_attrs(u).find(|(t, _)| *t == INET_ULP_INFO_MPTCP).map(|(_, d)| d));
                if let Some(m) = mptcp {
                    let mut f = SubflowFlags::default();
                    for (t, d) in nl_attrs(m) {
                        match (t, d.len()) {
                            (MPTCP_SUBFLOW_ATTR_FLAGS, 4..) => f.flags = u32::from_ne_bytes(d[0..4].try_into().unwrap()),
                            (MPTCP_SUBFLOW_ATTR_ID_REM, 1..) => f.remote_id = d[0],
                            (MPTCP_SUBFLOW_ATTR_ID_LOC, 1..) => f.local_id = d[0],
                            _ => {}
                        }
                    }
                    out.insert((local, remote), f);
                }
            }
            _ => {}
        }
        b = &b[len.next_multiple_of(4).min(b.len())..];
    }
    Ok(false)
}

/// Per-interface byte and packet counters of one namespace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IfCounters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

impl IfCounters {
    /// IP bytes (the simulator's unit): the Ethernet header taken off.
    pub fn rx_ip(&self) -> u64 {
        self.rx_bytes.saturating_sub(14 * self.rx_packets)
    }
    pub fn tx_ip(&self) -> u64 {
        self.tx_bytes.saturating_sub(14 * self.tx_packets)
    }
}

/// `/proc/net/dev` of a namespace, opened once (the file keeps its
/// namespace) and re-read on demand.
pub struct NetDev {
    f: File,
}

impl NetDev {
    pub fn open(ns: &str) -> std::io::Result<NetDev> {
        let f = sys::in_netns(ns, || File::open("/proc/thread-self/net/dev"))?;
        Ok(NetDev { f })
    }
    pub fn read(&mut self) -> BTreeMap<String, IfCounters> {
        let mut s = String::new();
        let _ = self.f.seek(SeekFrom::Start(0));
        let _ = self.f.read_to_string(&mut s);
        parse_net_dev(&s)
    }
}

pub fn parse_net_dev(s: &str) -> BTreeMap<String, IfCounters> {
    let mut m = BTreeMap::new();
    for line in s.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if v.len() >= 10 {
            m.insert(name.trim().to_string(), IfCounters { rx_bytes: v[0], rx_packets: v[1], tx_bytes: v[8], tx_packets: v[9] });
        }
    }
    m
}

/// The MPTcpExt and the TcpExt counters (non-zero ones) of a namespace,
/// from one read of its /proc/net/netstat. TcpExt says how its TCP left
/// slow start (`TCPHystartTrainDetect`, `...TrainCwnd`, the delay pair),
/// recovered from losses, probed.
pub fn netstat_counters(ns: &str) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let s = sys::in_netns(ns, || std::fs::read_to_string("/proc/thread-self/net/netstat")).unwrap_or_default();
    (parse_mptcp_counters(&s), parse_netstat_group(&s, "TcpExt:"))
}

pub fn parse_mptcp_counters(s: &str) -> BTreeMap<String, u64> {
    parse_netstat_group(s, "MPTcpExt:")
}

/// One group of /proc/net/netstat (a line of names, a line of values),
/// the non-zero counters.
fn parse_netstat_group(s: &str, group: &str) -> BTreeMap<String, u64> {
    let lines: Vec<&str> = s.lines().filter(|l| l.starts_with(group)).collect();
    let mut m = BTreeMap::new();
    if lines.len() >= 2 {
        for (k, v) in lines[0].split_whitespace().zip(lines[1].split_whitespace()).skip(1) {
            if let Ok(v) = v.parse::<u64>() {
                if v != 0 {
                    m.insert(k.to_string(), v);
                }
            }
        }
    }
    m
}

/// A pcap of one interface: AF_PACKET in the node's namespace, both
/// directions, kernel timestamps, written as raw IP with nanosecond
/// timestamps counted from the run's start (like the simulator's).
pub struct Capture {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<u64, String>>>,
}

impl Capture {
    /// Captures `iface` in namespace `ns` into `path`, keeping `snaplen`
    /// bytes of each packet (0: all).
    pub fn start(ns: &str, iface: &str, path: &Path, t0_realtime_ns: u64, snaplen: u32) -> Result<Capture, String> {
        let ifn = iface.to_string();
        let sock = sys::in_netns(ns, move || {
            let s = sys::packet_socket(&ifn, true, 8 << 20)?;
            sys::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1i32, "SO_TIMESTAMPNS")?;
            Ok(s)
        })
        .map_err(|e| format!("capture {ns}:{iface}: {e}"))?;
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let p = path.display().to_string();
        let handle = std::thread::Builder::new()
            .name("mplab-pcap".into())
            .spawn(move || capture_loop(sock, file, t0_realtime_ns, snaplen, &st).map_err(|e| format!("{p}: {e}")))
            .map_err(|e| e.to_string())?;
        Ok(Capture { stop, handle: Some(handle) })
    }

    /// Stops after draining what the socket holds; returns packets written.
    pub fn finish(mut self) -> Result<u64, String> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().map(|h| h.join().unwrap_or_else(|_| Err("capture thread panicked".into()))).unwrap_or(Ok(0))
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn capture_loop(sock: OwnedFd, file: File, t0: u64, snaplen: u32, stop: &AtomicBool) -> Result<u64, String> {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    // 0: whole packets, under the header's default limit (as the simulator's pcaps).
    let snaplen = if snaplen == 0 { PcapHeader::default().snaplen } else { snaplen };
    let header = PcapHeader { datalink: pcap_file::DataLink::RAW, ts_resolution: pcap_file::TsResolution::NanoSecond, snaplen, ..Default::default() };
    let mut w = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| e.to_string())?;
    let fd = sock.as_raw_fd();
    let mut buf = vec![0u8; 65536];
    let mut cbuf = [0u8; 256];
    let mut n_pkts = 0u64;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: zeroed msghdr is valid; we point it at live buffers.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = cbuf.len();
        // SAFETY: msg describes valid buffers.
        let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
        if r < 0 {
            if stopping {
                break;
            }
            let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
            let _ = sys::poll_in(&mut p, 50_000_000);
            continue;
        }
        let len = r as usize;
        if len < 14 || buf[12..14] != [0x08, 0x00] {
            continue;
        }
        let mut ts = None;
        // SAFETY: walking the control messages the kernel wrote into cbuf.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    ts = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let t = ts.unwrap_or_else(sys::realtime_ns);
        if t < t0 {
            continue;
        }
        let ip = &buf[14..len];
        let kept = &ip[..ip.len().min(snaplen as usize)];
        w.write_packet(&PcapPacket::new(std::time::Duration::from_nanos(t - t0), ip.len() as u32, kept)).map_err(|e| e.to_string())?;
        n_pkts += 1;
    }
    w.into_writer().into_inner().map_err(|e| e.to_string())?.sync_all().ok();
    // The loop drains the socket to EAGAIN before it stops, so the end of
    // the run is in the file; what the socket itself could not queue (its
    // buffer full) is not, and a user's pcap must hold every frame.
    match socket_drops(fd) {
        0 => Ok(n_pkts),
        d => Err(format!("{d} frames dropped by the capture socket (receive buffer full): the pcap is incomplete ({n_pkts} frames written)")),
    }
}

/// Frames an AF_PACKET socket dropped since the last call (PACKET_STATISTICS).
fn socket_drops(fd: std::os::fd::RawFd) -> u32 {
    const PACKET_STATISTICS: libc::c_int = 6;
    // struct tpacket_stats { tp_packets, tp_drops } (linux/if_packet.h).
    let mut st = [0u32; 2];
    let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
    // SAFETY: st is a writable buffer of len bytes.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_PACKET, PACKET_STATISTICS, st.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r == 0 {
        st[1]
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_dev_parses() {
        let s = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n  eth0: 1514000    1000    0    0    0     0          0         0    66000    1000    0    0    0     0       0          0\n";
        let m = parse_net_dev(s);
        let e = m["eth0"];
        assert_eq!((e.rx_bytes, e.rx_packets, e.tx_bytes, e.tx_packets), (1514000, 1000, 66000, 1000));
        assert_eq!(e.rx_ip(), 1500000);
        assert_eq!(e.tx_ip(), 52000);
    }

    #[test]
    fn mptcp_counters_parse() {
        let s = "TcpExt: A B\nTcpExt: 1 2\nMPTcpExt: MPCapableSYNRX MPJoinSynRx MPCapableFallbackACK\nMPTcpExt: 1 0 3\n";
        let m = parse_mptcp_counters(s);
        assert_eq!(m.len(), 2);
        assert_eq!(m["MPCapableSYNRX"], 1);
        assert_eq!(m["MPCapableFallbackACK"], 3);
        let t = parse_netstat_group(s, "TcpExt:");
        assert_eq!(t.len(), 2);
        assert_eq!((t["A"], t["B"]), (1, 2));
    }

    fn sockaddr_in(addr: [u8; 4], port: u16) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        b[2..4].copy_from_slice(&port.to_be_bytes());
        b[4..8].copy_from_slice(&addr);
        b
    }

    /// struct mptcp_full_info as Linux 6.18 writes it back: the sizes it
    /// used (tcp_info trimmed to the kernel's, subflow info to ours), the
    /// real subflow count (3) larger than our arrays (2).
    #[test]
    fn full_info_parses() {
        let (ti_user, sf_user) = (232usize, SFINFO_LEN);
        let mut hdr = vec![0u8; FULL_INFO_HDR + 96];
        for (o, v) in [(0, 248u32), (4, ti_user as u32), (8, 264), (12, sf_user as u32), (16, 3), (20, 2)] {
            hdr[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        }
        let mut sf = vec![0u8; 2 * sf_user];
        let mut ti = vec![0u8; 2 * ti_user];
        for (i, (id, l, r, mss)) in [(1u32, ([10, 0, 0, 1], 40000), ([10, 0, 9, 2], 5001), 1448u32), (3, ([10, 0, 1, 1], 40001), ([10, 0, 9, 2], 5001), 1400)].into_iter().enumerate() {
            let s = &mut sf[i * sf_user..(i + 1) * sf_user];
            s[0..4].copy_from_slice(&id.to_ne_bytes());
            s[8..136].copy_from_slice(&sockaddr_in(l.0, l.1));
            s[136..264].copy_from_slice(&sockaddr_in(r.0, r.1));
            ti[i * ti_user + 16..i * ti_user + 20].copy_from_slice(&mss.to_ne_bytes());
        }
        let v = parse_full_info(&hdr, &sf, &ti).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].id, v[0].local.as_str(), v[0].remote.as_str(), v[0].info.snd_mss), (Some(1), "10.0.0.1:40000", "10.0.9.2:5001", 1448));
        assert_eq!((v[1].id, v[1].local.as_str(), v[1].info.snd_mss), (Some(3), "10.0.1.1:40001", 1400));
        // total_rto lies beyond a 232-byte tcp_info.
        assert_eq!(v[1].info.total_rto, None);
        // Arrays shorter than the sizes claim: refused, not read past.
        assert!(parse_full_info(&hdr, &sf[..300], &ti).is_none());
        assert!(parse_full_info(&hdr[..12], &sf, &ti).is_none());
    }

    fn nla(ty: u16, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(data);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn diag_msg(local: ([u8; 4], u16), remote: ([u8; 4], u16), attrs: &[u8]) -> Vec<u8> {
        let mut m = vec![0u8; INET_DIAG_MSG_LEN];
        m[0] = libc::AF_INET as u8;
        m[1] = 1; // ESTABLISHED
        m[4..6].copy_from_slice(&local.1.to_be_bytes());
        m[6..8].copy_from_slice(&remote.1.to_be_bytes());
        m[8..12].copy_from_slice(&local.0);
        m[24..28].copy_from_slice(&remote.0);
        m.extend_from_slice(attrs);
        let mut h = Vec::new();
        h.extend_from_slice(&((16 + m.len()) as u32).to_ne_bytes());
        h.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        h.extend_from_slice(&0x2u16.to_ne_bytes());
        h.extend_from_slice(&[0u8; 8]);
        h.extend_from_slice(&m);
        h
    }

    /// A sock_diag dump: an MPTCP subflow with BKUP_LOC (a backup
    /// endpoint), one without, a plain TCP socket (no ULP info), DONE.
    #[test]
    fn diag_dump_parses() {
        let sub = |flags: u32, loc: u8, rem: u8| {
            let mut inner = nla(1 /* MPTCP_SUBFLOW_ATTR_TOKEN_REM */, &7u32.to_ne_bytes());
            inner.extend(nla(MPTCP_SUBFLOW_ATTR_FLAGS, &flags.to_ne_bytes()));
            inner.extend(nla(MPTCP_SUBFLOW_ATTR_ID_REM, &[rem]));
            inner.extend(nla(MPTCP_SUBFLOW_ATTR_ID_LOC, &[loc]));
            let mut ulp = nla(1, b"mptcp\0");
            ulp.extend(nla(INET_ULP_INFO_MPTCP | 0x8000, &inner));
            let mut a = nla(2, &[0u8; 8]); // INET_DIAG_INFO, skipped
            a.extend(nla(INET_DIAG_ULP_INFO, &ulp));
            a
        };
        let mut d = diag_msg(([10, 0, 1, 1], 40001), ([10, 0, 9, 2], 5001), &sub(SUBFLOW_FLAG_JOIN_LOC | SUBFLOW_FLAG_BKUP_LOC | SUBFLOW_FLAG_CONNECTED, 2, 0));
        d.extend(diag_msg(([10, 0, 0, 1], 40000), ([10, 0, 9, 2], 5001), &sub(SUBFLOW_FLAG_MCAP_LOC | SUBFLOW_FLAG_MCAP_REM, 0, 0)));
        d.extend(diag_msg(([10, 0, 0, 1], 22), ([10, 0, 9, 2], 50000), &nla(2, &[0u8; 8])));
        let mut out = FlagsByAddr::new();
        assert!(!parse_diag_dump(&d, &mut out).unwrap());
        let done = [20u32.to_ne_bytes().to_vec(), NLMSG_DONE.to_ne_bytes().to_vec(), vec![0u8; 14]].concat();
        assert!(parse_diag_dump(&done, &mut out).unwrap());
        assert_eq!(out.len(), 2);
        let b = out[&("10.0.1.1:40001".to_string(), "10.0.9.2:5001".to_string())];
        assert!(b.backup());
        assert_eq!((b.local_id, b.remote_id), (2, 0));
        assert!(!out[&("10.0.0.1:40000".to_string(), "10.0.9.2:5001".to_string())].backup());
        let rem = SubflowFlags { flags: SUBFLOW_FLAG_BKUP_REM, ..Default::default() };
        assert!(rem.backup());
        // An error answer is an error.
        let err = [20u32.to_ne_bytes().to_vec(), NLMSG_ERROR.to_ne_bytes().to_vec(), vec![0u8; 10], (-libc::EPERM).to_ne_bytes().to_vec()].concat();
        assert_eq!(parse_diag_dump(&err, &mut out).unwrap_err().raw_os_error(), Some(libc::EPERM));
    }

    #[test]
    fn tcp_info_offsets() {
        let mut b = vec![0u8; TCP_INFO_LEN];
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[68..72].copy_from_slice(&20_500u32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[120..128].copy_from_slice(&123u64.to_ne_bytes());
        b[240..242].copy_from_slice(&2u16.to_ne_bytes());
        let t = TcpInfo::parse(&b).unwrap();
        assert_eq!((t.snd_mss, t.rtt_us, t.snd_cwnd, t.bytes_acked, t.total_rto), (1448, 20_500, 10, 123, Some(2)));
        assert_eq!(t.cwnd_bytes(), 14480);
    }
}
