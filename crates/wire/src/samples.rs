//! A realistic mix of segments for benchmarks and allocation tests: data
//! segments with DSS + timestamps + SACK, pure ACKs, and handshakes.

use core::net::IpAddr;

use crate::mptcp::{AddAddr, DataAck, Dss, DssMapping, MpCapable, MpJoin, MptcpOption};
use crate::packet::TcpHeader;
use crate::tcp::{flags, SackBlock, TcpOptions, Timestamps};

/// Typed headers of the mix, in the proportions a bulk MPTCP transfer shows:
/// mostly data and ACKs, a few handshake and signalling segments.
pub fn segment_mix() -> Vec<TcpHeader> {
    let ts = Some(Timestamps { tsval: 0x1234_5678, tsecr: 0x0765_4321 });
    let mut out = Vec::new();
    let mut data = TcpOptions::new();
    data.timestamps = ts;
    data.push_mptcp(MptcpOption::Dss(Dss {
        data_ack: Some(DataAck { value: 0x5487_b359_4d64_d9ef, wide: true }),
        mapping: Some(DssMapping { dsn: 0x02e4_3ec5_9ef2_7e7c, dsn_wide: true, ssn: 1, data_len: 1428, checksum: None }),
        data_fin: false,
    }))
    .expect("fits");
    let mut ack = TcpOptions::new();
    ack.timestamps = ts;
    ack.set_sack(&[SackBlock { left: 1000, right: 5000 }, SackBlock { left: 7000, right: 9000 }]);
    ack.push_mptcp(MptcpOption::Dss(Dss { data_ack: Some(DataAck { value: 0x1234_5678, wide: false }), mapping: None, data_fin: false }))
        .expect("fits");
    let mut syn = TcpOptions::new();
    syn.mss = Some(1460);
    syn.sack_permitted = true;
    syn.timestamps = ts;
    syn.wscale = Some(7);
    syn.push_mptcp(MptcpOption::MpCapable(MpCapable { version: 1, flags: 0x81, sender_key: None, receiver_key: None, data_len: None, checksum: None }))
        .expect("fits");
    let mut join = syn;
    join.clear_mptcp();
    join.push_mptcp(MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 2, token: 0xe0e0_5a3b, nonce: 0xdba6_b50b })).expect("fits");
    let mut third = TcpOptions::new();
    third.timestamps = ts;
    third.push_mptcp(MptcpOption::MpCapable(MpCapable {
        version: 1,
        flags: 0x81,
        sender_key: Some(0xca7a_db59_cbca_c97d),
        receiver_key: Some(0x0603_6a76_6d04_e1f8),
        data_len: None,
        checksum: None,
    }))
    .expect("fits");
    let mut add = TcpOptions::new();
    add.timestamps = ts;
    add.push_mptcp(MptcpOption::AddAddr(AddAddr {
        echo: false,
        addr_id: 1,
        addr: IpAddr::V4([10, 0, 2, 1].into()),
        port: None,
        hmac: Some(0x92be_6b7a_049d_f4d8),
    }))
    .expect("fits");
    let hdr = |options, f| TcpHeader { src_port: 40000, dst_port: 5201, seq: 1, ack: 1, flags: f, window: 502, urgent: 0, options };
    for _ in 0..8 {
        out.push(hdr(data, flags::ACK | flags::PSH));
        out.push(hdr(ack, flags::ACK));
    }
    out.push(hdr(syn, flags::SYN));
    out.push(hdr(join, flags::SYN));
    out.push(hdr(third, flags::ACK));
    out.push(hdr(add, flags::ACK));
    out
}
