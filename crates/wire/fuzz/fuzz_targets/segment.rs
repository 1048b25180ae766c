//! Fuzz the segment parser: any bytes, any framing. Must never panic; what
//! parses must re-encode and parse back to the same typed header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mplab_wire::packet::{Datalink, TcpHeader, TcpPacket};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let dl = match sel % 4 {
        0 => Datalink::RawIp,
        1 => Datalink::Ethernet,
        2 => Datalink::LinuxSll,
        _ => Datalink::LinuxSll2,
    };
    if let Ok(p) = TcpPacket::parse_frame(dl, rest) {
        let mut buf = [0u8; 60];
        let n = p.tcp.encode(&mut buf).expect("a parsed header re-encodes");
        let (back, _) = TcpHeader::decode(&buf[..n]).expect("re-encoded header parses");
        assert_eq!(back, p.tcp);
    }
    let _ = TcpHeader::decode_lenient(rest);
});
