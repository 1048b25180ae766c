//! What the two QUIC ends share: `quic` (quinn-proto, RFC 9000) and
//! `mpquic` (noq-proto, multipath QUIC). The run's clock as the
//! `std::time::Instant`s both stacks keep time in, the seed of their random
//! draws, the stream pattern's reader, and TLS 1.3 with rustls and ring: a
//! self-signed Ed25519 certificate made at start, which the client does not
//! check against any authority but whose handshake signature it verifies.
//! Ed25519 signatures have one length, so the handshake's datagrams have the
//! same sizes in every run.
//!
//! An end that must send the same bytes in every run also takes its TLS
//! randomness from a seed: [`seeded_provider`] is ring's provider whose
//! random bytes (client and server random, session ticket ids) and X25519
//! key shares come from the ChaCha20 stream [`install_tls_rng`] puts on the
//! thread for the duration of each call into the QUIC stack; its certificate
//! key comes from a seed too ([`server_tls`]).

use core::ops::Range;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand_chacha::rand_core::RngCore;
use rand_chacha::ChaCha20Rng;

use crate::apps::pattern_mismatch;

/// The application protocol both ends name.
pub(crate) const ALPN: &[u8] = b"mplab";

/// The instant that is time zero of every run's clock here: the QUIC stacks
/// keep time in `std::time::Instant`, the run in nanoseconds.
fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

pub(crate) fn at(ns: u64) -> Instant {
    epoch() + Duration::from_nanos(ns)
}

pub(crate) fn ns(t: Instant) -> u64 {
    t.saturating_duration_since(epoch()).as_nanos() as u64
}

/// The 32-byte seed of a QUIC stack's random draws from a flow's seed.
pub(crate) fn rng_seed(seed: u64) -> [u8; 32] {
    let mut s = [0u8; 32];
    let mut x = seed ^ 0x0051_5549_4300_0000;
    for c in s.chunks_mut(8) {
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(0x6a09_e667_f3bc_c909);
        c.copy_from_slice(&x.to_be_bytes());
    }
    s
}

/// Hands the application the bytes it has read, checking them against the
/// stream pattern: the reader side of both ends' byte stream.
pub(crate) fn recv_pattern(buf: &mut VecDeque<u8>, read: &mut u64, mismatch: &mut Option<String>, max: u64) -> Range<u64> {
    let k = (max as usize).min(buf.len());
    let got: Vec<u8> = buf.drain(..k).collect();
    if let Some(m) = pattern_mismatch(*read, &got) {
        mismatch.get_or_insert(m);
    }
    let r = *read..*read + k as u64;
    *read = r.end;
    r
}

/// Accepts the server's certificate without a chain of trust (there is
/// none in a lab) but verifies the handshake's signature with it.
#[derive(Debug)]
struct LabVerifier(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for LabVerifier {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("QUIC is TLS 1.3 only".into()))
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// ring's provider, drawing from the operating system.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client's TLS: TLS 1.3 only, the lab's verifier, mplab's ALPN;
/// `keylog` receives the traffic secrets (SSLKEYLOGFILE lines).
pub(crate) fn client_tls(
    p: Arc<rustls::crypto::CryptoProvider>,
    keylog: Option<Arc<dyn rustls::KeyLog>>,
) -> Result<rustls::ClientConfig, String> {
    let mut tls = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LabVerifier(p)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    if let Some(k) = keylog {
        tls.key_log = k;
    }
    Ok(tls)
}

/// The server's TLS with a fresh self-signed Ed25519 certificate: its key
/// from `key_seed`, or from the operating system without one.
pub(crate) fn server_tls(
    p: Arc<rustls::crypto::CryptoProvider>,
    key_seed: Option<[u8; 32]>,
    keylog: Option<Arc<dyn rustls::KeyLog>>,
) -> Result<rustls::ServerConfig, String> {
    let kp = cert_key(key_seed)?;
    let mut params = rcgen::CertificateParams::new(vec!["mplab".to_string()]).map_err(|e| e.to_string())?;
    // A fixed serial: a random one changes the certificate's length.
    params.serial_number = Some(rcgen::SerialNumber::from(vec![1u8]));
    let cert = params.self_signed(&kp).map_err(|e| e.to_string())?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(kp.serialize_der()));
    let mut tls = rustls::ServerConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .map_err(|e| e.to_string())?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = 0;
    if let Some(k) = keylog {
        tls.key_log = k;
    }
    Ok(tls)
}

/// The certificate's Ed25519 key: from `seed`, or from the operating system.
fn cert_key(seed: Option<[u8; 32]>) -> Result<rcgen::KeyPair, String> {
    let Some(s) = seed else {
        return rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(|e| e.to_string());
    };
    // PKCS#8 v1 of an Ed25519 private key (RFC 8410): a fixed prefix, then
    // the 32-byte seed.
    const PREFIX: [u8; 16] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
    let mut der = PREFIX.to_vec();
    der.extend_from_slice(&s);
    rcgen::KeyPair::try_from(der.as_slice()).map_err(|e| e.to_string())
}

thread_local! {
    /// The random stream of the end whose call into its QUIC stack is
    /// running on this thread, if that end is seeded.
    static TLS_RNG: RefCell<Option<ChaCha20Rng>> = const { RefCell::new(None) };
}

/// Makes `rng` the source of [`seeded_provider`]'s randomness on this
/// thread; returns the one it replaces. An end puts its own stream in
/// before each call into its stack and takes it back after, so what one
/// end draws never depends on another end's calls.
pub(crate) fn install_tls_rng(rng: Option<ChaCha20Rng>) -> Option<ChaCha20Rng> {
    TLS_RNG.with(|r| r.replace(rng))
}

/// Random bytes from the installed stream, else from the operating system.
fn tls_random(buf: &mut [u8]) -> Result<(), rustls::crypto::GetRandomFailed> {
    let seeded = TLS_RNG.with(|r| match r.borrow_mut().as_mut() {
        Some(rng) => {
            rng.fill_bytes(buf);
            true
        }
        None => false,
    });
    if seeded {
        return Ok(());
    }
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), buf).map_err(|_| rustls::crypto::GetRandomFailed)
}

#[derive(Debug)]
struct SeededRandom;

impl rustls::crypto::SecureRandom for SeededRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), rustls::crypto::GetRandomFailed> {
        tls_random(buf)
    }
}

/// X25519 whose private keys come from [`tls_random`]: ring's own draws
/// from the operating system and takes no seed.
#[derive(Debug)]
struct SeededX25519;

struct X25519Share {
    secret: [u8; 32],
    public: [u8; 32],
}

impl rustls::crypto::SupportedKxGroup for SeededX25519 {
    fn start(&self) -> Result<Box<dyn rustls::crypto::ActiveKeyExchange>, rustls::Error> {
        let mut secret = [0u8; 32];
        tls_random(&mut secret)?;
        let public = x25519_dalek::x25519(secret, x25519_dalek::X25519_BASEPOINT_BYTES);
        Ok(Box::new(X25519Share { secret, public }))
    }
    fn name(&self) -> rustls::NamedGroup {
        rustls::NamedGroup::X25519
    }
}

impl rustls::crypto::ActiveKeyExchange for X25519Share {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<rustls::crypto::SharedSecret, rustls::Error> {
        let peer: [u8; 32] = peer.try_into().map_err(|_| rustls::PeerMisbehaved::InvalidKeyShare)?;
        let shared = x25519_dalek::x25519(self.secret, peer);
        // An all-zero secret means a low-order point from the peer (RFC 7748 §6.1).
        if shared == [0u8; 32] {
            return Err(rustls::PeerMisbehaved::InvalidKeyShare.into());
        }
        Ok(rustls::crypto::SharedSecret::from(&shared[..]))
    }
    fn pub_key(&self) -> &[u8] {
        &self.public
    }
    fn group(&self) -> rustls::NamedGroup {
        rustls::NamedGroup::X25519
    }
}

static SEEDED_RANDOM: SeededRandom = SeededRandom;
static SEEDED_X25519: SeededX25519 = SeededX25519;

/// ring's provider with X25519 as the only key exchange and every random
/// byte from the installed stream ([`install_tls_rng`]).
pub(crate) fn seeded_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::CryptoProvider {
        kx_groups: vec![&SEEDED_X25519],
        secure_random: &SEEDED_RANDOM,
        ..rustls::crypto::ring::default_provider()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn x25519_agrees_and_follows_the_installed_stream() {
        let prev = install_tls_rng(Some(ChaCha20Rng::from_seed([7; 32])));
        let g = &SEEDED_X25519 as &dyn rustls::crypto::SupportedKxGroup;
        let (a, b) = (g.start().unwrap(), g.start().unwrap());
        install_tls_rng(Some(ChaCha20Rng::from_seed([7; 32])));
        let a2 = g.start().unwrap();
        install_tls_rng(prev);
        assert_eq!(a.pub_key(), a2.pub_key(), "the same stream, the same key share");
        assert_ne!(a.pub_key(), b.pub_key());
        let (pa, pb) = (a.pub_key().to_vec(), b.pub_key().to_vec());
        let s1 = a.complete(&pb).unwrap();
        let s2 = b.complete(&pa).unwrap();
        assert_eq!(s1.secret_bytes(), s2.secret_bytes());
        assert!(a2.complete(&[0u8; 32]).is_err(), "a low-order point is refused");
    }

    #[test]
    fn a_seeded_certificate_key_is_the_same_every_time() {
        let key = |s| cert_key(Some(s)).unwrap().public_key_raw().to_vec();
        assert_eq!(key([1; 32]), key([1; 32]));
        assert_ne!(key([1; 32]), key([2; 32]));
        assert_ne!(cert_key(None).unwrap().public_key_raw(), cert_key(None).unwrap().public_key_raw());
        assert!(server_tls(seeded_provider(), Some([1; 32]), None).is_ok());
    }
}
