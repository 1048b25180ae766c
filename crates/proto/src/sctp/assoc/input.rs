//! A received packet: the verification tag rules (RFC 9260 8.5), then
//! each chunk to its handler, and the receiver's SACK decision once the
//! packet is through.

use core::net::IpAddr;

use mplab_wire::sctp::chunk::{Chunk, SackChunk};
use mplab_wire::sctp::param::{ErrorCause, UnknownAction};
use mplab_wire::sctp::Packet;

use crate::sctp::recv::{DataOutcome, Receiver};
use crate::time::Instant;
use super::{Association, CloseReason, State, Transmit};

impl Association {
    /// One received packet, with the addresses it came from and to.
    pub fn on_packet(&mut self, now: Instant, src: IpAddr, dst: IpAddr, pkt: &Packet) {
        self.stats.packets_received += 1;
        if pkt.header.dst_port != self.local_port || pkt.chunks.is_empty() {
            return;
        }
        self.reset_burst();
        let vtag = pkt.header.verification_tag;
        let first = &pkt.chunks[0];
        // RFC 9260 8.5.1: the exceptions to the tag rule.
        let mut accepted_cookie = false;
        match first {
            Chunk::Init(init) => {
                // An INIT travels alone, with tag 0.
                if vtag != 0 || pkt.chunks.len() != 1 {
                    self.stats.dropped_bad_tag += 1;
                    return;
                }
                if self.state == State::Listen {
                    self.answer_init(now, src, dst, pkt.header.src_port, init);
                }
                return;
            }
            Chunk::Abort { t_bit, .. } | Chunk::ShutdownComplete { t_bit } => {
                let ok = if *t_bit { vtag == self.peer_tag && self.peer_tag != 0 } else { vtag == self.my_tag };
                if !ok || self.state == State::Listen {
                    self.stats.dropped_bad_tag += 1;
                    return;
                }
                if let Chunk::Abort { causes, .. } = first {
                    self.close(CloseReason::PeerAbort(causes.clone()));
                } else if self.state == State::ShutdownAckSent {
                    self.close(CloseReason::Shutdown);
                }
                return;
            }
            Chunk::CookieEcho { cookie } if self.state == State::Listen => {
                if !self.accept_cookie(now, src, dst, pkt.header.src_port, vtag, cookie) {
                    return;
                }
                accepted_cookie = true;
            }
            _ => {
                if self.state == State::Listen || vtag != self.my_tag {
                    self.stats.dropped_bad_tag += 1;
                    return;
                }
            }
        }
        if self.state == State::Closed {
            return;
        }
        let mut data_seen = false;
        let mut dup = false;
        let mut immediate = false;
        let had_gap = self.rcv.as_ref().is_some_and(Receiver::has_gaps);
        let mut report: Vec<ErrorCause> = Vec::new();
        // The COOKIE ECHO that just created the association was answered
        // there; only the chunks bundled after it remain.
        for c in &pkt.chunks[usize::from(accepted_cookie)..] {
            if self.state == State::Closed {
                break;
            }
            match c {
                Chunk::Data(d) => {
                    if !self.is_established() && self.state != State::ShutdownSent {
                        continue;
                    }
                    if let Some(r) = &mut self.rcv {
                        data_seen = true;
                        immediate |= d.immediate();
                        match r.on_data(now, d) {
                            DataOutcome::Duplicate => dup = true,
                            DataOutcome::Dropped => immediate = true,
                            _ => {}
                        }
                    }
                }
                Chunk::Sack(s) => {
                    if self.is_established() || matches!(self.state, State::ShutdownPending | State::ShutdownSent) {
                        self.on_sack(now, src, dst, s);
                    }
                }
                Chunk::InitAck(ia) => {
                    if self.state == State::CookieWait {
                        self.on_init_ack(now, src, dst, ia);
                    }
                }
                Chunk::CookieEcho { .. } => {
                    // A duplicate: our COOKIE ACK was lost.
                    if self.is_established() {
                        self.push_ctrl(dst, src, vec![Chunk::CookieAck]);
                    }
                }
                Chunk::CookieAck => {
                    if self.state == State::CookieEchoed {
                        self.t1 = None;
                        self.state = State::Established;
                        self.establish_timers(now);
                    }
                }
                Chunk::Heartbeat { info } => self.push_ctrl(dst, src, vec![Chunk::HeartbeatAck { info: info.clone() }]),
                Chunk::HeartbeatAck { info } => self.on_heartbeat_ack(now, info),
                Chunk::Error { causes } => self.on_error(now, src, dst, causes),
                Chunk::Shutdown { cum_tsn_ack } => self.on_shutdown(now, src, dst, *cum_tsn_ack),
                Chunk::ShutdownAck => {
                    if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
                        let p = Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::ShutdownComplete { t_bit: false }]);
                        self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
                        self.close(CloseReason::Shutdown);
                    }
                }
                Chunk::Init(_) | Chunk::Abort { .. } | Chunk::ShutdownComplete { .. } => {
                    // Only legal first (handled above): bundled, they are
                    // ignored.
                }
                Chunk::Unknown { .. } => {
                    self.stats.unknown_chunks += 1;
                    let action = c.unknown_action().unwrap_or(UnknownAction::Stop);
                    if action.reports() {
                        let mut raw = Vec::new();
                        if c.encode(&mut raw).is_ok() {
                            let len = u16::from_be_bytes([raw[2], raw[3]]) as usize;
                            raw.truncate(len);
                            report.push(ErrorCause::UnrecognizedChunkType { chunk: raw });
                        }
                    }
                    if action.stops() {
                        break;
                    }
                }
            }
        }
        if !report.is_empty() && self.state != State::Closed {
            self.stats.errors_sent += 1;
            self.push_ctrl(dst, src, vec![Chunk::Error { causes: report }]);
        }
        if data_seen {
            self.reply_to = Some((dst, src));
            let dac = self.cfg.dac && self.cfg.cmt.is_cmt();
            let (freq, delay) = (self.cfg.sack_freq.max(1), self.cfg.sack_delay);
            if let Some(r) = &mut self.rcv {
                r.end_of_packet(now, had_gap, dup, immediate, dac, freq, delay);
            }
        }
        self.maybe_progress_shutdown(now);
    }

    fn on_shutdown(&mut self, now: Instant, src: IpAddr, dst: IpAddr, cum: u32) {
        if !matches!(self.state, State::Established | State::ShutdownPending | State::ShutdownSent | State::ShutdownReceived) {
            return;
        }
        // The SHUTDOWN's cumulative ack counts like a SACK's.
        let s = SackChunk { cum_tsn_ack: cum, a_rwnd: self.snd.peer_a_rwnd as u32, ..Default::default() };
        self.on_sack(now, src, dst, &s);
        if self.state == State::Closed {
            return;
        }
        if self.state != State::ShutdownSent {
            self.state = State::ShutdownReceived;
        }
        self.close_requested = true;
        self.maybe_progress_shutdown(now);
    }
}
