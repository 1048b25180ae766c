//! A TUN device inside a scenario host's namespace that carries every
//! address of that host to mplab's stack.
//!
//! The host's addresses stay on its veths (so ARP, the scenario's routes
//! and per-source policy tables work unchanged), but a policy rule placed
//! before the `local` table sends every TCP (and SCTP) packet arriving on a scenario
//! interface to table 250, whose default route is the TUN: the kernel
//! forwards those packets into the TUN instead of delivering them to its
//! own TCP (which would answer with RSTs). Packets mplab writes into the
//! TUN carry a local source address; `accept_local` lets the kernel
//! forward them out of the right veth by the normal (policy) routes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use mplab_scenario::network::Network;

use crate::{sys, topo};

/// Routing table holding the TUN's default route.
pub const TUN_TABLE: u32 = 250;
/// Name of the TUN device of a host.
pub const TUN_NAME: &str = "mptun0";

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `struct virtio_net_hdr` (no mergeable buffers): what precedes every
/// packet on a TUN opened with `IFF_VNET_HDR`.
pub const VNET_HDR_LEN: usize = 10;
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// An open TUN device (non-blocking); closing it removes the device.
pub struct Tun {
    fd: OwnedFd,
    pub name: String,
    /// The namespace it lives in (names the host's control file,
    /// [`super::control::control_path`]).
    pub ns: Option<String>,
    /// Opened with `IFF_VNET_HDR`: writes may be TCP super-segments that
    /// the kernel splits (GSO) after routing them once.
    vnet: bool,
}

impl Tun {
    /// Creates TUN `name` in the calling thread's namespace.
    pub fn create_here(name: &str) -> io::Result<Tun> {
        // MPLAB_US_GSO=0: one write per segment (no virtio-net header).
        let vnet = std::env::var("MPLAB_US_GSO").map_or(true, |v| v != "0");
        Tun::create_with(name, vnet)
    }

    /// Creates TUN `name` here, without the virtio-net header: whole
    /// packets in and out (a tunnel gateway's device).
    pub fn create_plain(name: &str) -> io::Result<Tun> {
        Tun::create_with(name, false)
    }

    fn create_with(name: &str, vnet: bool) -> io::Result<Tun> {
        let path = b"/dev/net/tun\0";
        // SAFETY: valid C string.
        let fd = unsafe { libc::open(path.as_ptr() as *const libc::c_char, libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")));
        }
        // SAFETY: fresh fd.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let flags = IFF_TUN | IFF_NO_PI | if vnet { IFF_VNET_HDR } else { 0 };
        let mut req = IfReq { name: [0; 16], flags, _pad: [0; 22] };
        let n = name.len().min(15);
        req.name[..n].copy_from_slice(&name.as_bytes()[..n]);
        // SAFETY: TUNSETIFF with a valid ifreq.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")));
        }
        Ok(Tun { fd, name: name.to_string(), ns: None, vnet })
    }

    /// Creates the TUN of a host in namespace `ns` and routes the host's
    /// TCP into it (see the module docs).
    pub fn attach(net: &Network, node: usize, ns: &str) -> Result<Tun, String> {
        let mut rules = Vec::new();
        for i in &net.nodes[node].interfaces {
            rules.push(format!("rule add priority 5 iif {} ipproto tcp table {TUN_TABLE}", i.name));
            // SCTP too: the host's kernel has none and would answer
            // protocol-unreachable; mplab's SCTP ends read it from the TUN.
            rules.push(format!("rule add priority 6 iif {} ipproto 132 table {TUN_TABLE}", i.name));
        }
        Tun::attach_with(ns, rules)
    }

    /// Creates the TUN of a gateway router on mplab's stack: only its own
    /// connections' TCP goes to the TUN (the hybrid-access flows it ends,
    /// [`super::choice::on_gateway_stack`]), and only from the access links: at
    /// the HAG the segments to the flow's port, at the CPE those from it.
    /// Everything else the router forwards or answers as before.
    pub fn attach_gateway(net: &Network, node: usize, ns: &str) -> Result<Tun, String> {
        let mut rules = Vec::new();
        for f in net.flows.iter().filter(|f| super::choice::on_gateway_stack(f) && (f.from == node || f.to == node)) {
            let (peer, dir) = if f.to == node { (f.from, "dport") } else { (f.to, "sport") };
            for i in net.nodes[node].interfaces.iter().filter(|i| i.peer == peer) {
                rules.push(format!("rule add priority 5 iif {} ipproto tcp {dir} {} table {TUN_TABLE}", i.name, f.dport));
            }
        }
        Tun::attach_with(ns, rules)
    }

    fn attach_with(ns: &str, rules: Vec<String>) -> Result<Tun, String> {
        let ns2 = ns.to_string();
        let mut tun = sys::in_netns(ns, move || {
            let t = Tun::create_here(TUN_NAME)?;
            sys::sysctl_write("net.ipv4.ip_forward", "1")?;
            sys::sysctl_write("net.ipv4.conf.all.accept_local", "1")?;
            sys::sysctl_write(&format!("net.ipv4.conf.{TUN_NAME}.accept_local"), "1")?;
            sys::sysctl_write(&format!("net.ipv4.conf.{TUN_NAME}.rp_filter"), "0")?;
            // No ICMP redirects from the host's kernel for forwarded packets.
            sys::sysctl_write("net.ipv4.conf.all.send_redirects", "0")?;
            Ok(t)
        })
        .map_err(|e| format!("TUN in {ns2}: {e}"))?;
        let mut cmds = vec![
            // A longer queue than the default 500 towards mplab: bursts of
            // ACKs (and data at Gbit/s) while the loop is busy sending.
            format!("link set {TUN_NAME} up mtu 1500 txqueuelen 4000"),
            format!("route replace default dev {TUN_NAME} table {TUN_TABLE}"),
            // Once the host's loop ends and the TUN goes, its route goes
            // with it: the peers' last segments (a kernel sender still
            // retransmitting at the deadline) are dropped here instead of
            // reaching the namespace's own TCP, which would answer with RSTs.
            format!("route add blackhole default table {TUN_TABLE} metric 4000"),
            // The local table after our rules (rule 0 cannot be shadowed),
            // and before a gateway's tunnel rules (40 and on), so that the
            // router's own addresses stay its own.
            "rule add priority 20 table local".to_string(),
            "rule del priority 0 table local".to_string(),
        ];
        cmds.extend(rules);
        topo::ip_batch(Some(ns), &cmds)?;
        tun.ns = Some(ns.to_string());
        Ok(tun)
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Whether [`Tun::send_gso`] is available.
    pub fn gso(&self) -> bool {
        self.vnet
    }

    /// One packet, or None when nothing is queued.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // The kernel's virtio-net header (no offloads were enabled towards
        // us with TUNSETOFFLOAD, so it says nothing: full, checksummed
        // packets) goes to a scratch buffer.
        let mut hdr = [0u8; VNET_HDR_LEN];
        let iov = [
            libc::iovec { iov_base: hdr.as_mut_ptr() as *mut libc::c_void, iov_len: hdr.len() },
            libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() },
        ];
        let iov = if self.vnet { &iov[..] } else { &iov[1..] };
        // SAFETY: valid buffers.
        let r = unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_ptr(), iov.len() as i32) };
        let r = if self.vnet && r >= 0 { (r as usize).saturating_sub(VNET_HDR_LEN) as isize } else { r };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(r as usize))
    }

    /// Writes one IP packet; false when the device queue is full (dropped,
    /// like a full NIC ring: TCP recovers).
    pub fn send(&self, pkt: &[u8]) -> io::Result<bool> {
        self.write_with(&[0u8; VNET_HDR_LEN], pkt)
    }

    /// Writes an IPv4 TCP super-segment whose payload the kernel cuts into
    /// `mss`-byte segments (GSO), copying the IP and TCP headers into each
    /// (sequence numbers advanced, PSH/FIN only on the last, IP ids
    /// incremented). `hdr_len`: IP + TCP header bytes. The TCP checksum
    /// field must hold the pseudo-header sum (see `gso_pseudo_csum`); the
    /// kernel completes each segment's checksum.
    pub fn send_gso(&self, pkt: &[u8], hdr_len: usize, mss: usize) -> io::Result<bool> {
        self.send_partial(pkt, hdr_len, Some(mss))
    }

    /// Writes an IPv4 TCP packet whose TCP checksum field holds only the
    /// pseudo-header sum: the kernel sums the rest (its `csum_partial` is
    /// faster than ours, and a GSO write needs it anyway). `mss`: cut it
    /// into segments of that size (GSO), or send it as it is.
    pub fn send_partial(&self, pkt: &[u8], hdr_len: usize, mss: Option<usize>) -> io::Result<bool> {
        debug_assert!(self.vnet);
        let ihl = (pkt[0] & 0x0f) as usize * 4;
        let mut h = [0u8; VNET_HDR_LEN];
        h[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
        h[1] = if mss.is_some() { VIRTIO_NET_HDR_GSO_TCPV4 } else { 0 };
        h[2..4].copy_from_slice(&(hdr_len as u16).to_le_bytes());
        h[4..6].copy_from_slice(&(mss.unwrap_or(0) as u16).to_le_bytes());
        h[6..8].copy_from_slice(&(ihl as u16).to_le_bytes());
        h[8..10].copy_from_slice(&16u16.to_le_bytes());
        self.write_with(&h, pkt)
    }

    fn write_with(&self, vh: &[u8; VNET_HDR_LEN], pkt: &[u8]) -> io::Result<bool> {
        let iov = [libc::iovec { iov_base: vh.as_ptr() as *mut libc::c_void, iov_len: vh.len() }, libc::iovec { iov_base: pkt.as_ptr() as *mut libc::c_void, iov_len: pkt.len() }];
        let iov = if self.vnet { &iov[..] } else { &iov[1..] };
        // SAFETY: valid buffers; the kernel only reads them.
        let r = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), iov.len() as i32) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ENOBUFS) => Ok(false),
                _ => Err(e),
            };
        }
        Ok(true)
    }
}
