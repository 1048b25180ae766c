//! Probes of a kernel run: interface counters (/proc/net/dev of each
//! namespace), TCP_INFO / MPTCP_TCPINFO / MPTCP_SUBFLOW_ADDRS of the
//! senders, MPTcpExt counters, and pcaps through AF_PACKET.

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

pub fn tcp_info(fd: RawFd) -> Option<TcpInfo> {
    let mut b = [0u8; TCP_INFO_LEN];
    let n = sys::getsockopt_buf(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut b).ok()?;
    TcpInfo::parse(&b[..n])
}

/// One subflow of an MPTCP connection as the kernel reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubflowInfo {
    pub local: String,
    pub remote: String,
    pub info: TcpInfo,
}

fn sockaddr_at(b: &[u8]) -> String {
    // struct sockaddr_in: family (2), port (2, BE), addr (4)
    if b.len() < 8 || u16::from_ne_bytes([b[0], b[1]]) != libc::AF_INET as u16 {
        return "?".into();
    }
    format!("{}.{}.{}.{}:{}", b[4], b[5], b[6], b[7], u16::from_be_bytes([b[2], b[3]]))
}

/// The subflows of an MPTCP socket (MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS),
/// or None when the socket is not (or no longer) MPTCP.
pub fn mptcp_subflows(fd: RawFd) -> Option<Vec<SubflowInfo>> {
    const HDR: usize = 16;
    const MAX: usize = 16;
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
        out.push(SubflowInfo { local: sockaddr_at(&a[0..]), remote: sockaddr_at(a.get(128..).unwrap_or(&[])), info: TcpInfo::parse(t).unwrap_or_default() });
    }
    Some(out)
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

/// MPTcpExt counters (non-zero ones) from /proc/net/netstat of a namespace.
pub fn mptcp_counters(ns: &str) -> BTreeMap<String, u64> {
    let s = sys::in_netns(ns, || std::fs::read_to_string("/proc/thread-self/net/netstat")).unwrap_or_default();
    parse_mptcp_counters(&s)
}

pub fn parse_mptcp_counters(s: &str) -> BTreeMap<String, u64> {
    let lines: Vec<&str> = s.lines().filter(|l| l.starts_with("MPTcpExt:")).collect();
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
    pub fn start(ns: &str, iface: &str, path: &Path, t0_realtime_ns: u64) -> Result<Capture, String> {
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
            .spawn(move || capture_loop(sock, file, t0_realtime_ns, &st).map_err(|e| format!("{p}: {e}")))
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

fn capture_loop(sock: OwnedFd, file: File, t0: u64, stop: &AtomicBool) -> Result<u64, String> {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let header = PcapHeader { datalink: pcap_file::DataLink::RAW, ts_resolution: pcap_file::TsResolution::NanoSecond, ..Default::default() };
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
        w.write_packet(&PcapPacket::new(std::time::Duration::from_nanos(t - t0), ip.len() as u32, ip)).map_err(|e| e.to_string())?;
        n_pkts += 1;
    }
    w.into_writer().into_inner().map_err(|e| e.to_string())?.sync_all().ok();
    Ok(n_pkts)
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
