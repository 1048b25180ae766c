//! Fuzz the Convert Protocol (RFC 8803) message parser: any bytes, read as
//! the start of a TCP bytestream. It must never panic; what decodes must
//! re-encode to as many bytes as it took and decode back to the same
//! message; what does not must get a reply (if any) that encodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mplab_wire::convert::ConvertMessage;

fuzz_target!(|data: &[u8]| {
    match ConvertMessage::decode_prefix(data) {
        Ok((m, used)) => {
            let b = m.encode().expect("a decoded message re-encodes");
            assert_eq!(b.len(), used);
            assert_eq!(m.encoded_len(), used);
            let back = ConvertMessage::decode(&b).expect("a re-encoded message decodes");
            assert_eq!(back, m);
        }
        Err(e) => {
            if let Some(reply) = ConvertMessage::reply_to(&e, data) {
                let b = reply.encode().expect("a reply encodes");
                assert_eq!(ConvertMessage::decode(&b).expect("a reply decodes"), reply);
            }
        }
    }
});
