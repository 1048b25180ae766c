//! Hybrid-access Transport Converters (`app = "converter"`, RFC 8803) on
//! the kernel backend: a converter program in the CPE's namespace and one
//! in the HAG's, over Linux's own sockets. The protocol's decisions are
//! [`mplab_backend::convert`]'s, the same as the simulator's
//! (crates/sim/src/world/converter.rs).
//!
//! The CPE: an nftables rule redirects every TCP connection of the class
//! that arrives on a LAN-side interface (not a link to the HAG) for an
//! address not its own to a local listener; the program reads where the
//! client was going (SO_ORIGINAL_DST), opens a kernel MPTCP socket to the
//! HAG and sends the Convert request after the handshake, or, with
//! `fast_open = true`, with `sendto(MSG_FASTOPEN)` so that it rides the SYN
//! (TCP Fast Open without cookies, `net.ipv4.tcp_fastopen` = 0x207 in both
//! gateways). The HAG: an MPTCP listener with TCP_FASTOPEN
//! reads the request, connects with plain TCP to the server, answers with
//! the server's options (TCP_INFO) or an Error TLV, and relays.
//!
//! One thread per converted connection and gateway, relaying both
//! directions with poll; every loop ends at the run's hard deadline or on
//! the abort flag.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use mplab_backend::convert::{self, ConverterSummary, Decision, Policy, Reply, ServerOptions};
use mplab_scenario::network::{App, Flow, Network, NodeKind, Transport};
use mplab_wire::convert::{ConvertMessage, ErrorTlv, HEADER_LEN};

use crate::apps::{Clock, FlowState};
use crate::sys;
use crate::userspace::bridge::Exchange;

/// Fast Open without cookies, as client (1 | 4) and as server (2 | 0x200):
/// the first SYN carries the request.
const FASTOPEN: &str = "519";
/// Linux's SO_ORIGINAL_DST (SOL_IP): where a redirected connection was going.
const SO_ORIGINAL_DST: libc::c_int = 80;
/// Bytes a relay holds per direction (a proxy's buffer).
const RELAY_BUF: usize = 64 * 1024;

/// The converters of one flow before the run.
pub struct Converter {
    f: Flow,
    /// The request rides the carrier's SYN.
    fast_open: bool,
    cpe_ns: String,
    hag_ns: String,
    /// The CPE's listener the redirect feeds, and the HAG's carriers.
    cpe: OwnedFd,
    hag: Listener,
    /// The CPE's carriers on mplab's stack: dialled through its host loop.
    dialer: Option<Arc<Exchange>>,
    policy: Policy,
    /// TCP settings for the HAG's connections to servers, by destination
    /// (the scenario flow going there).
    servers: Vec<Flow>,
}

/// Where the HAG's carriers come from: a kernel MPTCP listener, or its
/// host loop on mplab's stack.
enum Listener {
    Kernel(OwnedFd),
    Mplab(Arc<Exchange>),
}

impl Listener {
    /// The next carrier, waiting at most `wait_ns`.
    fn accept(&self, wait_ns: u64) -> Option<OwnedFd> {
        match self {
            Listener::Mplab(ex) => ex.accept(wait_ns),
            Listener::Kernel(l) => {
                let mut p = [libc::pollfd { fd: l.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
                if sys::poll_in(&mut p, wait_ns).unwrap_or(0) == 0 {
                    return None;
                }
                // SAFETY: accept on a listening socket with a connection ready.
                let c = unsafe { libc::accept4(l.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
                // SAFETY: fresh fd.
                (c >= 0).then(|| unsafe { OwnedFd::from_raw_fd(c) })
            }
        }
    }
}

/// The exchanges of a converter flow whose gateways run mplab's stack
/// (crates/emu/src/userspace/bridge.rs): the CPE's, the HAG's.
#[derive(Default)]
pub struct MplabCarriers {
    pub cpe: Option<Arc<Exchange>>,
    pub hag: Option<Arc<Exchange>>,
}

/// Sets up converter flow `f`: Fast Open, the CPE's redirect and
/// listener, the HAG's listener (the gateways in `mplab` take their
/// carriers from mplab's stack instead).
pub fn prepare(net: &Network, f: &Flow, cpe_ns: &str, hag_ns: &str, mplab: MplabCarriers) -> Result<Converter, String> {
    let App::Converter { class, refuse, fast_open } = &f.app else { return Err(format!("flow {} is not a converter", f.name)) };
    let kernel_ns = [(cpe_ns, mplab.cpe.is_none()), (hag_ns, mplab.hag.is_none())];
    for ns in kernel_ns.iter().filter(|k| k.1).map(|k| k.0) {
        sys::in_netns(ns, || sys::sysctl_write("net.ipv4.tcp_fastopen", FASTOPEN)).map_err(|e| format!("net.ipv4.tcp_fastopen in {ns}: {e}"))?;
    }
    let cpe = &net.nodes[f.from];
    // Not the access links, nor the TUN of mplab's stack (its carriers).
    let mut access: Vec<String> = cpe.interfaces.iter().filter(|i| i.peer == f.to).map(|i| format!("\"{}\"", i.name)).collect();
    access.push(format!("\"{}\"", crate::userspace::tun::TUN_NAME));
    let own: Vec<String> = cpe.interfaces.iter().map(|i| i.addr.to_string()).collect();
    let ports: Vec<String> = match class.ports {
        None => vec![String::new()],
        Some((a, b)) => vec![format!("tcp dport {a}-{b} "), format!("tcp sport {a}-{b} ")],
    };
    let nft = |args: &str| sys::run(&["ip", "netns", "exec", cpe_ns, "nft", args]);
    nft("add table ip mplab_convert")?;
    nft("add chain ip mplab_convert pre { type nat hook prerouting priority dstnat ; policy accept ; }")?;
    for p in ports {
        nft(&format!("add rule ip mplab_convert pre iifname != {{ {} }} ip daddr != {{ {} }} meta l4proto tcp {p}redirect to :{}", access.join(", "), own.join(", "), f.dport))?;
    }
    let mut lan = f.clone();
    lan.transport = Transport::TCP;
    lan.mptcp = None;
    let cpe_sock = crate::apps::listen(cpe_ns, &lan).map_err(|e| format!("converter listener on {}: {e}", cpe.name))?;
    let hag = match mplab.hag {
        Some(ex) => Listener::Mplab(ex),
        None => {
            let l = crate::apps::listen(hag_ns, f).map_err(|e| format!("converter listener on {}: {e}", net.nodes[f.to].name))?;
            sys::setsockopt(l.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_FASTOPEN, 16i32, "TCP_FASTOPEN").map_err(|e| e.to_string())?;
            Listener::Kernel(l)
        }
    };
    let own = [f.from, f.to].iter().flat_map(|&n| net.nodes[n].interfaces.iter().map(|i| i.addr)).collect();
    let servers = net.flows.iter().filter(|g| net.nodes[g.to].kind == NodeKind::Host && g.transport.over_tcp()).cloned().collect();
    Ok(Converter { fast_open: *fast_open, f: f.clone(), cpe_ns: cpe_ns.into(), hag_ns: hag_ns.into(), cpe: cpe_sock, hag, dialer: mplab.cpe, policy: Policy { refuse: refuse.clone(), own }, servers })
}

/// Runs both gateways' programs until the run ends.
pub fn run(conv: Converter, st: Arc<FlowState>, clk: Clock) {
    if !clk.wait_start() {
        return;
    }
    let conv = Arc::new(conv);
    let (c, s, k) = (conv.clone(), st.clone(), clk.clone());
    let hag = std::thread::Builder::new().name("conv-hag".into()).spawn(move || {
        accept_loop(&c.hag, &k, |fd| {
            let (c, s, k) = (c.clone(), s.clone(), k.clone());
            std::thread::Builder::new().name("conv-hag-c".into()).spawn(move || serve_hag(&c, fd, &s, &k)).ok()
        })
    });
    let cpe_listener = Listener::Kernel(conv.cpe.try_clone().expect("dup of the CPE's listener"));
    let cpe = accept_loop(&cpe_listener, &clk, |fd| {
        let (c, s, k) = (conv.clone(), st.clone(), clk.clone());
        std::thread::Builder::new().name("conv-cpe-c".into()).spawn(move || serve_cpe(&c, fd, &s, &k)).ok()
    });
    let hag = hag.ok().and_then(|h| h.join().ok()).unwrap_or_default();
    for h in cpe.into_iter().chain(hag) {
        let _ = h.join();
    }
}

/// Accepts connections until the run ends; `spawn` starts a handler.
fn accept_loop(l: &Listener, clk: &Clock, mut spawn: impl FnMut(OwnedFd) -> Option<std::thread::JoinHandle<()>>) -> Vec<std::thread::JoinHandle<()>> {
    let mut hs = Vec::new();
    while !clk.over() {
        if let Some(h) = l.accept(50_000_000).and_then(&mut spawn) {
            hs.push(h);
        }
    }
    hs
}

fn summary(st: &FlowState, f: impl FnOnce(&mut ConverterSummary)) {
    if let Ok(mut t) = st.tunnel.lock() {
        f(t.converter.get_or_insert_with(Default::default));
    }
}

/// The CPE's side of one client connection.
fn serve_cpe(c: &Converter, client: OwnedFd, st: &FlowState, clk: &Clock) {
    summary(st, |s| s.connections += 1);
    let Some(dst) = original_dst(client.as_raw_fd()) else {
        crate::apps::abortive_close(&client);
        return;
    };
    let request = convert::request(dst);
    let Some((up, fast_open)) = open_carrier(c, &request, clk) else {
        crate::apps::abortive_close(&client);
        return;
    };
    summary(st, |s| {
        s.message_bytes += request.len() as u64;
        s.fast_open += u64::from(fast_open);
    });
    // The answer, then the server's bytes.
    let Some((answer, rest)) = read_message(up.as_raw_fd(), clk) else {
        crate::apps::abortive_close(&client);
        crate::apps::abortive_close(&up);
        return;
    };
    match convert::read_reply(&answer) {
        Reply::Connected { .. } => {}
        _ => {
            // Refused or failed: the client's connection is reset.
            crate::apps::abortive_close(&client);
            return;
        }
    }
    let (up_bytes, down_bytes) = relay(client.as_raw_fd(), up.as_raw_fd(), Vec::new(), rest, clk);
    summary(st, |s| {
        s.bytes_up += up_bytes;
        s.bytes_down += down_bytes;
    });
    if clk.over() {
        crate::apps::abortive_close(&client);
        crate::apps::abortive_close(&up);
    }
}

/// The CPE's carrier to the HAG, led by `request`; whether the request
/// rode the SYN. On mplab's stack the host loop dials it, the request
/// written before the SYN (which carries it when `fast_open` is on).
fn open_carrier(c: &Converter, request: &[u8], clk: &Clock) -> Option<(OwnedFd, bool)> {
    if let Some(ex) = &c.dialer {
        return ex.dial(request.to_vec(), clk);
    }
    let mut carrier = c.f.clone();
    carrier.sport = 0;
    let up = crate::apps::client_socket(&c.cpe_ns, &carrier).ok()?;
    let hag = SocketAddrV4::new(c.f.dst, c.f.dport);
    let fast_open = c.fast_open && send_in_syn(&up, request, hag);
    if !fast_open && (!connect(&up, hag, clk) || !write_all(up.as_raw_fd(), request, clk)) {
        return None;
    }
    Some((up, fast_open))
}

/// The HAG's side of one carrier.
fn serve_hag(c: &Converter, down: OwnedFd, st: &FlowState, clk: &Clock) {
    let fd = down.as_raw_fd();
    let mut head = Vec::new();
    let decision = loop {
        let d = c.policy.judge(&head);
        if d != Decision::NeedMore {
            break d;
        }
        if head.len() >= mplab_wire::convert::MAX_MESSAGE_LEN || !read_some(fd, &mut head, clk) {
            crate::apps::abortive_close(&down);
            return;
        }
    };
    match decision {
        Decision::Connect { dst, consumed } => {
            let rest = head.split_off(consumed);
            match connect_server(c, dst, clk) {
                Ok((out, server)) => {
                    let reply = convert::reply_ok(server);
                    summary(st, |s| {
                        s.converted += 1;
                        s.message_bytes += reply.len() as u64;
                    });
                    if write_all(fd, &reply, clk) {
                        relay(fd, out.as_raw_fd(), rest, Vec::new(), clk);
                    }
                    if clk.over() {
                        crate::apps::abortive_close(&out);
                        crate::apps::abortive_close(&down);
                    }
                }
                Err(e) => {
                    let reply = convert::reply_error(e.clone());
                    summary(st, |s| {
                        s.count_error(e.code());
                        s.message_bytes += reply.len() as u64;
                    });
                    write_all(fd, &reply, clk);
                }
            }
        }
        Decision::Answer { reply, code } => {
            summary(st, |s| {
                if let Some(code) = code {
                    s.count_error(code);
                }
                s.message_bytes += reply.len() as u64;
            });
            write_all(fd, &reply, clk);
        }
        Decision::Reset { .. } => {
            summary(st, |s| s.resets += 1);
            crate::apps::abortive_close(&down);
        }
        Decision::NeedMore => {}
    }
}

/// The HAG's TCP connection to `dst`, or the Error TLV that answers why
/// there is none.
fn connect_server(c: &Converter, dst: SocketAddrV4, clk: &Clock) -> Result<(OwnedFd, ServerOptions), ErrorTlv> {
    let mut f = c.servers.iter().find(|g| g.dst == *dst.ip() && g.dport == dst.port()).cloned().unwrap_or_else(|| c.f.clone());
    f.transport = Transport::TCP;
    f.mptcp = None;
    f.src = Ipv4Addr::UNSPECIFIED;
    f.sport = 0;
    let s = crate::apps::client_socket(&c.hag_ns, &f).map_err(|_| ErrorTlv::ResourceExceeded { retry_after_s: 0 })?;
    let sa = sockaddr(dst);
    // SAFETY: valid sockaddr; the socket's SO_SNDTIMEO bounds the wait.
    let r = unsafe { libc::connect(s.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
    if r < 0 {
        let e = std::io::Error::last_os_error().raw_os_error();
        if !matches!(e, Some(libc::EINPROGRESS) | Some(libc::EAGAIN) | Some(libc::EALREADY)) || !wait_connected(&s, clk) {
            let err = sys::getsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR).ok().filter(|&e| e != 0).or(e);
            return Err(match err {
                Some(libc::ECONNREFUSED) | Some(libc::ECONNRESET) => ErrorTlv::ConnectionReset,
                Some(libc::ENETUNREACH) => ErrorTlv::DestinationUnreachable { icmp_code: 0 },
                _ => ErrorTlv::DestinationUnreachable { icmp_code: 1 },
            });
        }
    }
    let o = server_options(s.as_raw_fd());
    Ok((s, o))
}

/// The options the server's SYN+ACK agreed to, from TCP_INFO: window
/// scale and SACK as negotiated; the MSS the server announced is the
/// segment size plus the timestamps' 12 bytes when they are on.
fn server_options(fd: RawFd) -> ServerOptions {
    let mut b = [0u8; crate::probes::TCP_INFO_LEN];
    if sys::getsockopt_buf(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut b).is_err() {
        return ServerOptions::default();
    }
    let options = b[5];
    let snd_wscale = b[6] & 0x0f;
    let snd_mss = u32::from_ne_bytes([b[16], b[17], b[18], b[19]]);
    let ts = options & 1 != 0;
    ServerOptions {
        mss: u16::try_from(snd_mss + if ts { 12 } else { 0 }).ok(),
        wscale: (options & 4 != 0).then_some(snd_wscale),
        sack_permitted: options & 2 != 0,
    }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: a.port().to_be(), sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() }, sin_zero: [0; 8] }
}

/// Where a redirected connection was going.
fn original_dst(fd: RawFd) -> Option<SocketAddrV4> {
    let mut b = [0u8; std::mem::size_of::<libc::sockaddr_in>()];
    sys::getsockopt_buf(fd, libc::SOL_IP, SO_ORIGINAL_DST, &mut b).ok()?;
    Some(SocketAddrV4::new(Ipv4Addr::new(b[4], b[5], b[6], b[7]), u16::from_be_bytes([b[2], b[3]])))
}

/// Connects with the request in the SYN (TCP Fast Open); false when the
/// kernel would not put it there (the request then follows the handshake).
fn send_in_syn(s: &OwnedFd, request: &[u8], to: SocketAddrV4) -> bool {
    let sa = sockaddr(to);
    let fd = s.as_raw_fd();
    // Non-blocking: the call returns once the SYN with the data is out.
    // SAFETY: fcntl on a valid fd.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    // SAFETY: valid buffer and sockaddr.
    let r = unsafe { libc::sendto(fd, request.as_ptr() as *const libc::c_void, request.len(), libc::MSG_FASTOPEN | libc::MSG_NOSIGNAL, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    r == request.len() as isize
}

/// Connects (a Fast Open attempt that fell back has already started it).
fn connect(s: &OwnedFd, to: SocketAddrV4, clk: &Clock) -> bool {
    let sa = sockaddr(to);
    // SAFETY: valid sockaddr; SO_SNDTIMEO bounds the wait.
    let r = unsafe { libc::connect(s.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
    let e = std::io::Error::last_os_error().raw_os_error();
    r == 0 || e == Some(libc::EISCONN) || (matches!(e, Some(libc::EINPROGRESS) | Some(libc::EALREADY) | Some(libc::EAGAIN)) && wait_connected(s, clk))
}

/// Waits for a connect in progress; false if it failed or the run ended.
fn wait_connected(s: &OwnedFd, clk: &Clock) -> bool {
    while !clk.over() {
        let mut p = [libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLOUT, revents: 0 }];
        if sys::poll_in(&mut p, 50_000_000).unwrap_or(0) == 0 {
            continue;
        }
        return sys::getsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR).is_ok_and(|e| e == 0) && p[0].revents & (libc::POLLERR | libc::POLLHUP) == 0;
    }
    false
}

/// Appends what the socket has (waiting for it); false at the end of the
/// stream, on an error or at the end of the run.
fn read_some(fd: RawFd, into: &mut Vec<u8>, clk: &Clock) -> bool {
    let mut b = [0u8; 2048];
    while !clk.over() {
        let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
        if sys::poll_in(&mut p, 50_000_000).unwrap_or(0) == 0 {
            continue;
        }
        // SAFETY: valid buffer.
        let n = unsafe { libc::recv(fd, b.as_mut_ptr() as *mut libc::c_void, b.len(), libc::MSG_DONTWAIT) };
        if n > 0 {
            into.extend_from_slice(&b[..n as usize]);
            return true;
        }
        if n == 0 || !matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
            return false;
        }
    }
    false
}

/// One Convert message off the front of the stream, and what followed it.
fn read_message(fd: RawFd, clk: &Clock) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut b = Vec::new();
    loop {
        if b.len() >= HEADER_LEN {
            let n = ConvertMessage::message_len(&b).ok()?;
            if b.len() >= n {
                let rest = b.split_off(n);
                return Some((b, rest));
            }
        }
        if !read_some(fd, &mut b, clk) {
            return None;
        }
    }
}

fn write_all(fd: RawFd, mut b: &[u8], clk: &Clock) -> bool {
    while !b.is_empty() {
        if clk.over() {
            return false;
        }
        // SAFETY: valid buffer.
        let n = unsafe { libc::send(fd, b.as_ptr() as *const libc::c_void, b.len(), libc::MSG_NOSIGNAL) };
        if n > 0 {
            b = &b[n as usize..];
        } else if !matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
            return false;
        }
    }
    true
}

/// Relays between `a` and `b` until both directions ended (each
/// half-close passed on with shutdown once its bytes went) or the run
/// ended; `to_b` and `to_a` are bytes already read for each side.
/// Returns the bytes written to `b` and to `a`.
fn relay(a: RawFd, b: RawFd, mut to_b: Vec<u8>, mut to_a: Vec<u8>, clk: &Clock) -> (u64, u64) {
    let (mut sent_b, mut sent_a) = (0u64, 0u64);
    let (mut a_eof, mut b_eof) = (false, false);
    let (mut b_shut, mut a_shut) = (false, false);
    let mut buf = vec![0u8; RELAY_BUF];
    while !clk.over() && !(a_shut && b_shut) {
        let want = |eof: bool, pending: &Vec<u8>| if !eof && pending.len() < RELAY_BUF { libc::POLLIN } else { 0 };
        let mut p = [
            libc::pollfd { fd: a, events: want(a_eof, &to_b) | if to_a.is_empty() { 0 } else { libc::POLLOUT }, revents: 0 },
            libc::pollfd { fd: b, events: want(b_eof, &to_a) | if to_b.is_empty() { 0 } else { libc::POLLOUT }, revents: 0 },
        ];
        if sys::poll_in(&mut p, 50_000_000).unwrap_or(0) == 0 {
            continue;
        }
        for (i, (fd, eof, pending)) in [(a, &mut a_eof, &mut to_b), (b, &mut b_eof, &mut to_a)].into_iter().enumerate() {
            if p[i].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && !*eof && pending.len() < RELAY_BUF {
                let room = RELAY_BUF - pending.len();
                // SAFETY: valid buffer of at least `room` bytes.
                let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, room, libc::MSG_DONTWAIT) };
                if n > 0 {
                    pending.extend_from_slice(&buf[..n as usize]);
                } else if n == 0 || !matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    *eof = true;
                }
            }
        }
        for (fd, pending, sent) in [(b, &mut to_b, &mut sent_b), (a, &mut to_a, &mut sent_a)] {
            if !pending.is_empty() {
                // SAFETY: valid buffer.
                let n = unsafe { libc::send(fd, pending.as_ptr() as *const libc::c_void, pending.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
                if n > 0 {
                    pending.drain(..n as usize);
                    *sent += n as u64;
                } else if !matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    pending.clear();
                }
            }
        }
        // A side that ended and whose bytes all went on: half-close the other.
        if a_eof && to_b.is_empty() && !b_shut {
            // SAFETY: valid fd.
            unsafe { libc::shutdown(b, libc::SHUT_WR) };
            b_shut = true;
        }
        if b_eof && to_a.is_empty() && !a_shut {
            // SAFETY: valid fd.
            unsafe { libc::shutdown(a, libc::SHUT_WR) };
            a_shut = true;
        }
    }
    (sent_b, sent_a)
}

#[cfg(test)]
mod tests {
    //! The HAG's program on bytes: a socket pair stands for the carrier,
    //! so what a malformed or refused request gets back is read off the
    //! other end, as a CPE would read it.

    use super::*;
    use mplab_wire::convert::ErrorCode;

    const SCENARIO: &str = "name = \"c\"\nduration = \"5s\"\n[[nodes]]\nname = \"client\"\n[[nodes]]\nname = \"cpe\"\nkind = \"router\"\n[[nodes]]\nname = \"hag\"\nkind = \"router\"\n[[nodes]]\nname = \"server\"\n[[links]]\na = \"client\"\nb = \"cpe\"\nrate = \"1Gbit\"\n[[links]]\na = \"cpe\"\nb = \"hag\"\nrate = \"10Mbit\"\n[[links]]\na = \"hag\"\nb = \"server\"\nrate = \"1Gbit\"\n[[flows]]\nfrom = \"cpe\"\nto = \"hag\"\ntransport = \"mptcp\"\napp = \"converter\"\nrefuse = [\"192.0.2.0/24\"]\n";

    fn pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: a fresh pair of connected sockets.
        assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }, 0);
        // SAFETY: both fds are fresh and ours.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn converter() -> Converter {
        let net = mplab_scenario::Scenario::from_str(SCENARIO, "c.toml").unwrap().resolve().unwrap();
        let f = net.flows[0].clone();
        let App::Converter { refuse, .. } = &f.app else { unreachable!() };
        let own = [f.from, f.to].iter().flat_map(|&n| net.nodes[n].interfaces.iter().map(|i| i.addr)).collect();
        let (cpe, hag) = pair();
        Converter { fast_open: true, policy: Policy { refuse: refuse.clone(), own }, f, cpe_ns: String::new(), hag_ns: String::new(), cpe, hag: Listener::Kernel(hag), dialer: None, servers: Vec::new() }
    }

    /// Sends `request` as the CPE would and returns what the HAG answered
    /// before closing, and its counters.
    fn exchange(request: &[u8]) -> (Vec<u8>, ConverterSummary) {
        let c = converter();
        let (cpe_end, hag_end) = pair();
        let clk = Clock { t0: std::time::Instant::now(), end_ns: 5_000_000_000, hard_ns: 5_000_000_000, abort: Arc::new(std::sync::atomic::AtomicBool::new(false)), poll_ns: 100_000_000 };
        let st = Arc::new(FlowState::default());
        assert!(write_all(cpe_end.as_raw_fd(), request, &clk));
        // SAFETY: valid fd; the request is all there is.
        unsafe { libc::shutdown(cpe_end.as_raw_fd(), libc::SHUT_WR) };
        let (st2, clk2) = (st.clone(), clk.clone());
        std::thread::spawn(move || serve_hag(&c, hag_end, &st2, &clk2)).join().unwrap();
        let mut answer = Vec::new();
        while read_some(cpe_end.as_raw_fd(), &mut answer, &clk) {}
        let s = st.tunnel.lock().unwrap().converter.clone().unwrap_or_default();
        (answer, s)
    }

    fn dst(ip: [u8; 4]) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::from(ip), 80)
    }

    #[test]
    fn not_a_convert_message_is_reset_without_an_answer() {
        let (answer, s) = exchange(b"GET / HTTP/1.1\r\n\r\n");
        assert!(answer.is_empty());
        assert_eq!((s.resets, s.converted), (1, 0));
    }

    #[test]
    fn a_bad_version_gets_unsupported_version_listing_1() {
        let mut r = convert::request(dst([10, 0, 9, 2]));
        r[0] = 2;
        let (answer, s) = exchange(&r);
        let m = ConvertMessage::decode(&answer).unwrap();
        assert_eq!(m.error_tlv(), Some(&ErrorTlv::UnsupportedVersion { versions: vec![1] }));
        assert_eq!(s.errors.get("Unsupported Version (0)"), Some(&1));
    }

    #[test]
    fn a_bad_length_and_an_unknown_tlv_are_answered() {
        let mut short = convert::request(dst([10, 0, 9, 2]));
        short[1] = 3; // the Total Length ends inside the Connect TLV
        let (answer, _) = exchange(&short);
        assert_eq!(convert::read_reply(&answer), Reply::Refused { code: ErrorCode::MALFORMED_MESSAGE });
        let mut unknown = convert::request(dst([10, 0, 9, 2]));
        unknown.extend_from_slice(&[0xc1, 1, 0, 0]);
        unknown[1] += 1;
        let (answer, s) = exchange(&unknown);
        assert_eq!(convert::read_reply(&answer), Reply::Refused { code: ErrorCode::UNSUPPORTED_MESSAGE });
        assert_eq!(s.errors.get("Unsupported Message (2)"), Some(&1));
    }

    #[test]
    fn refused_destinations_get_not_authorized() {
        for ip in [[192, 0, 2, 9], [0, 0, 0, 0]] {
            let (answer, s) = exchange(&convert::request(dst(ip)));
            assert_eq!(convert::read_reply(&answer), Reply::Refused { code: ErrorCode::NOT_AUTHORIZED }, "{ip:?}");
            assert_eq!(s.errors.get("Not Authorized (32)"), Some(&1));
        }
    }

    #[test]
    fn a_truncated_request_then_close_ends_quietly() {
        let r = convert::request(dst([10, 0, 9, 2]));
        let (answer, s) = exchange(&r[..10]);
        assert!(answer.is_empty());
        assert_eq!(s, ConverterSummary::default());
    }
}
