//! The hybrid-access tunnel over Multipath QUIC (`transport = "mpquic"` on
//! a tunnel flow) on the real-packet backends: the gateway program of
//! [`super`] (its TUN device and policy rules) with one MPQUIC
//! connection between the CPE and the HAG in place of the MPTCP socket,
//! as 3GPP ATSSS (Release 18) puts MPQUIC between a phone and the core.
//! The connection is the backend's transport endpoint (noq, the code the
//! simulator runs), driven over a kernel UDP socket bound to every address
//! of the gateway, so each path leaves by its own access link.
//!
//! A packet read from the TUN rides the connection's stream as a
//! length-prefixed frame (`mplab_wire::tunnel`), or, in `quic-datagram`
//! mode when it is UDP and fits, one QUIC DATAGRAM frame (RFC 9221)
//! behind an 8-byte sequence number, as on the simulator
//! (crates/sim/src/world/tunnel.rs). The TUN is read only while the stream
//! takes its frames, so packets wait in the TUN's queue (500) as in the
//! MPTCP tunnel. Every loop ends at the scenario's duration or on the
//! abort flag.

use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use mplab_backend::packet::Packet;
use mplab_backend::transport::Endpoint;
use mplab_scenario::network::{App, Flow, Network, TunnelMode};
use mplab_wire::tunnel::{encode_frame, FrameDecoder};
use mplab_wire::TcpHeader;

use crate::apps::{Clock, FlowState};
use crate::endpoint_flow::{publish_paths, send_datagrams, start, take_input, PUBLISH_NS};
use super::device::{Counts, Gateway};
use crate::sys;

/// The sequence number ahead of a packet in a DATAGRAM frame.
const DATAGRAM_HEADER: usize = 8;
/// Packets taken from the TUN in one turn at most.
const TUN_BATCH: usize = 256;

/// Carries the tunnel until the end of the scenario: returns what this
/// gateway counted.
pub(crate) fn carry(net: &Network, f: &Flow, gw: &Gateway, seed: u64, st: &FlowState, clk: &Clock) -> Counts {
    let mut c = Counts::default();
    let fd = gw.sock.as_raw_fd();
    let client = gw.end == 0;
    let Some((engine, local, mut ep)) = start(net, f, fd, client, seed, st, clk) else { return c };
    let datagram_frames = matches!(f.app, App::Tunnel { mode: TunnelMode::QuicDatagram, .. });
    let mut dec = FrameDecoder::new(gw.mtu);
    // A frame the stream took in part: the rest, before anything else.
    let mut frame: Vec<u8> = Vec::new();
    let mut sent = 0usize;
    let mut seq = 0u64;
    let mut tun_pkt = vec![0u8; DATAGRAM_HEADER + 65_536];
    let mut udp = vec![0u8; 65_536];
    let mut rx = Vec::new();
    let mut pkt = Packet::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, TcpHeader::default(), 0, 0);
    let mut next_publish = 0u64;
    while !clk.over() && clk.now_ns() < clk.end_ns {
        // In: every datagram waiting on the UDP socket (the HAG's end is
        // made by the first), then the timers due.
        let Some(e) = take_input(fd, local, &mut udp, &mut pkt, &mut ep, clk, |p, src, now| engine.accept(net, f, p.dst, src, p, seed, now)) else { continue };
        let now = clk.now_ns();
        if e.is_established() {
            st.connected.store(true, Ordering::Relaxed);
            ingress(e.as_mut(), gw, datagram_frames, &mut frame, &mut sent, &mut seq, &mut tun_pkt, &mut c);
            // Egress: whole frames out of the stream, DATAGRAM frames as
            // they come, onto the TUN.
            rx.clear();
            while e.read_bytes(65_536, &mut rx) > 0 {}
            if !rx.is_empty() {
                if clk.now_ns() <= clk.end_ns {
                    st.delivered.fetch_add(rx.len() as u64, Ordering::Relaxed);
                }
                dec.push(&rx);
                // A frame the decoder refused is counted by it; the stream
                // stays in step.
                while let Some(d) = dec.next_frame() {
                    if let Ok(d) = d {
                        if gw.tun.send(&d).unwrap_or(false) {
                            c.egress_out += 1;
                        }
                    }
                }
            }
            while let Some(d) = e.recv_datagram() {
                match d.get(DATAGRAM_HEADER..) {
                    Some(p) if !p.is_empty() => {
                        if gw.tun.send(p).unwrap_or(false) {
                            c.egress_out += 1;
                        }
                    }
                    _ => c.duplicates += 1,
                }
            }
            // The CPE's paths are the flow's rows, as on the simulator.
            if client && now >= next_publish {
                publish_paths(e.as_ref(), st);
                next_publish = now + PUBLISH_NS;
            }
        }
        // Out: everything the connection sends now.
        send_datagrams(fd, e.as_mut(), &mut pkt, clk);
        let now = clk.now_ns();
        let wake = e.poll_timeout().map_or(clk.poll_ns, |t| t.0.saturating_sub(now)).min(clk.poll_ns).min(10_000_000);
        // The TUN is watched only while the stream takes frames whole.
        let tun_events = if sent < frame.len() || !e.is_established() { 0 } else { libc::POLLIN };
        let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }, libc::pollfd { fd: gw.tun.raw_fd(), events: tun_events, revents: 0 }];
        if wake > 0 {
            let _ = sys::poll_in(&mut p, wake);
        }
    }
    c
}

/// Takes packets from the TUN into the connection: the rest of a frame
/// the stream took in part first, then each packet as a DATAGRAM frame
/// (UDP in `quic-datagram` mode, when it fits) or a frame of the stream,
/// until the stream takes no more.
#[allow(clippy::too_many_arguments)]
fn ingress(e: &mut dyn Endpoint, gw: &Gateway, datagram_frames: bool, frame: &mut Vec<u8>, sent: &mut usize, seq: &mut u64, buf: &mut [u8], c: &mut Counts) {
    for _ in 0..TUN_BATCH {
        if *sent < frame.len() {
            *sent += e.write_bytes(&frame[*sent..]);
            if *sent < frame.len() {
                return;
            }
        }
        frame.clear();
        *sent = 0;
        let n = match gw.tun.recv(&mut buf[DATAGRAM_HEADER..]) {
            Ok(Some(n)) => n,
            _ => return,
        };
        if n > gw.mtu {
            c.ingress.oversize += 1;
            continue;
        }
        let is_udp = n >= 20 && buf[DATAGRAM_HEADER] >> 4 == 4 && buf[DATAGRAM_HEADER + 9] == 17;
        if datagram_frames && is_udp && e.max_datagram().is_some_and(|m| m >= DATAGRAM_HEADER + n) {
            buf[..DATAGRAM_HEADER].copy_from_slice(&seq.to_be_bytes());
            if e.send_datagram(&buf[..DATAGRAM_HEADER + n]) {
                *seq += 1;
                c.ingress.datagrams_in += 1;
                c.ingress.quic_datagrams += 1;
                c.ingress.quic_datagram_bytes += (DATAGRAM_HEADER + n) as u64;
                continue;
            }
        }
        if encode_frame(&buf[DATAGRAM_HEADER..DATAGRAM_HEADER + n], gw.mtu, frame).is_err() {
            c.ingress.oversize += 1;
            frame.clear();
            continue;
        }
        c.ingress.datagrams_in += 1;
        c.ingress.frame_bytes += frame.len() as u64;
    }
}
