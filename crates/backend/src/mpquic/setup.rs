//! noq's configuration for one end: its seeds, connection IDs, congestion
//! controllers (counting bytes in flight) and transport parameters.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use noq_proto::congestion::{Bbr3Config, Controller, ControllerFactory, ControllerMetrics, CubicConfig, NewRenoConfig};
use noq_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use noq_proto::{
    ClientConfig, ConnectionId, ConnectionIdGenerator, EndpointConfig, InvalidCid, MtuDiscoveryConfig, RttEstimator, ServerConfig,
    TransportConfig, VarInt,
};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;

use super::{MpQuicCc, MpQuicConfig, PATH_IDLE_TIMEOUT, PATH_KEEP_ALIVE};
use crate::quic_common::{self, rng_seed};

/// The largest UDP payload noq may send (a 1500-byte path less IPv4 and UDP
/// headers): its path MTU discovery stops there.
const MAX_UDP_PAYLOAD: u16 = 1472;

/// The seeds of one end's random draws, all from the flow's seed.
pub(super) struct Seeds {
    endpoint: [u8; 32],
    cids: [u8; 32],
    cid_key: u64,
    first_dcid: [u8; 32],
    pub(super) tls: [u8; 32],
    cert: [u8; 32],
    reset_key: [u8; 64],
}

impl Seeds {
    pub(super) fn new(seed: u64) -> Seeds {
        let mut r = ChaCha20Rng::from_seed(rng_seed(seed));
        let mut s = Seeds {
            endpoint: [0; 32],
            cids: [0; 32],
            cid_key: 0,
            first_dcid: [0; 32],
            tls: [0; 32],
            cert: [0; 32],
            reset_key: [0; 64],
        };
        for b in [&mut s.endpoint, &mut s.cids, &mut s.first_dcid, &mut s.tls, &mut s.cert] {
            r.fill_bytes(b);
        }
        r.fill_bytes(&mut s.reset_key);
        s.cid_key = r.next_u64();
        s
    }
}

/// noq's hashed connection IDs, the random bytes from a seed: 3 random
/// bytes, then 5 of a keyed hash of them, so that a short-header packet for
/// an ID this end never issued is dropped, not answered with a stateless
/// reset.
struct SeededCids {
    rng: ChaCha20Rng,
    key: u64,
}

const CID_NONCE: usize = 3;
const CID_LEN: usize = 8;

impl SeededCids {
    fn signature(&self, nonce: &[u8]) -> [u8; 8] {
        use std::hash::Hasher;
        let mut h = rustc_hash::FxHasher::default();
        h.write_u64(self.key);
        h.write(nonce);
        h.finish().to_le_bytes()
    }
}

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0u8; CID_LEN];
        self.rng.fill_bytes(&mut b[..CID_NONCE]);
        let sig = self.signature(&b[..CID_NONCE]);
        b[CID_NONCE..].copy_from_slice(&sig[..CID_LEN - CID_NONCE]);
        ConnectionId::new(&b)
    }
    fn validate(&self, cid: ConnectionId) -> Result<(), InvalidCid> {
        if cid.len() != CID_LEN {
            return Err(InvalidCid);
        }
        let sig = self.signature(&cid[..CID_NONCE]);
        if cid[CID_NONCE..] == sig[..CID_LEN - CID_NONCE] {
            Ok(())
        } else {
            Err(InvalidCid)
        }
    }
    fn cid_len(&self) -> usize {
        CID_LEN
    }
    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// noq keeps a path's bytes in flight to itself, so every path's congestion
/// controller is wrapped to count them; `Connection::congestion_state`
/// gives the controller back, found here by its address.
#[derive(Debug, Clone, Default)]
pub(super) struct InFlight(Arc<Mutex<FxHashMap<usize, Arc<AtomicU64>>>>);

fn addr<T: ?Sized>(x: &T) -> usize {
    x as *const T as *const () as usize
}

impl InFlight {
    fn wrap(&self, inner: Box<dyn Controller>, bytes: u64) -> Box<dyn Controller> {
        let count = Arc::new(AtomicU64::new(bytes));
        let c = Box::new(Counted { inner, bytes: count.clone(), table: self.clone() });
        if let Ok(mut t) = self.0.lock() {
            t.insert(addr(&*c), count);
        }
        c
    }

    pub(super) fn of(&self, c: Option<&dyn Controller>) -> u64 {
        let Some(c) = c else { return 0 };
        let t = self.0.lock();
        t.ok().and_then(|t| t.get(&addr(c)).map(|b| b.load(Ordering::Relaxed))).unwrap_or(0)
    }
}

/// Builds noq's controller for a path, wrapped.
struct CountedFactory {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
    in_flight: InFlight,
}

impl ControllerFactory for CountedFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        self.in_flight.wrap(self.inner.clone().build(now, current_mtu), 0)
    }
}

#[derive(Debug)]
struct Counted {
    inner: Box<dyn Controller>,
    bytes: Arc<AtomicU64>,
    table: InFlight,
}

impl Counted {
    fn less(&self, n: u64) {
        let _ = self.bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some(b.saturating_sub(n)));
    }
}

impl Controller for Counted {
    fn on_sent(&mut self, now: Instant, bytes: u64, largest_pn: u64) {
        self.inner.on_sent(now, bytes, largest_pn)
    }
    fn on_packet_sent(&mut self, now: Instant, bytes: u16, pn: u64) {
        self.bytes.fetch_add(bytes.into(), Ordering::Relaxed);
        self.inner.on_packet_sent(now, bytes, pn)
    }
    fn on_cwnd_limited(&mut self) {
        self.inner.on_cwnd_limited()
    }
    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64, app_limited: bool, rtt: &RttEstimator) {
        self.less(bytes);
        self.inner.on_ack(now, sent, bytes, pn, app_limited, rtt)
    }
    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest_packet_num_acked: Option<u64>) {
        self.bytes.store(in_flight, Ordering::Relaxed);
        self.inner.on_end_acks(now, in_flight, app_limited, largest_packet_num_acked)
    }
    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, is_ecn: bool, lost_bytes: u64, largest_lost_pn: u64) {
        self.inner.on_congestion_event(now, sent, persistent, is_ecn, lost_bytes, largest_lost_pn)
    }
    fn on_packet_lost(&mut self, lost_bytes: u16, pn: u64, now: Instant) {
        self.less(lost_bytes.into());
        self.inner.on_packet_lost(lost_bytes, pn, now)
    }
    fn on_spurious_congestion_event(&mut self) {
        self.inner.on_spurious_congestion_event()
    }
    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu)
    }
    fn on_ack_frequency_update(&mut self, ack_eliciting_threshold: u64, requested_max_ack_delay: Duration) {
        self.inner.on_ack_frequency_update(ack_eliciting_threshold, requested_max_ack_delay)
    }
    fn window(&self) -> u64 {
        self.inner.window()
    }
    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }
    fn clone_box(&self) -> Box<dyn Controller> {
        self.table.wrap(self.inner.clone_box(), self.bytes.load(Ordering::Relaxed))
    }
    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self.inner.into_any()
    }
}

/// noq's defaults, but MTU discovery may fill a 1500-byte IPv4 path, the
/// chosen controller (wrapped), with multipath the path timers, and with
/// a qlog trace per connection where the configuration says (else into
/// $QLOGDIR if set), its times from the run's zero.
fn transport(cfg: &MpQuicConfig, in_flight: InFlight) -> Arc<TransportConfig> {
    let mut mtud = MtuDiscoveryConfig::default();
    mtud.upper_bound(MAX_UDP_PAYLOAD);
    let mut t = TransportConfig::default();
    t.mtu_discovery_config(Some(mtud));
    t.enable_segmentation_offload(false);
    if let Some(b) = cfg.rcv_buf.and_then(|b| VarInt::from_u64(b).ok()) {
        t.stream_receive_window(b);
        t.receive_window(b);
    }
    if let Some(b) = cfg.snd_buf {
        t.send_window(b);
    }
    if cfg.max_paths > 1 {
        t.max_concurrent_multipath_paths(super::path_id_budget(cfg.max_paths, 0));
        t.default_path_max_idle_timeout(Some(PATH_IDLE_TIMEOUT));
        t.default_path_keep_alive_interval(Some(PATH_KEEP_ALIVE));
    }
    let inner: Arc<dyn ControllerFactory + Send + Sync> = match cfg.cc {
        MpQuicCc::NewReno => Arc::new(NewRenoConfig::default()),
        MpQuicCc::Cubic => Arc::new(CubicConfig::default()),
        MpQuicCc::Bbr3 => Arc::new(Bbr3Config::default()),
    };
    t.congestion_controller_factory(Arc::new(CountedFactory { inner, in_flight }));
    t.qlog_factory(cfg.qlog.clone().unwrap_or_else(|| Arc::new(noq_proto::QlogFileFactory::from_env().with_prefix("mplab").with_start_instant(quic_common::at(0)))));
    Arc::new(t)
}

pub(super) fn endpoint_config(s: &Seeds) -> Arc<EndpointConfig> {
    let mut c = EndpointConfig::new(Arc::new(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &s.reset_key)));
    c.max_udp_payload_size(MAX_UDP_PAYLOAD).ok();
    c.rng_seed(Some(s.endpoint));
    let (cids, key) = (s.cids, s.cid_key);
    c.cid_generator(Arc::new(move || Box::new(SeededCids { rng: ChaCha20Rng::from_seed(cids), key })));
    Arc::new(c)
}

pub(super) fn client_config(cfg: &MpQuicConfig, s: &Seeds, in_flight: InFlight) -> Result<ClientConfig, String> {
    let tls = quic_common::client_tls(quic_common::seeded_provider(), cfg.keylog.clone())?;
    let q = QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let mut c = ClientConfig::new(Arc::new(q));
    c.transport_config(transport(cfg, in_flight));
    let rng = Mutex::new(ChaCha20Rng::from_seed(s.first_dcid));
    c.initial_dst_cid_provider(Arc::new(move || {
        let mut b = [0u8; 20];
        if let Ok(mut r) = rng.lock() {
            r.fill_bytes(&mut b);
        }
        ConnectionId::new(&b)
    }));
    Ok(c)
}

pub(super) fn server_config(cfg: &MpQuicConfig, s: &Seeds, in_flight: InFlight) -> Result<ServerConfig, String> {
    let tls = quic_common::server_tls(quic_common::seeded_provider(), Some(s.cert), cfg.keylog.clone())?;
    let q = QuicServerConfig::try_from(tls).map_err(|e| e.to_string())?;
    // The retry token key this draws from the OS is never used: no Retry,
    // and without noq's `bloom` feature no NEW_TOKEN either.
    let mut c = ServerConfig::with_crypto(Arc::new(q));
    c.transport_config(transport(cfg, in_flight));
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ids_validate_and_repeat_and_junk_does_not() {
        let mut g = SeededCids { rng: ChaCha20Rng::from_seed([3; 32]), key: 5 };
        let mut h = SeededCids { rng: ChaCha20Rng::from_seed([3; 32]), key: 5 };
        for _ in 0..100 {
            let id = g.generate_cid();
            assert!(g.validate(id).is_ok());
            assert_eq!(&id[..], &h.generate_cid()[..]);
            let mut bad = id;
            bad[7] ^= 1;
            assert!(g.validate(bad).is_err());
        }
        assert!(g.validate(ConnectionId::new(&[0; 4])).is_err());
    }

    #[test]
    fn in_flight_follows_sends_acks_and_losses() {
        let table = InFlight::default();
        let mut c = table.wrap(Arc::new(NewRenoConfig::default()).build(quic_common::at(0), 1200), 0);
        let now = quic_common::at(1);
        c.on_packet_sent(now, 1200, 1);
        c.on_packet_sent(now, 1200, 2);
        assert_eq!(table.of(Some(&*c)), 2400);
        c.on_packet_lost(1200, 1, now);
        assert_eq!(table.of(Some(&*c)), 1200);
        c.on_end_acks(now, 7, false, Some(2));
        assert_eq!(table.of(Some(&*c)), 7, "the stack's own count wins at each ACK");
        let d = c.clone_box();
        assert_eq!(table.of(Some(&*d)), 7);
        assert_eq!(c.window(), Arc::new(NewRenoConfig::default()).build(quic_common::at(0), 1200).window());
    }
}
