//! Writing typed packets as a pcap file (LINKTYPE_RAW: bare IPv4/IPv6), so
//! that tshark and Wireshark open what the simulator and tests produce.

use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};

use crate::packet::{build_ip_tcp, TcpHeader};

pub struct PcapSink<W: Write> {
    w: PcapWriter<W>,
    buf: Vec<u8>,
    ip_id: u16,
    /// Bytes kept of each packet (its headers and the start of its
    /// payload); the record keeps the packet's real length.
    snaplen: usize,
}


#[derive(Debug, thiserror::Error)]
pub enum PcapSinkError {
    #[error("pcap: {0}")]
    Pcap(#[from] pcap_file::PcapError),
    #[error("packet: {0}")]
    Wire(#[from] crate::WireError),
}

impl<W: Write> PcapSink<W> {
    pub fn new(out: W) -> Result<Self, PcapSinkError> {
        Self::with_snaplen(out, 0)
    }

    /// A sink that keeps the first `snaplen` bytes of each packet (0: all).
    pub fn with_snaplen(out: W, snaplen: u32) -> Result<Self, PcapSinkError> {
        // 0: whole packets, under the header's default limit (65535).
        let snaplen = if snaplen == 0 { PcapHeader::default().snaplen } else { snaplen };
        let header = PcapHeader { datalink: DataLink::RAW, ts_resolution: TsResolution::NanoSecond, snaplen, ..Default::default() };
        Ok(PcapSink { w: PcapWriter::with_header(out, header)?, buf: Vec::with_capacity(2048), ip_id: 0, snaplen: snaplen as usize })
    }

    fn write_buf(&mut self, time: Duration) -> Result<(), PcapSinkError> {
        let len = self.buf.len() as u32;
        let kept = &self.buf[..self.buf.len().min(self.snaplen)];
        self.w.write_packet(&PcapPacket::new(time, len, kept))?;
        Ok(())
    }

    /// Writes one IP/TCP packet at `time` since the capture start. The payload
    /// is written as given (the simulator passes pattern bytes or an empty
    /// slice for header-only captures with `orig_len` set to the real size).
    pub fn write(&mut self, time: Duration, src: IpAddr, dst: IpAddr, tcp: &TcpHeader, payload: &[u8]) -> Result<(), PcapSinkError> {
        self.ip_id = self.ip_id.wrapping_add(1);
        build_ip_tcp(src, dst, 64, self.ip_id, tcp, payload, &mut self.buf)?;
        self.write_buf(time)
    }

    /// Writes one IPv4 packet of another protocol (SCTP: 132) whose
    /// transport bytes are already encoded, checksum included.
    pub fn write_ipv4(&mut self, time: Duration, src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, protocol: u8, transport: &[u8]) -> Result<(), PcapSinkError> {
        self.ip_id = self.ip_id.wrapping_add(1);
        crate::packet::build_ipv4(src, dst, 64, self.ip_id, protocol, transport, &mut self.buf)?;
        self.write_buf(time)
    }

    pub fn into_inner(self) -> W {
        self.w.into_writer()
    }
}
