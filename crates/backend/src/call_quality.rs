//! What a real-time datagram stream (a VoIP call, a game) experienced,
//! from the send and arrival time of each of its packets: loss, lateness
//! against a fixed playout buffer, one-way delay and its percentiles, the
//! interarrival jitter of RFC 3550, the longest interruption, and the
//! ITU-T G.107 E-model's rating R with its MOS estimate.
//!
//! Every backend measures the same way: the sender numbers its packets
//! and notes when each left, the receiver notes when each arrived, and
//! [`assess`] turns the two into a [`CallQuality`]. The E-model is the
//! simplified one of G.107 for planning (Cole and Rosenbluth, CCR 2001):
//! `R = 93.2 - Id - Ie,eff`, with the delay impairment
//! `Id = 0.024 d + 0.11 (d - 177.3) H(d - 177.3)` over the mouth-to-ear
//! delay `d` (ms), and the equipment impairment under packet loss
//! `Ie,eff = Ie + (95 - Ie) Ppl / (Ppl / BurstR + Bpl)` (G.107 7.2), the
//! codec's `Ie` and `Bpl` from G.113 Appendix I, `BurstR` from the loss
//! pattern's two-state Markov model (G.107 Annex: `1 / (p + q)`).

/// One packet of the stream, as both ends saw it (times in ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    pub seq: u64,
    pub sent_ns: u64,
    /// None: it never arrived.
    pub arrived_ns: Option<u64>,
}

/// A codec as the E-model sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Codec {
    /// Equipment impairment without loss (G.113 Appendix I).
    pub ie: f64,
    /// Packet-loss robustness factor (G.113 Appendix I).
    pub bpl: f64,
    /// Packetization and algorithmic delay, ms (added to the network's).
    pub delay_ms: f64,
}

impl Codec {
    /// G.711 with packet-loss concealment, 20 ms frames: Ie 0, Bpl 25.1.
    pub const G711_PLC: Codec = Codec { ie: 0.0, bpl: 25.1, delay_ms: 20.0 };
}

/// What [`assess`] measured.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct CallQuality {
    pub sent: u64,
    /// Arrived at all (late ones included); duplicates count once.
    pub received: u64,
    /// Arrived after their playout time: as good as lost to a listener.
    pub late: u64,
    /// Lost or late, over sent.
    pub loss_ratio: f64,
    /// One-way delay of the packets that arrived, ms.
    pub delay_mean_ms: f64,
    pub delay_p50_ms: f64,
    pub delay_p95_ms: f64,
    pub delay_p99_ms: f64,
    pub delay_max_ms: f64,
    /// RFC 3550 6.4.1 interarrival jitter at the end of the stream, ms,
    /// and the largest it was on the way (what an RTCP report at the
    /// worst moment would have said).
    pub jitter_ms: f64,
    pub jitter_max_ms: f64,
    /// The longest time the listener heard nothing: the largest gap
    /// between the playout times of consecutive packets that were played
    /// (a stream's start and end count as played), ms.
    pub longest_interruption_ms: f64,
    /// The loss pattern's burst ratio (1: random loss; above: bursty).
    pub burst_ratio: f64,
    /// E-model transmission rating, 0..=100.
    pub r_factor: f64,
    /// MOS estimated from R (G.107 Annex B), 1..=4.5.
    pub mos: f64,
}

/// G.107's delay impairment for a mouth-to-ear delay of `d_ms`.
pub fn delay_impairment(d_ms: f64) -> f64 {
    let over = (d_ms - 177.3).max(0.0);
    0.024 * d_ms + 0.11 * over
}

/// G.107's effective equipment impairment for `ppl` percent of packets
/// lost at burst ratio `burst_r`.
pub fn loss_impairment(codec: &Codec, ppl: f64, burst_r: f64) -> f64 {
    if ppl <= 0.0 {
        return codec.ie;
    }
    codec.ie + (95.0 - codec.ie) * ppl / (ppl / burst_r.max(1e-9) + codec.bpl)
}

/// MOS from R (G.107 Annex B).
pub fn mos_from_r(r: f64) -> f64 {
    if r <= 0.0 {
        1.0
    } else if r >= 100.0 {
        4.5
    } else {
        1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7e-6
    }
}

/// The `q`-quantile (0..=1) of sorted values, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

/// Burst ratio of a loss pattern (true = lost): `1 / (p + q)` with `p` the
/// chance of a loss after a packet that got through and `q` of a packet
/// getting through after a loss (G.107 Annex A); 1 without losses.
pub fn burst_ratio(lost: &[bool]) -> f64 {
    let (mut ok_then, mut ok_then_lost, mut lost_then, mut lost_then_ok) = (0u64, 0u64, 0u64, 0u64);
    for w in lost.windows(2) {
        if w[0] {
            lost_then += 1;
            lost_then_ok += u64::from(!w[1]);
        } else {
            ok_then += 1;
            ok_then_lost += u64::from(w[1]);
        }
    }
    if ok_then_lost == 0 || lost_then == 0 || ok_then == 0 {
        return 1.0;
    }
    let p = ok_then_lost as f64 / ok_then as f64;
    let q = lost_then_ok as f64 / lost_then as f64;
    if p + q <= 0.0 {
        return 1.0;
    }
    1.0 / (p + q)
}

/// Assesses a stream sent every `interval_ns`, played out through a fixed
/// buffer of `playout_ms` after the first packet's delay, with `codec`.
/// Packets are identified by `seq`; a repeated `seq` counts once (the
/// earliest arrival).
pub fn assess(packets: &[Datagram], playout_ms: f64, codec: &Codec) -> CallQuality {
    let mut p: Vec<Datagram> = packets.to_vec();
    p.sort_by_key(|d| (d.seq, d.arrived_ns.unwrap_or(u64::MAX)));
    p.dedup_by_key(|d| d.seq);
    let sent = p.len() as u64;
    let base = p.iter().filter_map(|d| d.arrived_ns.map(|a| a.saturating_sub(d.sent_ns))).next();
    let buffer_ns = (playout_ms * 1e6) as u64;
    let mut delays = Vec::with_capacity(p.len());
    let mut lost = Vec::with_capacity(p.len());
    let mut late = 0;
    let mut jitter = 0.0f64;
    let mut jitter_max = 0.0f64;
    let mut prev_transit: Option<f64> = None;
    let mut played: Vec<u64> = Vec::new();
    for d in &p {
        match (d.arrived_ns, base) {
            (Some(a), Some(base)) => {
                let transit = a as f64 - d.sent_ns as f64;
                delays.push(transit / 1e6);
                // RFC 3550: J += (|D(i-1,i)| - J) / 16, in arrival order
                // of sequence (the RFC's receivers process as packets come;
                // for a stream numbered in send order this is the same
                // definition over consecutive packets received).
                if let Some(pt) = prev_transit {
                    jitter += ((transit - pt).abs() - jitter) / 16.0;
                    jitter_max = jitter_max.max(jitter);
                }
                prev_transit = Some(transit);
                let deadline = d.sent_ns + base + buffer_ns;
                let is_late = a > deadline;
                late += u64::from(is_late);
                lost.push(is_late);
                if !is_late {
                    played.push(deadline);
                }
            }
            _ => lost.push(true),
        }
    }
    let received = delays.len() as u64;
    let unusable = lost.iter().filter(|&&l| l).count() as u64;
    let loss_ratio = if sent == 0 { 0.0 } else { unusable as f64 / sent as f64 };
    // Interruptions: between consecutive played packets, and from where
    // the first and the last packet would have played.
    let longest_interruption_ms = match (p.first(), p.last(), base) {
        (Some(first), Some(last), Some(base)) => {
            let start = first.sent_ns + base + buffer_ns;
            let end = last.sent_ns + base + buffer_ns;
            let mut edges = vec![start];
            edges.extend(&played);
            edges.push(end);
            edges.sort_unstable();
            let gaps = edges.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            // A gap of one packet interval is normal play.
            let interval = if p.len() > 1 { (last.sent_ns - first.sent_ns) / (p.len() as u64 - 1) } else { 0 };
            gaps.saturating_sub(interval) as f64 / 1e6
        }
        _ => 0.0,
    };
    let mut sorted = delays.clone();
    sorted.sort_by(f64::total_cmp);
    let mean = if sorted.is_empty() { 0.0 } else { sorted.iter().sum::<f64>() / sorted.len() as f64 };
    let burst_r = burst_ratio(&lost);
    // The listener hears packets at their playout time: the mouth-to-ear
    // delay is the first packet's delay plus the buffer, plus the codec's.
    let d = base.map_or(0.0, |b| b as f64 / 1e6) + playout_ms + codec.delay_ms;
    let r = if received == 0 { 0.0 } else { (93.2 - delay_impairment(d) - loss_impairment(codec, loss_ratio * 100.0, burst_r)).clamp(0.0, 100.0) };
    CallQuality {
        sent,
        received,
        late,
        loss_ratio,
        delay_mean_ms: mean,
        delay_p50_ms: quantile(&sorted, 0.50),
        delay_p95_ms: quantile(&sorted, 0.95),
        delay_p99_ms: quantile(&sorted, 0.99),
        delay_max_ms: sorted.last().copied().unwrap_or(0.0),
        jitter_ms: jitter / 1e6,
        jitter_max_ms: jitter_max / 1e6,
        longest_interruption_ms,
        burst_ratio: burst_r,
        r_factor: r,
        mos: if received == 0 { 1.0 } else { mos_from_r(r) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// 50 packets/s for `n` packets with one-way delays `delay(i)` (ms,
    /// None = lost).
    fn stream(n: u64, delay: impl Fn(u64) -> Option<f64>) -> Vec<Datagram> {
        (0..n).map(|i| Datagram { seq: i, sent_ns: i * 20 * MS, arrived_ns: delay(i).map(|d| i * 20 * MS + (d * 1e6) as u64) }).collect()
    }

    #[test]
    fn the_e_model_matches_g107_reference_values() {
        // Default parameters: R = 93.2, MOS 4.41.
        assert!((mos_from_r(93.2) - 4.41).abs() < 0.005, "{}", mos_from_r(93.2));
        assert_eq!(mos_from_r(-3.0), 1.0);
        assert_eq!(mos_from_r(120.0), 4.5);
        assert!((delay_impairment(100.0) - 2.4).abs() < 1e-9);
        assert!((delay_impairment(200.0) - (4.8 + 0.11 * 22.7)).abs() < 1e-9);
        // 1 % random loss on G.711 with PLC: 95 * 1 / (1 + 25.1).
        assert!((loss_impairment(&Codec::G711_PLC, 1.0, 1.0) - 95.0 / 26.1).abs() < 1e-9);
        // Bursty loss hurts more than random loss at the same rate.
        assert!(loss_impairment(&Codec::G711_PLC, 5.0, 2.0) > loss_impairment(&Codec::G711_PLC, 5.0, 1.0));
    }

    #[test]
    fn a_clean_stream_rates_as_the_network_delay_allows() {
        let q = assess(&stream(500, |_| Some(30.0)), 40.0, &Codec::G711_PLC);
        assert_eq!((q.sent, q.received, q.late), (500, 500, 0));
        assert_eq!(q.loss_ratio, 0.0);
        assert!((q.delay_p99_ms - 30.0).abs() < 1e-6 && q.jitter_ms < 1e-9);
        assert!(q.longest_interruption_ms < 1e-9);
        // d = 30 + 40 + 20 = 90 ms: R = 93.2 - 2.16.
        assert!((q.r_factor - (93.2 - 0.024 * 90.0)).abs() < 1e-6, "{q:?}");
        assert!(q.mos > 4.3);
    }

    #[test]
    fn a_stall_is_an_interruption_and_late_packets_count_as_lost() {
        // Packets 100..150 (1 s) are held 1 s then delivered: late for a
        // 60 ms buffer; the listener hears nothing for 1 s.
        let q = assess(&stream(500, |i| Some(if (100..150).contains(&i) { 1000.0 } else { 20.0 })), 60.0, &Codec::G711_PLC);
        assert_eq!((q.received, q.late), (500, 50));
        assert!((q.loss_ratio - 0.1).abs() < 1e-9);
        assert!((q.longest_interruption_ms - 1000.0).abs() < 1e-6, "{q:?}");
        assert!(q.burst_ratio > 5.0, "one burst of 50: {q:?}");
        // The jump to 1 s and back: 980 / 16 ms at once.
        assert!((q.jitter_max_ms - 980.0 / 16.0 * (1.0 + (15.0f64 / 16.0).powi(50))).abs() < 0.5 && q.jitter_ms < 1.0, "{q:?}");
        assert!(q.delay_max_ms >= 1000.0 && q.delay_p50_ms == 20.0);
        // One burst of 10 % rates far below 10 % of random loss
        // (R = 93.2 - 2.4 - 95 * 10 / 35.1 = 63.7).
        assert!(q.r_factor < 55.0 && q.mos < 3.0, "{q:?}");
    }

    #[test]
    fn loss_jitter_and_duplicates() {
        // Every 10th lost, delay alternating 20/30 ms, a duplicate.
        let mut p = stream(1000, |i| (i % 10 != 0).then_some(if i % 2 == 0 { 20.0 } else { 30.0 }));
        p.push(p[5]);
        let q = assess(&p, 50.0, &Codec::G711_PLC);
        assert_eq!((q.sent, q.received), (1000, 900));
        assert!((q.loss_ratio - 0.1).abs() < 1e-9);
        // |D| is 10 ms between neighbours (and 0 across a lost one): J
        // settles near 10 ms.
        assert!(q.jitter_ms > 7.0 && q.jitter_ms <= 10.0, "{q:?}");
        assert!((q.burst_ratio - 1.0).abs() < 0.15, "isolated losses: {q:?}");
        // One missing packet: a 20 ms gap beyond the normal 20 ms.
        assert!((q.longest_interruption_ms - 20.0).abs() < 1e-6, "{q:?}");
    }

    #[test]
    fn nothing_received_rates_worst() {
        let q = assess(&stream(10, |_| None), 40.0, &Codec::G711_PLC);
        assert_eq!((q.received, q.loss_ratio, q.mos), (0, 1.0, 1.0));
        let q = assess(&[], 40.0, &Codec::G711_PLC);
        assert_eq!((q.sent, q.mos), (0, 1.0));
    }
}
