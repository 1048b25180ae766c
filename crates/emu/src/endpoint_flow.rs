//! One end of a flow whose transport is carried in UDP and offers a byte
//! stream (`transport = "quic"`, and any such transport with an engine) on
//! the real-packet backends: the backend's transport endpoint, the one the
//! simulator drives ([`mplab_backend::transport`]), run by the run's clock
//! over a kernel UDP socket in the host's namespace, with the flow's stream
//! application on top. Each datagram becomes the model packet the endpoint
//! reads (its bytes), and each packet it writes goes out as a datagram.
//! Every loop ends at the run's hard deadline or on the abort flag.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::apps::App as BackendApp;
use mplab_backend::packet::Packet;
use mplab_backend::transport::{engine, Endpoint, Engine};
use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};
use mplab_wire::TcpHeader;

use crate::apps::{progress, report, Clock, FlowState};
use crate::sys;

fn sockaddr(a: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: port.to_be(), sin_addr: libc::in_addr { s_addr: u32::from(a).to_be() }, sin_zero: [0; 8] }
}

const SA_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// Datagrams read, or written, in one turn of the loop at most.
const BATCH: usize = 1024;

/// Reads one datagram: its length, source, source port and the address it
/// was sent to (IP_PKTINFO).
fn recv_from(fd: libc::c_int, buf: &mut [u8]) -> Option<(usize, Ipv4Addr, u16, Option<Ipv4Addr>)> {
    let mut from = sockaddr(Ipv4Addr::UNSPECIFIED, 0);
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut from as *mut _ as *mut libc::c_void;
    msg.msg_namelen = SA_LEN;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: every pointer in msg is valid for its length.
    let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if r < 0 {
        return None;
    }
    let mut dst = None;
    // SAFETY: walking the control buffer the kernel filled, with its macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_PKTINFO {
                let info = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::in_pktinfo);
                dst = Some(Ipv4Addr::from(u32::from_be(info.ipi_addr.s_addr)));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Some((r as usize, Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)), u16::from_be(from.sin_port), dst))
}

/// Sends one datagram from `src` (IP_PKTINFO: the path's local address,
/// which the host's source routing takes out of its interface).
fn send_from(fd: libc::c_int, data: &[u8], src: Ipv4Addr, dst: Ipv4Addr, port: u16) {
    let mut to = sockaddr(dst, port);
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut to as *mut _ as *mut libc::c_void;
    msg.msg_namelen = SA_LEN;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    // SAFETY: CMSG_SPACE is a size computation.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::in_pktinfo>() as u32) } as usize;
    // SAFETY: the control buffer holds one in_pktinfo message (checked
    // by CMSG_FIRSTHDR); the datagram and address outlive the call.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() {
            return;
        }
        (*c).cmsg_level = libc::IPPROTO_IP;
        (*c).cmsg_type = libc::IP_PKTINFO;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::in_pktinfo>() as u32) as usize;
        let info = libc::in_pktinfo { ipi_ifindex: 0, ipi_spec_dst: libc::in_addr { s_addr: u32::from(src).to_be() }, ipi_addr: libc::in_addr { s_addr: 0 } };
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in_pktinfo, info);
        libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT);
    }
}

/// Feeds every datagram waiting on `fd` to the endpoint, each as the
/// model packet it reads, with the address it came to (a multipath end
/// is bound to every address of its host, so that is the path's); an end
/// not made yet (the server's) is made by `accept` from the first.
fn take_datagrams(
    fd: libc::c_int,
    local: (Ipv4Addr, u16),
    buf: &mut [u8],
    pkt: &mut Packet,
    ep: &mut Option<Box<dyn Endpoint>>,
    clk: &Clock,
    mut accept: impl FnMut(&Packet, Ipv4Addr, Instant) -> Option<Box<dyn Endpoint>>,
) {
    for _ in 0..BATCH {
        let Some((n, src, sport, dst)) = recv_from(fd, buf) else { break };
        pkt.set_udp(src, dst.unwrap_or(local.0), sport, local.1, buf[..n].into());
        let now = Instant(clk.now_ns());
        if ep.is_none() {
            *ep = accept(pkt, src, now);
        }
        if let Some(e) = ep.as_mut() {
            e.on_packet(now, pkt);
        }
    }
}

/// One turn's input for an end: every datagram waiting (see
/// [`take_datagrams`]), then its timers that are due. None while the end
/// is not made yet, after waiting up to the poll interval for a datagram.
pub(crate) fn take_input<'a>(
    fd: libc::c_int,
    local: (Ipv4Addr, u16),
    buf: &mut [u8],
    pkt: &mut Packet,
    ep: &'a mut Option<Box<dyn Endpoint>>,
    clk: &Clock,
    accept: impl FnMut(&Packet, Ipv4Addr, Instant) -> Option<Box<dyn Endpoint>>,
) -> Option<&'a mut Box<dyn Endpoint>> {
    take_datagrams(fd, local, buf, pkt, ep, clk, accept);
    let Some(e) = ep.as_mut() else {
        let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
        let _ = sys::poll_in(&mut p, clk.poll_ns);
        return None;
    };
    let now = clk.now_ns();
    if e.poll_timeout().is_some_and(|t| t.0 <= now) {
        e.on_timeout(Instant(now));
    }
    Some(e)
}

/// Sends everything the endpoint will send now (its pacing decides), each
/// packet from its path's local address. A full socket buffer drops the
/// datagram, which the transport recovers like a loss.
pub(crate) fn send_datagrams(fd: libc::c_int, e: &mut dyn Endpoint, pkt: &mut Packet, clk: &Clock) {
    for _ in 0..BATCH {
        if !e.poll_transmit_into(Instant(clk.now_ns()), pkt) {
            break;
        }
        let Some(d) = pkt.udp.as_deref() else { continue };
        send_from(fd, d, pkt.src, pkt.dst, pkt.tcp.dst_port);
    }
}

/// How often the sending end publishes its paths for the probes (the
/// probe interval is no shorter).
pub(crate) const PUBLISH_NS: u64 = 50_000_000;

/// The endpoint's paths as the probes read a stack's subflows (cwnd in
/// bytes, so an MSS of 1), with the backup ones by address pair.
pub(crate) fn publish_paths(e: &dyn Endpoint, st: &FlowState) {
    let paths = e.paths();
    let v: Vec<crate::apps::StackSubflow> = paths
        .iter()
        .map(|p| {
            let info = crate::probes::TcpInfo {
                rtt_us: p.srtt_ns.map_or(0, |n| (n / 1000) as u32),
                snd_cwnd: p.cwnd.min(u32::MAX as u64) as u32,
                snd_mss: 1,
                unacked: p.in_flight.min(u32::MAX as u64) as u32,
                total_retrans: p.retransmitted_segments.min(u32::MAX as u64) as u32,
                bytes_acked: p.bytes_acked,
                bytes_sent: p.bytes_sent,
                bytes_retrans: p.retransmitted_bytes,
                total_rto: Some(p.rto_count.min(u16::MAX as u64) as u16),
            };
            // Linux's TCP_ESTABLISHED / TCP_CLOSE.
            let state = if p.state == mplab_backend::results::SubflowState::Closed { 7 } else { 1 };
            (p.local.clone(), p.remote.clone(), info, state)
        })
        .collect();
    let backups = paths.iter().filter(|p| p.backup).map(|p| format!("{}|{}", p.local, p.remote)).collect();
    if let Ok(mut g) = st.stack_subflows.lock() {
        *g = Some((v, backups));
    }
}

/// Whether a flow's end is bound to every address of its host (its
/// transport opens paths between address pairs, MPQUIC): its datagrams
/// name their source, and its socket is not connected.
pub fn multihomed(f: &Flow) -> bool {
    f.transport.over_udp() && f.transport.takes("path_manager")
}

/// Whether flow `f` runs here: carried in UDP, a byte stream, an engine.
pub fn takes(f: &Flow) -> bool {
    use mplab_scenario::plugins::transports::Delivery;
    f.transport.over_udp() && f.transport.entry().delivery == Delivery::Stream && engine(f.transport).is_some()
}

pub(crate) fn error(st: &FlowState, e: String) {
    if let Ok(mut v) = st.errors.lock() {
        v.push(e);
    }
}

/// An end ready to run: the transport's engine, the end's local address
/// and port, and the client's endpoint (the server's is made by the first
/// datagram).
type Start = (&'static dyn Engine, (Ipv4Addr, u16), Option<Box<dyn Endpoint>>);

/// Readies one end of flow `f` on `fd`: IP_PKTINFO on, so each datagram
/// names the address it came to; the client's endpoint made at the flow's
/// start. None when the end cannot start (the error recorded) or the run
/// ended first.
pub(crate) fn start(net: &Network, f: &Flow, fd: libc::c_int, client: bool, seed: u64, st: &FlowState, clk: &Clock) -> Option<Start> {
    let Some(engine) = engine(f.transport) else {
        error(st, format!("transport {:?}: no engine", f.transport.name()));
        return None;
    };
    if let Err(e) = sys::setsockopt(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, 1i32, "IP_PKTINFO") {
        error(st, e.to_string());
        return None;
    }
    let local = if client { (f.src, f.sport) } else { (f.dst, f.dport) };
    let mut ep = None;
    if client {
        if !clk.sleep_until(f.start_ns) {
            return None;
        }
        ep = engine.connect(net, f, seed, Instant(clk.now_ns()));
        if ep.is_none() {
            error(st, format!("{}: the client end could not be made", f.transport.name()));
            return None;
        }
    }
    Some((engine, local, ep))
}

/// Runs one end of flow `f` on `sock` (bound; the client's connected).
pub fn run(net: Arc<Network>, f: Flow, sock: OwnedFd, client: bool, seed: u64, st: Arc<FlowState>, clk: Clock) {
    let fd = sock.as_raw_fd();
    let Some((engine, local, mut ep)) = start(&net, &f, fd, client, seed, &st, &clk) else { return };
    let stop = Instant(f.stop_ns.min(clk.end_ns));
    let mut app = BackendApp::new(mplab_backend::apps::Kind::of(&f.app), client, Some(stop));
    let mut started = false;
    // The sending end's paths are the flow's rows, as a kernel sender's
    // subflows are.
    let sender = client != mplab_backend::apps::server_sends(&f.app);
    let mut next_publish = 0u64;
    let mut buf = vec![0u8; 65_536];
    let mut pkt = Packet::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, TcpHeader::default(), 0, 0);
    while !clk.over() {
        // In: every datagram waiting, then the timers due.
        let Some(e) = take_input(fd, local, &mut buf, &mut pkt, &mut ep, &clk, |p, src, now| engine.accept(&net, &f, p.dst, src, p, seed, now)) else { continue };
        let now = clk.now_ns();
        if e.is_established() {
            let before = progress(&app);
            if started {
                app.pump(Instant(now), e.as_mut());
            } else {
                app.on_connected(Instant(now), e.as_mut());
                started = true;
                st.connected.store(true, Ordering::Relaxed);
            }
            report(&app, before, &st, now, &clk, f.start_ns);
            if sender && now >= next_publish {
                publish_paths(e.as_ref(), &st);
                next_publish = now + PUBLISH_NS;
            }
        }
        // Out: everything the endpoint will send now (its pacing decides).
        send_datagrams(fd, e.as_mut(), &mut pkt, &clk);
        if app.is_closed() && e.peer_closed() && clk.now_ns() >= clk.end_ns {
            break;
        }
        let now = clk.now_ns();
        let wake = [e.poll_timeout().map(|t| t.0), app.poll_timer().map(|t| t.0)].into_iter().flatten().min().map_or(clk.poll_ns, |t| t.saturating_sub(now)).min(clk.poll_ns);
        let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
        if wake > 0 {
            let _ = sys::poll_in(&mut p, wake);
        }
    }
    if let Some(m) = ep.as_ref().and_then(|e| e.read_mismatch()) {
        if let Ok(mut v) = st.mismatch.lock() {
            v.get_or_insert_with(|| m.to_string());
        }
    }
}
