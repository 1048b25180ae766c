use super::*;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn params(rate_bps: u64, delay_ns: u64, queue: QueueConfig) -> LinkParams {
    LinkParams {
        rate_bps,
        delay: Duration::from_nanos(delay_ns),
        jitter: Jitter::None,
        loss: LossModel::None,
        queue,
        allow_reorder: false,
        duplicate: 0.0,
    }
}

fn unbounded() -> QueueConfig {
    QueueConfig::drop_tail_packets(u64::MAX)
}

/// Polls at every wake-up until the link is empty; returns (id, at).
fn drain<P: Copy + Default>(l: &mut LinkDirection<P>) -> Vec<(P, u64)> {
    let mut out = Vec::new();
    while let Some(t) = l.next_wakeup() {
        let mut got = false;
        while let Some(d) = l.poll(t) {
            out.push((d.packet, d.at.0));
            got = true;
        }
        assert!(got, "a wake-up must deliver something");
    }
    out
}

/// What `deliver` touches stays in lines 0 and 1, and what `offer`
/// touches in lines 0 to 3 (see the struct's comment); a field added in
/// front would silently push them out.
#[test]
fn hot_fields_fill_the_first_four_lines() {
    use std::mem::{offset_of, size_of};
    type L = LinkDirection<u64>;
    assert_eq!(size_of::<Flight<[u32; 5]>>(), 64);
    assert_eq!(offset_of!(L, delivered_packets), 64);
    assert!(offset_of!(L, delivered_bytes) + 8 <= 128);
    assert!(offset_of!(L, serialiser) + size_of::<Serialiser>() <= 128);
    assert_eq!(offset_of!(L, queue) + 32, 128);
    assert_eq!(offset_of!(L, rate_bps), 128);
    assert!(offset_of!(L, accepted_bytes) + 8 <= 192);
    assert_eq!(offset_of!(L, idle_since), 192);
    assert!(offset_of!(L, has_discarded) < 256);
    assert!(offset_of!(L, jittery) < 256);
    assert!(offset_of!(L, flight_last_at) + 8 <= 256);
}

proptest! {
    /// The FIFO flight with its inline head behaves as a plain deque:
    /// same order, length, front and back under any pushes, pops and
    /// cuts.
    #[test]
    fn fifo_with_inline_head_is_a_deque(ops in proptest::collection::vec((0u8..4, 1u64..50), 0..200)) {
        let mut f = Fifo::<u32>::default();
        let mut model: VecDeque<(u64, u32)> = VecDeque::new();
        let mut at = 0u64;
        for (i, (op, x)) in ops.into_iter().enumerate() {
            match op {
                0 | 1 => {
                    at += x;
                    f.push_back(Fly { at, size: 1, pkt: i as u32 });
                    model.push_back((at, i as u32));
                }
                2 => prop_assert_eq!(f.pop_front().map(|f| (f.at, f.pkt)), model.pop_front()),
                _ => {
                    let cut = at.saturating_sub(x);
                    let mut out = Vec::new();
                    f.drain_after(cut, &mut out);
                    let keep = model.partition_point(|e| e.0 <= cut);
                    let gone: Vec<u32> = model.drain(keep..).map(|e| e.1).collect();
                    prop_assert_eq!(out, gone);
                }
            }
            prop_assert_eq!(f.len(), model.len());
            prop_assert_eq!(f.front().map(|f| f.pkt), model.front().map(|e| e.1));
            prop_assert_eq!(f.back().map(|f| f.pkt), model.back().map(|e| e.1));
            prop_assert_eq!(f.iter().map(|f| f.pkt).collect::<Vec<_>>(), model.iter().map(|e| e.1).collect::<Vec<_>>());
        }
    }
}

/// Queue records and flight entries (with a handle of up to 20 bytes,
/// the simulator's) are 32 bytes and 32-aligned: two per cache line,
/// none across a line boundary.
#[test]
fn records_never_straddle_a_cache_line() {
    use std::mem::{align_of, size_of};
    assert_eq!((size_of::<Ser>(), align_of::<Ser>()), (32, 32));
    assert_eq!((size_of::<Fly<[u32; 5]>>(), align_of::<Fly<[u32; 5]>>()), (32, 32));
    let mut l = LinkDirection::<[u32; 5]>::new(params(10_000_000_000, 1_000, unbounded()));
    let mut rng = SimRng::new(1, 1);
    for i in 0..50u32 {
        l.offer(Instant(u64::from(i)), [i; 5], 1500, &mut rng);
    }
    let Flight::Fifo(d) = &l.flight else { panic!("a FIFO link") };
    let (a, b) = d.rest.as_slices();
    assert!(a.iter().chain(b).chain(d.front()).all(|f| (f as *const Fly<_> as usize) % 32 == 0));
    assert!(l.queue.iter().all(|r| (r as *const Ser as usize) % 32 == 0));
}

/// `deliver` hands out exactly what `poll` does, and once advanced the
/// statistics agree, including across a rate change and a link cut.
#[test]
fn deliver_matches_poll_once_advanced() {
    let p = params(10_000_000, MS, QueueConfig::drop_tail_packets(20));
    let (mut a, mut b) = (LinkDirection::new(p), LinkDirection::new(p));
    let (mut ra, mut rb) = (SimRng::new(3, 1), SimRng::new(3, 1));
    let mut got = (Vec::new(), Vec::new());
    for i in 0..400u64 {
        let now = Instant(i * MS);
        if i == 150 {
            a.set_rate(now, 2_000_000);
            b.set_rate(now, 2_000_000);
        }
        if i == 300 {
            a.set_up(now, false);
            b.set_up(now, false);
        }
        if i == 320 {
            a.set_up(now, true);
            b.set_up(now, true);
        }
        let size = 200 + (i as u32 % 7) * 200;
        assert_eq!(a.offer(now, i, size, &mut ra), b.offer(now, i, size, &mut rb));
        while let Some(d) = a.poll(now) {
            got.0.push((d.packet, d.at));
        }
        while let Some(d) = b.deliver(now) {
            got.1.push((d.packet, d.at));
        }
        b.advance(now);
        assert_eq!(a.stats(), b.stats(), "at offer {i}");
        assert_eq!(b.stats().accounted(), b.stats().offered_packets);
    }
    assert_eq!(got.0, got.1);
    assert!(got.0.len() > 150, "{}", got.0.len());
}

#[test]
fn single_packet_serialisation_plus_delay() {
    // 1500 B at 10 Mbit/s = 12000 bits / 1e7 = 1.2 ms; plus 20 ms.
    let mut l = LinkDirection::new(params(10_000_000, 20 * MS, unbounded()));
    let mut rng = SimRng::new(1, 1);
    let t0 = 5 * MS;
    assert_eq!(l.offer(Instant(t0), 'a', 1500, &mut rng), Offer::Queued);
    let want = t0 + 1_200_000 + 20 * MS;
    assert_eq!(l.next_wakeup(), Some(Instant(want)));
    assert_eq!(l.stats().queue_bytes, 1500);
    assert_eq!(l.poll(Instant(want - 1)), None);
    // Serialisation ended at t0 + 1.2 ms: no longer queued.
    let s = l.stats();
    assert_eq!((s.queue_bytes, s.queue_packets, s.tx_packets, s.tx_bytes, s.in_flight_packets), (0, 0, 1, 1500, 1));
    assert_eq!(l.poll(Instant(want)), Some(Delivered { packet: 'a', at: Instant(want) }));
    assert_eq!(l.next_wakeup(), None);
    assert_eq!(l.stats().delivered_packets, 1);
}

#[test]
fn back_to_back_packets_spaced_by_tx_time() {
    let mut l = LinkDirection::new(params(10_000_000, 20 * MS, unbounded()));
    let mut rng = SimRng::new(1, 1);
    for i in 0..10u64 {
        l.offer(Instant::ZERO, i, 1500, &mut rng);
    }
    assert_eq!(l.stats().queue_packets, 10);
    assert_eq!(l.stats().max_queue_bytes, 15_000);
    let out = drain(&mut l);
    for (k, (id, at)) in out.iter().enumerate() {
        assert_eq!(*id, k as u64);
        assert_eq!(*at, (k as u64 + 1) * 1_200_000 + 20 * MS);
    }
    // A packet offered while the link is idle starts immediately.
    let t = 1000 * MS;
    l.offer(Instant(t), 99, 1500, &mut rng);
    assert_eq!(l.next_wakeup(), Some(Instant(t + 1_200_000 + 20 * MS)));
}

#[test]
fn long_run_has_no_drift() {
    // 1500 B at 7 Mbit/s = 1714285.714... ns: rounding each packet up
    // would gain 0.29 ns per packet (29 us over 100k packets).
    let rate = 7_000_000u64;
    let n = 100_000u64;
    let mut l = LinkDirection::new(params(rate, 3 * MS, unbounded()));
    let mut rng = SimRng::new(1, 1);
    for i in 0..n {
        l.offer(Instant::ZERO, i, 1500, &mut rng);
    }
    let out = drain(&mut l);
    assert_eq!(out.len() as u64, n);
    for (k, (_, at)) in out.iter().enumerate() {
        let bits = (k as u128 + 1) * 12_000 * 1_000_000_000;
        let exact_end = bits.div_ceil(rate as u128) as u64;
        assert_eq!(*at, exact_end + 3 * MS, "packet {k}");
    }
    // So throughput over the run is the rate (the last end is the exact
    // total rounded up by less than 1 ns).
    let last = out.last().unwrap().1 - 3 * MS;
    let tput = (n * 12_000) as f64 / (last as f64 / 1e9);
    assert!((tput - rate as f64).abs() < 1e-3, "{tput}");
    let s = l.stats();
    assert_eq!((s.tx_packets, s.tx_bytes, s.delivered_packets), (n, n * 1500, n));
}

#[test]
fn backlogged_sender_keeps_exact_timeline() {
    // A sender that keeps one packet waiting, topping up at every
    // delivery (like a window-limited TCP): the remainder carries across
    // offers made while the serialiser is busy.
    let rate = 3_000_000u64; // 1000 B = 2666666.67 ns
    let mut l = LinkDirection::new(params(rate, 0, QueueConfig::drop_tail_packets(2)));
    let mut rng = SimRng::new(1, 1);
    l.offer(Instant::ZERO, 1u128, 1000, &mut rng);
    l.offer(Instant::ZERO, 2u128, 1000, &mut rng);
    for k in 1..=30_000u128 {
        let t = l.next_wakeup().unwrap();
        let d = l.poll(t).unwrap();
        assert_eq!(d.packet, k);
        assert_eq!(u128::from(d.at.0), (k * 8000 * 1_000_000_000).div_ceil(u128::from(rate)));
        assert_eq!(l.offer(t, k + 2, 1000, &mut rng), Offer::Queued);
    }
}

#[test]
fn idle_link_restarts_at_offer_time() {
    // A packet offered after the serialiser went idle starts at its own
    // offer time (the link cannot bank idle time).
    let mut l = LinkDirection::new(params(3_000_000, 0, unbounded()));
    let mut rng = SimRng::new(1, 1);
    l.offer(Instant::ZERO, 1, 1000, &mut rng);
    assert_eq!(l.next_wakeup(), Some(Instant(2_666_667)));
    l.offer(Instant(2_666_667), 2, 1000, &mut rng);
    assert_eq!(drain(&mut l), vec![(1, 2_666_667), (2, 2 * 2_666_667)]);
}

#[test]
fn unlimited_rate_has_no_serialisation() {
    let mut l = LinkDirection::new(params(0, 7, QueueConfig::drop_tail_packets(1)));
    let mut rng = SimRng::new(1, 1);
    for i in 0..5 {
        assert_eq!(l.offer(Instant(100), i, 9000, &mut rng), Offer::Queued);
    }
    assert_eq!(l.stats().queue_bytes, 0);
    assert_eq!(l.stats().max_queue_bytes, 0);
    let out = drain(&mut l);
    assert_eq!(out, (0..5).map(|i| (i, 107)).collect::<Vec<_>>());
}

#[test]
fn drop_tail_packets_drops_exactly_the_overflow() {
    let mut l = LinkDirection::new(params(1_000_000, MS, QueueConfig::drop_tail_packets(10)));
    let mut rng = SimRng::new(1, 1);
    let res: Vec<Offer> = (0..25).map(|i| l.offer(Instant::ZERO, i, 100, &mut rng)).collect();
    assert!(res[..10].iter().all(|o| *o == Offer::Queued));
    assert!(res[10..].iter().all(|o| *o == Offer::DroppedQueue));
    let s = l.stats();
    assert_eq!((s.queue_packets, s.queue_drops, s.drops_total()), (10, 15, 15));
    // One tx time later (100 B at 1 Mbit/s = 800 us) one slot is free.
    assert_eq!(l.offer(Instant(800_000 - 1), 100, 100, &mut rng), Offer::DroppedQueue);
    assert_eq!(l.offer(Instant(800_000), 101, 100, &mut rng), Offer::Queued);
    let ids: Vec<u32> = drain(&mut l).into_iter().map(|x| x.0).collect();
    assert_eq!(ids, (0..10).chain([101]).collect::<Vec<_>>());
    assert_eq!(l.stats().accounted(), l.stats().offered_packets);
}

#[test]
fn drop_tail_bytes_drops_exactly_the_overflow() {
    let mut l = LinkDirection::new(params(1_000_000, MS, QueueConfig::drop_tail_bytes(10_000)));
    let mut rng = SimRng::new(1, 1);
    for i in 0..6 {
        assert_eq!(l.offer(Instant::ZERO, i, 1500, &mut rng), Offer::Queued);
        // 9000
    }
    assert_eq!(l.offer(Instant::ZERO, 6, 1500, &mut rng), Offer::DroppedQueue); // 10500
    assert_eq!(l.offer(Instant::ZERO, 7, 1000, &mut rng), Offer::Queued); // exactly 10000
    assert_eq!(l.offer(Instant::ZERO, 8, 1, &mut rng), Offer::DroppedQueue);
    let s = l.stats();
    assert_eq!((s.queue_bytes, s.max_queue_bytes, s.queue_drops), (10_000, 10_000, 2));
    assert_eq!(drain(&mut l).len(), 7);
}

#[test]
fn bernoulli_loss_rate() {
    let mut p = params(0, 0, unbounded());
    p.loss = LossModel::Bernoulli { p: 0.01 };
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(77, 3);
    let n = 200_000u64;
    let mut delivered = 0;
    for i in 0..n {
        l.offer(Instant(i), i, 100, &mut rng);
        while l.poll(Instant(i)).is_some() {
            delivered += 1;
        }
    }
    let s = l.stats();
    let lost = s.drops_loss();
    assert_eq!(lost + delivered, n);
    assert_eq!(s.tx_packets, n, "lost frames still used the wire");
    let sigma = (n as f64 * 0.01 * 0.99).sqrt();
    assert!((lost as f64 - n as f64 * 0.01).abs() < 4.0 * sigma, "lost {lost}");
}

#[test]
fn gilbert_elliott_matches_stationary_loss() {
    let (p_gb, p_bg, lg, lb) = (0.01, 0.1, 0.001, 0.5);
    let mut p = params(0, 0, unbounded());
    p.loss = LossModel::GilbertElliott { p_gb, p_bg, loss_good: lg, loss_bad: lb };
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(5, 6);
    let n = 500_000u64;
    let mut lost_flags = Vec::with_capacity(n as usize);
    for i in 0..n {
        l.offer(Instant(i), i, 100, &mut rng);
        let got = l.poll(Instant(i)).is_some();
        lost_flags.push(!got);
    }
    let lost = lost_flags.iter().filter(|x| **x).count() as f64;
    assert_eq!(lost as u64, l.stats().loss_drops);
    let pi_bad = p_gb / (p_gb + p_bg);
    let want = (1.0 - pi_bad) * lg + pi_bad * lb;
    let got = lost / n as f64;
    assert!((got - want).abs() < 0.1 * want, "got {got}, want {want}");
    // Losses are bursty: P(loss | previous lost) far above the mean.
    let after_loss = lost_flags.windows(2).filter(|w| w[0]).count() as f64;
    let both = lost_flags.windows(2).filter(|w| w[0] && w[1]).count() as f64;
    assert!(both / after_loss > 3.0 * want, "conditional {}", both / after_loss);
}

fn jitter_run(allow_reorder: bool) -> Vec<(u32, u64)> {
    let mut p = params(100_000_000, 5 * MS, unbounded());
    p.jitter = Jitter::Uniform { max: Duration::from_millis(10) };
    p.allow_reorder = allow_reorder;
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(3, 3);
    // 1500 B every 200 us at 100 Mbit/s (120 us each): no queueing.
    for i in 0..2000u32 {
        l.offer(Instant(u64::from(i) * 200_000), i, 1500, &mut rng);
    }
    let out = drain(&mut l);
    assert_eq!(out.len(), 2000);
    for (id, at) in &out {
        let base = u64::from(*id) * 200_000 + 120_000 + 5 * MS;
        assert!(*at >= base);
        if allow_reorder {
            assert!(*at <= base + 10 * MS);
        }
    }
    // Delivered in arrival order either way.
    assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
    out
}

#[test]
fn jitter_never_reorders_unless_allowed() {
    let fifo = jitter_run(false);
    assert!(fifo.windows(2).all(|w| w[0].0 < w[1].0));
    let re = jitter_run(true);
    let inversions = re.windows(2).filter(|w| w[0].0 > w[1].0).count();
    assert!(inversions > 100, "{inversions}");
    // Jitter is spread over [0, 10ms]: some arrivals well above the base.
    assert!(re.iter().any(|(id, at)| *at > u64::from(*id) * 200_000 + 120_000 + 13 * MS));
}

/// The extra delay (arrival - offer - delay) of `n` packets on an
/// unlimited-rate link that may reorder, so nothing holds a packet back:
/// exactly the jitter samples.
fn jitter_samples(j: Jitter, n: u64, seed: u64) -> Vec<u64> {
    let delay = 7 * MS;
    let mut p = params(0, delay, unbounded());
    p.jitter = j;
    p.allow_reorder = true;
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(seed, 17);
    let sent = |i: u64| i * 1_000;
    for i in 0..n {
        assert_eq!(l.offer(Instant(sent(i)), i, 1500, &mut rng), Offer::Queued);
    }
    let out = drain(&mut l);
    assert_eq!(out.len() as u64, n);
    let mut extra = vec![0u64; n as usize];
    for (id, at) in out {
        assert!(at >= sent(id) + delay, "packet {id} arrived before the propagation delay");
        extra[id as usize] = at - sent(id) - delay;
    }
    extra
}

/// Sample mean and standard deviation.
fn mean_sd(x: &[u64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

fn fraction(x: &[u64], pred: impl Fn(u64) -> bool) -> f64 {
    x.iter().filter(|&&v| pred(v)).count() as f64 / x.len() as f64
}

const JITTER_N: u64 = 100_000;

#[test]
fn uniform_jitter_statistics() {
    let j = 4 * MS;
    let x = jitter_samples(Jitter::Uniform { max: Duration::from_nanos(j) }, JITTER_N, 1);
    let (mean, sd) = mean_sd(&x);
    let (want_mean, want_sd) = (j as f64 / 2.0, j as f64 / 12f64.sqrt());
    // sd of the sample mean = want_sd / sqrt(n) = 0.09% of j: 1% is > 10 sigma.
    assert!((mean / want_mean - 1.0).abs() < 0.01, "mean {mean} vs {want_mean}");
    assert!((sd / want_sd - 1.0).abs() < 0.02, "sd {sd} vs {want_sd}");
    assert!(x.iter().all(|&v| v <= j));
    assert!(fraction(&x, |v| v < j / 4) > 0.24 && fraction(&x, |v| v > 3 * j / 4) > 0.24);
}

#[test]
fn normal_jitter_is_half_normal_with_sigma() {
    let sigma = 3 * MS;
    let x = jitter_samples(Jitter::Normal { sigma: Duration::from_nanos(sigma) }, JITTER_N, 2);
    let (mean, sd) = mean_sd(&x);
    let s = sigma as f64;
    let want_mean = s * (2.0 / std::f64::consts::PI).sqrt();
    let want_sd = s * (1.0 - 2.0 / std::f64::consts::PI).sqrt();
    // sd of the sample mean = 0.6 sigma / sqrt(n) = 0.24% of the mean.
    assert!((mean / want_mean - 1.0).abs() < 0.01, "mean {mean} vs {want_mean}");
    assert!((sd / want_sd - 1.0).abs() < 0.02, "sd {sd} vs {want_sd}");
    // |Z| < 1 with probability 0.6827, |Z| < 2 with 0.9545 (sd of a
    // fraction over 100k is <= 0.0016).
    assert!((fraction(&x, |v| v < sigma) - 0.6827).abs() < 0.008);
    assert!((fraction(&x, |v| v < 2 * sigma) - 0.9545).abs() < 0.005);
    // Mass near zero (the half-normal's mode), nothing absurd in the tail.
    assert!(fraction(&x, |v| v < sigma / 10) > 0.07);
    assert!(x.iter().all(|&v| v < 9 * sigma));
}

#[test]
fn pareto_jitter_has_the_mean_and_a_heavy_tail() {
    let m = 2 * MS;
    let x = jitter_samples(Jitter::Pareto { mean: Duration::from_nanos(m) }, JITTER_N, 3);
    let (mean, sd) = mean_sd(&x);
    let m_f = m as f64;
    let x_m = m_f * 2.0 / 3.0;
    // sd of the sample mean = (m / sqrt 3) / sqrt(n) = 0.18% of m.
    assert!((mean / m_f - 1.0).abs() < 0.015, "mean {mean} vs {m_f}");
    // The sample sd of a shape-3 Pareto converges slowly (infinite
    // fourth moment): a loose check, the quantiles below are exact.
    assert!((sd / (m_f / 3f64.sqrt()) - 1.0).abs() < 0.25, "sd {sd}");
    // Never below the scale x_m = 2/3 mean; median x_m * 2^(1/3);
    // P(X > 2 m) = (x_m / 2m)^3 = 1/27.
    assert!(x.iter().all(|&v| v as f64 >= x_m - 1.0), "min {}", x.iter().min().unwrap());
    let mut sorted = x.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2] as f64;
    assert!((median / (x_m * 2f64.cbrt()) - 1.0).abs() < 0.01, "median {median}");
    assert!((fraction(&x, |v| v > 2 * m) - 1.0 / 27.0).abs() < 0.003);
    // Heavy tail: some packets wait many times the mean.
    assert!(sorted[sorted.len() - 1] > 10 * m, "max {}", sorted[sorted.len() - 1]);
}

#[test]
fn jitter_draws_are_deterministic_and_zero_scale_draws_nothing() {
    for j in [Jitter::Uniform { max: Duration::from_millis(3) }, Jitter::Normal { sigma: Duration::from_millis(3) }, Jitter::Pareto { mean: Duration::from_millis(3) }] {
        let a = jitter_samples(j, 2000, 9);
        assert_eq!(a, jitter_samples(j, 2000, 9), "{j:?}");
        assert_ne!(a, jitter_samples(j, 2000, 10), "{j:?}");
        // A zero scale is no jitter and leaves the stream untouched.
        let zero = j.with_scale(Duration::ZERO);
        assert_eq!(zero.scale_ns(), 0);
        let mut l = LinkDirection::new(LinkParams { jitter: zero, ..params(0, MS, unbounded()) });
        let mut rng = SimRng::new(1, 1);
        let before = rng.clone();
        for i in 0..100 {
            l.offer(Instant(i), i, 100, &mut rng);
        }
        assert_eq!(rng.next_u64(), before.clone().next_u64());
        assert!(drain(&mut l).iter().all(|&(i, at)| at == i + MS));
    }
}

#[test]
fn with_scale_keeps_the_distribution() {
    let d = Duration::from_millis(4);
    assert_eq!(Jitter::None.with_scale(d), Jitter::Uniform { max: d });
    assert_eq!(Jitter::Normal { sigma: Duration::ZERO }.with_scale(d), Jitter::Normal { sigma: d });
    assert_eq!(Jitter::Pareto { mean: MS_D }.with_scale(d), Jitter::Pareto { mean: d });
    assert_eq!(Jitter::Pareto { mean: d }.scale_ns(), 4 * MS);
}

const MS_D: Duration = Duration::from_millis(1);

/// 3000 packets of 1500 B every 200 us on a 100 Mbit/s link (120 us
/// each, so no queueing) with jitter far above the spacing.
fn jitter_order_run(j: Jitter, allow_reorder: bool) -> Vec<(u32, u64)> {
    let mut p = params(100_000_000, 5 * MS, unbounded());
    p.jitter = j;
    p.allow_reorder = allow_reorder;
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(4, 4);
    for i in 0..3000u32 {
        l.offer(Instant(u64::from(i) * 200_000), i, 1500, &mut rng);
    }
    let out = drain(&mut l);
    assert_eq!(out.len(), 3000);
    for (id, at) in &out {
        assert!(*at >= u64::from(*id) * 200_000 + 120_000 + 5 * MS, "{j:?}: {id} early");
    }
    assert!(out.windows(2).all(|w| w[0].1 <= w[1].1), "delivered in arrival order");
    out
}

#[test]
fn no_distribution_reorders_unless_allowed() {
    for j in [Jitter::Uniform { max: Duration::from_millis(10) }, Jitter::Normal { sigma: Duration::from_millis(5) }, Jitter::Pareto { mean: Duration::from_millis(5) }] {
        let fifo = jitter_order_run(j, false);
        assert!(fifo.windows(2).all(|w| w[0].0 < w[1].0), "{j:?} reordered");
        let re = jitter_order_run(j, true);
        let inversions = re.windows(2).filter(|w| w[0].0 > w[1].0).count();
        assert!(inversions > 100, "{j:?}: only {inversions} inversions with reorder");
    }
}

fn red(gentle: bool, weight: f64) -> QueueConfig {
    QueueConfig::red(10_000, 20_000, 1_000_000, 0.2, weight, gentle)
}

/// Offers `n` 100-byte packets to a 1 kbit/s link (nothing leaves the
/// queue during the test); returns (average used for the decision,
/// outcome) per offer.
/// RED's average queue size of a RED link.
fn red_avg<P>(l: &LinkDirection<P>) -> f64 {
    match &l.discipline {
        Discipline::Red(r) => r.average(),
        d => panic!("not a RED link: {d:?}"),
    }
}

fn red_trace(gentle: bool, weight: f64, n: usize) -> (LinkDirection<()>, Vec<(f64, Offer)>) {
    let mut l = LinkDirection::new(params(1000, 0, red(gentle, weight)));
    let mut rng = SimRng::new(8, u64::from(gentle));
    let trace = (0..n as u64)
        .map(|t| {
            let o = l.offer(Instant(t), (), 100, &mut rng);
            (red_avg(&l), o)
        })
        .collect();
    (l, trace)
}

#[test]
fn red_instantaneous_average_regions() {
    // weight 1: avg = queue before the arrival, so the regions are exact.
    let (l, trace) = red_trace(false, 1.0, 3000);
    let below: Vec<_> = trace.iter().filter(|r| r.0 < 10_000.0).collect();
    assert_eq!(below.len(), 100);
    assert!(below.iter().all(|r| r.1 == Offer::Queued));
    let between: Vec<_> = trace.iter().filter(|r| (10_000.0..20_000.0).contains(&r.0)).collect();
    assert_eq!(between.iter().filter(|r| r.1 == Offer::Queued).count(), 100);
    assert!(between.iter().filter(|r| r.1 == Offer::DroppedQueue).count() > 5);
    // Once at max_th (non-gentle) every packet is dropped.
    let above: Vec<_> = trace.iter().filter(|r| r.0 >= 20_000.0).collect();
    assert!(above.len() > 1000);
    assert!(above.iter().all(|r| r.1 == Offer::DroppedQueue));
    assert_eq!(l.stats().queue_bytes, 20_000);
}

#[test]
fn red_averaged_regions() {
    // A slow average (w = 0.001) lags the queue by ~1000 packets, so the
    // queue overshoots and the average crosses every region.
    for gentle in [false, true] {
        let (l, trace) = red_trace(gentle, 0.001, 8000);
        let region = |lo: f64, hi: f64| trace.iter().filter(move |r| r.0 >= lo && r.0 < hi);
        assert!(region(0.0, 10_000.0).all(|r| r.1 == Offer::Queued));
        assert!(region(10_000.0, 20_000.0).any(|r| r.1 == Offer::Queued));
        assert!(region(10_000.0, 20_000.0).any(|r| r.1 == Offer::DroppedQueue));
        if gentle {
            // Gentle: between max_th and 2 max_th, drops ramp to 1.
            assert!(region(20_000.0, 40_000.0).any(|r| r.1 == Offer::Queued));
            assert!(region(20_000.0, 40_000.0).any(|r| r.1 == Offer::DroppedQueue));
            assert!(region(40_000.0, f64::INFINITY).count() > 100);
            assert!(region(40_000.0, f64::INFINITY).all(|r| r.1 == Offer::DroppedQueue));
        } else {
            assert!(region(20_000.0, f64::INFINITY).count() > 100);
            assert!(region(20_000.0, f64::INFINITY).all(|r| r.1 == Offer::DroppedQueue));
        }
        assert!(l.stats().queue_bytes > 40_000, "the queue overshoots: {}", l.stats().queue_bytes);
    }
}

#[test]
fn red_average_decays_when_idle_and_limit_holds() {
    let q = QueueConfig::red(5_000, 10_000, 12_000, 0.1, 0.5, false);
    let mut l = LinkDirection::new(params(8_000_000, 0, q)); // 1000 B = 1 ms
    let mut rng = SimRng::new(1, 2);
    for _ in 0..40 {
        l.offer(Instant::ZERO, (), 1000, &mut rng);
    }
    assert!(l.stats().queue_bytes <= 12_000);
    assert!(l.stats().queue_drops > 0);
    // The queue drains by 12 ms; after a long idle the average has
    // decayed and the next burst below min_th is accepted in full.
    assert!(red_avg(&l) > 5_000.0);
    let t = Instant(1000 * MS);
    assert_eq!(l.offer(t, (), 1000, &mut rng), Offer::Queued);
    assert!(red_avg(&l) < 1.0, "decayed over the idle period: {}", red_avg(&l));
    for _ in 0..4 {
        assert_eq!(l.offer(t, (), 1000, &mut rng), Offer::Queued);
    }
}

#[test]
fn link_down_drops_everything_inside_and_up_resumes() {
    // 1000 B at 8 Mbit/s = 1 ms; delay 10 ms.
    let mut l = LinkDirection::new(params(8_000_000, 10 * MS, unbounded()));
    let mut rng = SimRng::new(1, 1);
    for i in 0..5 {
        l.offer(Instant::ZERO, i, 1000, &mut rng);
    }
    // At 11.5 ms: #0 arrived (11 ms), #1..#4 serialised (2..5 ms),
    // propagating (arrive 12..15 ms).
    let t = Instant(11 * MS + MS / 2);
    l.set_up(t, false);
    assert!(!l.is_up());
    let s = l.stats();
    // #0 has arrived but is not polled yet: still counted as inside.
    assert_eq!((s.down_drops, s.queue_packets, s.in_flight_packets), (4, 0, 1));
    // The packet that had already arrived is still handed out.
    assert_eq!(l.poll(t).map(|d| d.packet), Some(0));
    assert_eq!(l.stats().in_flight_packets, 0);
    assert_eq!(l.next_wakeup(), None);
    assert_eq!(l.offer(t, 9, 1000, &mut rng), Offer::DroppedDown);
    assert_eq!(l.stats().down_drops, 5);

    // Queued (not yet serialised) packets are dropped too.
    l.set_up(Instant(20 * MS), true);
    for i in 10..15 {
        assert_eq!(l.offer(Instant(20 * MS), i, 1000, &mut rng), Offer::Queued);
    }
    l.set_up(Instant(22 * MS + 1), false);
    let s = l.stats();
    assert_eq!((s.down_drops, s.queue_packets, s.queue_bytes), (10, 0, 0));
    assert_eq!(s.tx_packets, 5 + 2);
    // Up again: the serialiser is idle, a new packet starts right away.
    l.set_up(Instant(30 * MS), true);
    l.offer(Instant(30 * MS), 20, 1000, &mut rng);
    assert_eq!(drain(&mut l), vec![(20, 41 * MS)]);
    let s = l.stats();
    assert_eq!(s.accounted(), s.offered_packets);
}

#[test]
fn set_rate_mid_queue_retimes() {
    // 1500 B at 10 Mbit/s = 1.2 ms each.
    let mut l = LinkDirection::new(params(10_000_000, 20 * MS, unbounded()));
    let mut rng = SimRng::new(1, 1);
    for i in 0..3 {
        l.offer(Instant::ZERO, i, 1500, &mut rng);
    }
    // At 0.6 ms, #0 has 6000 bits left: at 20 Mbit/s that is 0.3 ms.
    l.set_rate(Instant(600_000), 20_000_000);
    let out = drain(&mut l);
    let ends = [900_000, 1_500_000, 2_100_000];
    assert_eq!(out, (0..3).map(|i| (i, ends[i as usize] + 20 * MS)).collect::<Vec<_>>());

    // Slower, with non-integer times: 20 -> 7 Mbit/s half way through
    // the first packet (0.6 ms at 20 Mbit/s). The 6000 bits left and the
    // 12000 bits of each following packet go out at 7 Mbit/s, exactly.
    let t = 100 * MS;
    for i in 0..3 {
        l.offer(Instant(t), i, 1500, &mut rng);
    }
    l.set_rate(Instant(t + 300_000), 7_000_000);
    let out = drain(&mut l);
    let want: Vec<_> = (0..3u64)
        .map(|i| (i, t + 300_000 + (u128::from(6000 + 12000 * i) * 1_000_000_000).div_ceil(7_000_000) as u64 + 20 * MS))
        .collect();
    assert_eq!(out, want);

    // To unlimited: everything queued leaves at once.
    for i in 0..3 {
        l.offer(Instant(200 * MS), i, 1500, &mut rng);
    }
    l.set_rate(Instant(200 * MS + 1), 0);
    assert_eq!(l.stats().queue_packets, 0);
    let out = drain(&mut l);
    assert_eq!(out, (0..3).map(|i| (i, 220 * MS + 1)).collect::<Vec<_>>());
    // And back from unlimited.
    l.set_rate(Instant(300 * MS), 10_000_000);
    l.offer(Instant(300 * MS), 7, 1500, &mut rng);
    assert_eq!(drain(&mut l), vec![(7, 300 * MS + 1_200_000 + 20 * MS)]);
}

#[test]
fn set_delay_applies_to_unsent_packets_only() {
    // 1000 B at 8 Mbit/s = 1 ms; delay 10 ms.
    let mut l = LinkDirection::new(params(8_000_000, 10 * MS, unbounded()));
    let mut rng = SimRng::new(1, 1);
    for i in 0..4 {
        l.offer(Instant::ZERO, i, 1000, &mut rng);
    }
    // At 2.5 ms #0, #1 are propagating (arrive 11, 12 ms); #2 is on the
    // serialiser (ends 3 ms), #3 waiting (ends 4 ms). New delay 1 ms:
    // #2 and #3 would arrive at 4 and 5 ms but may not overtake #1, so
    // both are held to 12 ms.
    l.set_delay(Instant(2 * MS + MS / 2), Duration::from_millis(1));
    assert_eq!(drain(&mut l), vec![(0, 11 * MS), (1, 12 * MS), (2, 12 * MS), (3, 12 * MS)]);
    // Longer delay.
    for i in 0..2 {
        l.offer(Instant(100 * MS), i, 1000, &mut rng);
    }
    l.set_delay(Instant(100 * MS + MS / 2), Duration::from_millis(50));
    assert_eq!(drain(&mut l), vec![(0, 151 * MS), (1, 152 * MS)]);
}

#[test]
fn set_delay_with_reordering_allowed() {
    let mut p = params(8_000_000, 10 * MS, unbounded());
    p.allow_reorder = true;
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(1, 1);
    for i in 0..4 {
        l.offer(Instant::ZERO, i, 1000, &mut rng);
    }
    l.set_delay(Instant(2 * MS + MS / 2), Duration::from_millis(1));
    assert_eq!(drain(&mut l), vec![(2, 4 * MS), (3, 5 * MS), (0, 11 * MS), (1, 12 * MS)]);
    for i in 0..3 {
        l.offer(Instant(100 * MS), i, 1000, &mut rng);
    }
    l.set_rate(Instant(100 * MS + MS / 2), 16_000_000);
    assert_eq!(drain(&mut l), vec![(0, 101 * MS + 750_000), (1, 101 * MS + 1_250_000), (2, 101 * MS + 1_750_000)]);
}

fn lossy_run(seed: u64) -> (Vec<(u32, u64)>, LinkStats) {
    let mut p = params(50_000_000, 2 * MS, red(true, 0.01));
    p.jitter = Jitter::Uniform { max: Duration::from_micros(300) };
    p.loss = LossModel::GilbertElliott { p_gb: 0.02, p_bg: 0.2, loss_good: 0.001, loss_bad: 0.3 };
    p.allow_reorder = true;
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(seed, 42);
    let mut out = Vec::new();
    let mut now = 0u64;
    for i in 0..20_000u32 {
        // Bursty arrivals, faster than the link on average.
        now += if i % 10 == 0 { 1_000_000 } else { 50_000 };
        if let Some(w) = l.next_wakeup() {
            if w.0 <= now {
                while let Some(d) = l.poll(Instant(now)) {
                    out.push((d.packet, d.at.0));
                }
            }
        }
        l.offer(Instant(now), i, 1200, &mut rng);
    }
    out.extend(drain(&mut l));
    (out, l.stats())
}

#[test]
fn same_seed_same_deliveries() {
    let (a, sa) = lossy_run(11);
    let (b, sb) = lossy_run(11);
    assert_eq!(a, b);
    assert_eq!(sa, sb);
    assert!(sa.queue_drops > 0 && sa.loss_drops > 0, "{sa:?}");
    let (c, _) = lossy_run(12);
    assert_ne!(a, c);
}

#[test]
fn degenerate_parameters_do_not_panic() {
    let mut rng = SimRng::new(0, 0);
    let queues = [
        QueueConfig::drop_tail_packets(0),
        QueueConfig::drop_tail_bytes(0),
        QueueConfig::drop_tail_bytes(u64::MAX),
        QueueConfig::red(9, 3, 0, f64::NAN, f64::NAN, true),
        QueueConfig::red(0, 0, u64::MAX, 7.0, -1.0, true),
        QueueConfig::red(0, u64::MAX, u64::MAX, 1.0, 1.0, false),
    ];
    for q in queues {
        for rate in [0, 1, u64::MAX] {
            let mut p = params(rate, u64::MAX, q);
            p.delay = Duration::MAX;
            p.jitter = [Jitter::Uniform { max: Duration::MAX }, Jitter::Normal { sigma: Duration::MAX }, Jitter::Pareto { mean: Duration::MAX }]
                [rate as usize % 3];
            p.loss = LossModel::GilbertElliott { p_gb: f64::NAN, p_bg: 2.0, loss_good: -1.0, loss_bad: f64::INFINITY };
            let mut l = LinkDirection::new(p);
            for (i, size) in [0u32, 1, u32::MAX, 1500].into_iter().enumerate() {
                l.offer(Instant(i as u64), size, size, &mut rng);
                l.offer(Instant::MAX, size, size, &mut rng);
                l.offer(Instant::ZERO, size, size, &mut rng); // time going backwards
            }
            l.set_rate(Instant(5), 3);
            l.set_rate(Instant(5), u64::MAX);
            l.set_delay(Instant(6), Duration::ZERO);
            l.set_loss(LossModel::Bernoulli { p: f64::NAN });
            let _ = l.next_wakeup();
            while l.poll(Instant::MAX).is_some() {}
            l.set_up(Instant(1), false);
            l.set_up(Instant(1), true);
            let s = l.stats();
            assert_eq!(s.accounted(), s.offered_packets, "{q:?} {rate}");
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Offer { dt: u64, size: u32 },
    Poll { dt: u64 },
    PollAtWakeup,
    Rate(u64),
    Delay(u64),
    Down,
    Up,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u64..3_000_000, 0u32..3000).prop_map(|(dt, size)| Op::Offer { dt, size }),
        3 => (0u64..5_000_000).prop_map(|dt| Op::Poll { dt }),
        4 => Just(Op::PollAtWakeup),
        1 => prop_oneof![Just(0u64), 1_000u64..100_000_000].prop_map(Op::Rate),
        1 => (0u64..10_000_000).prop_map(Op::Delay),
        1 => Just(Op::Down),
        1 => Just(Op::Up),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    /// Random offer/poll/reconfigure sequences: FIFO delivery without
    /// reordering, delivery in arrival order always, nothing before
    /// offer + delay, nothing after it was due, wake-ups exact, and the
    /// counters always add up.
    #[test]
    fn fifo_timing_and_accounting(
        rate in prop_oneof![Just(0u64), 100_000u64..1_000_000_000],
        delay in 0u64..20_000_000,
        jitter in prop_oneof![Just(0u64), 1u64..5_000_000],
        jitter_kind in 0u8..3,
        loss in 0.0f64..0.3,
        limit in 1u64..40,
        queue_kind in 0u8..4,
        reorder in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..300),
        seed in any::<u64>(),
    ) {
        let queue = match queue_kind {
            0 => QueueConfig::drop_tail_packets(limit),
            1 => QueueConfig::drop_tail_bytes(limit * 1000),
            k => QueueConfig::red(limit * 200, limit * 600, limit * 1000, 0.3, 0.2, k == 3),
        };
        let mut p = params(rate, delay, queue);
        let scale = Duration::from_nanos(jitter);
        p.jitter = match jitter_kind {
            _ if jitter == 0 => Jitter::None,
            0 => Jitter::Uniform { max: scale },
            1 => Jitter::Normal { sigma: scale },
            _ => Jitter::Pareto { mean: scale },
        };
        p.loss = LossModel::Bernoulli { p: loss };
        p.allow_reorder = reorder;
        let mut l = LinkDirection::new(p);
        let mut rng = SimRng::new(seed, 0);
        let mut now = 0u64;
        let mut sent_at: Vec<u64> = Vec::new();
        let mut last_id: Option<usize> = None;
        let mut last_at = 0u64;
        // Smallest delay in force since each packet was offered.
        let mut min_delay_since: Vec<u64> = Vec::new();
        let mut cur_delay = delay;
        let mut check = |l: &mut LinkDirection<usize>, t: u64, sent_at: &[u64], min_delay_since: &[u64]| -> Result<(), TestCaseError> {
            while let Some(d) = l.poll(Instant(t)) {
                let id = d.packet;
                prop_assert!(d.at.0 <= t);
                prop_assert!(d.at.0 >= sent_at[id] + min_delay_since[id], "early: {} < {} + {}", d.at.0, sent_at[id], min_delay_since[id]);
                if let (Some(prev), false) = (last_id, reorder) { prop_assert!(id > prev, "reordered {} after {}", id, prev); }
                prop_assert!(d.at.0 >= last_at);
                last_id = Some(id);
                last_at = d.at.0;
            }
            // Nothing is overdue after a poll.
            if let Some(w) = l.next_wakeup() { prop_assert!(w.0 > t); }
            let s = l.stats();
            prop_assert_eq!(s.accounted(), s.offered_packets);
            Ok(())
        };
        for o in ops {
            match o {
                Op::Offer { dt, size } => {
                    now += dt;
                    let id = sent_at.len();
                    sent_at.push(now);
                    min_delay_since.push(cur_delay);
                    let _ = l.offer(Instant(now), id, size, &mut rng);
                }
                Op::Poll { dt } => { now += dt; check(&mut l, now, &sent_at, &min_delay_since)?; }
                Op::PollAtWakeup => {
                    if let Some(w) = l.next_wakeup() {
                        now = now.max(w.0);
                        let before = l.stats().delivered_packets;
                        check(&mut l, now, &sent_at, &min_delay_since)?;
                        prop_assert!(l.stats().delivered_packets > before);
                    }
                }
                Op::Rate(r) => l.set_rate(Instant(now), r),
                Op::Delay(d) => {
                    l.set_delay(Instant(now), Duration::from_nanos(d));
                    cur_delay = d;
                    for m in min_delay_since.iter_mut() { *m = (*m).min(d); }
                }
                Op::Down => l.set_up(Instant(now), false),
                Op::Up => l.set_up(Instant(now), true),
            }
            let s = l.stats();
            prop_assert_eq!(s.accounted(), s.offered_packets);
        }
        check(&mut l, u64::MAX, &sent_at, &min_delay_since)?;
        let s = l.stats();
        prop_assert_eq!(s.queue_packets + s.in_flight_packets, 0);
        prop_assert_eq!(s.offered_packets, s.delivered_packets + s.drops_total());
    }
}

/// Per-packet cost of the common path (offer + wake-up poll).
/// `cargo test -p mplab-sim --lib --release -- --ignored --nocapture link_speed`
#[test]
#[ignore]
fn link_speed() {
    let mut p = params(10_000_000_000, 10_000, QueueConfig::drop_tail_packets(1000));
    p.loss = LossModel::Bernoulli { p: 0.001 };
    let mut l = LinkDirection::new(p);
    let mut rng = SimRng::new(1, 1);
    let n = 20_000_000u64;
    let t0 = std::time::Instant::now();
    let mut got = 0u64;
    for i in 0..n {
        let now = Instant(i * 1_000);
        l.offer(now, i, 1500, &mut rng);
        while let Some(d) = l.poll(now) {
            got += d.packet & 1;
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    println!("link: {:.1} ns/packet ({got})", dt * 1e9 / n as f64);
}
