//! Fuzz the hybrid-access tunnel's frame decoder: any bytes, pushed in
//! pieces whose sizes the first byte chooses. It must never panic, hold at
//! most one frame, account for every byte, and hand out only well-formed
//! IPv4 datagrams that fit the MTU and re-encode to the bytes they came in.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mplab_wire::tunnel::{encode_frame, FrameDecoder};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, stream)) = data.split_first() else { return };
    let mtu = 20 + usize::from(sel) * 6;
    let piece = usize::from(sel % 13) + 1;
    let mut dec = FrameDecoder::new(mtu);
    let mut out = Vec::new();
    for c in stream.chunks(piece) {
        dec.push(c);
        while let Some(f) = dec.next_frame() {
            if let Ok(d) = f {
                assert!(d.len() <= mtu);
                out.clear();
                encode_frame(&d, mtu, &mut out).expect("a delivered datagram re-encodes");
                assert_eq!(&out[2..], &d[..]);
            }
        }
        assert!(dec.buffered() <= mtu + piece + 2);
    }
    assert_eq!(dec.stats().bytes as usize + dec.buffered(), stream.len());
});
