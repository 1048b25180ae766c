//! The hybrid-access tunnel's framing under arbitrary datagrams and
//! arbitrary cuts of the stream: what goes in comes out, in order, and
//! nothing the stream holds makes the decoder panic or lose step.

use mplab_wire::tunnel::{encode_frame, encode_keepalive, FrameDecoder, TunnelError};
use proptest::prelude::*;

fn ipv4(len: usize, fill: u8) -> Vec<u8> {
    let mut d = vec![fill; len];
    d[0] = 0x45;
    d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    d
}

/// Decodes `stream` pushed in pieces of the given sizes (cycled).
fn decode(stream: &[u8], mtu: usize, cuts: &[usize]) -> (Vec<Result<Vec<u8>, TunnelError>>, FrameDecoder) {
    let mut dec = FrameDecoder::new(mtu);
    let mut got = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < stream.len() {
        let n = cuts[k % cuts.len()].clamp(1, stream.len() - at);
        dec.push(&stream[at..at + n]);
        at += n;
        k += 1;
        while let Some(f) = dec.next_frame() {
            got.push(f);
        }
    }
    (got, dec)
}

proptest! {
    #[test]
    fn datagrams_come_out_as_they_went_in(
        sizes in prop::collection::vec((20usize..=1500, any::<u8>(), any::<bool>()), 0..40),
        cuts in prop::collection::vec(1usize..3000, 1..8),
    ) {
        let mut stream = Vec::new();
        let mut sent = Vec::new();
        for (len, fill, keepalive) in sizes {
            let d = ipv4(len, fill);
            encode_frame(&d, 1500, &mut stream).unwrap();
            sent.push(d);
            if keepalive {
                encode_keepalive(&mut stream);
            }
        }
        let (got, dec) = decode(&stream, 1500, &cuts);
        let got: Vec<Vec<u8>> = got.into_iter().map(|f| f.unwrap()).collect();
        prop_assert_eq!(got, sent);
        prop_assert_eq!(dec.stats().bytes as usize, stream.len());
        prop_assert_eq!(dec.buffered(), 0);
    }

    #[test]
    fn any_stream_decodes_without_panic_and_in_step(
        stream in prop::collection::vec(any::<u8>(), 0..5000),
        mtu in 0usize..2000,
        cuts in prop::collection::vec(1usize..600, 1..8),
    ) {
        let (got, dec) = decode(&stream, mtu, &cuts);
        for f in &got {
            if let Ok(d) = f {
                prop_assert!(d.len() <= mtu);
            }
        }
        let st = dec.stats();
        prop_assert_eq!(st.datagrams + st.oversize + st.malformed, got.len() as u64);
        prop_assert_eq!(st.bytes as usize + dec.buffered(), stream.len());
        prop_assert!(dec.buffered() <= mtu + 2 + 600);
    }

    /// A bad frame in the middle costs that frame only.
    #[test]
    fn a_bad_frame_costs_only_itself(
        before in 20usize..600, bad_len in 1usize..1000, after in 20usize..600, garbage in any::<u8>(),
    ) {
        let mut stream = Vec::new();
        encode_frame(&ipv4(before, 1), 600, &mut stream).unwrap();
        stream.extend_from_slice(&(bad_len as u16).to_be_bytes());
        stream.extend(std::iter::repeat(garbage).take(bad_len));
        encode_frame(&ipv4(after, 2), 600, &mut stream).unwrap();
        let (got, _) = decode(&stream, 600, &[97]);
        prop_assert_eq!(got.len(), 3);
        prop_assert_eq!(got[0].as_ref().unwrap(), &ipv4(before, 1));
        prop_assert_eq!(got[2].as_ref().unwrap(), &ipv4(after, 2));
    }
}
