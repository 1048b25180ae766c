//! Fuzz the SCTP packet parser: any bytes. It must never panic; what parses
//! (checksum unchecked, so the fuzzer reaches the chunks) must re-encode
//! and parse back, checksum checked, to the same packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mplab_wire::sctp::Packet;

fuzz_target!(|data: &[u8]| {
    let _ = Packet::decode(data);
    if let Ok(p) = Packet::decode_unchecked(data) {
        let b = p.encode().expect("a parsed packet re-encodes");
        let back = Packet::decode(&b).expect("a re-encoded packet parses");
        assert_eq!(back, p);
    }
});
