//! The report `mplab trace` produces: MPTCP connections, their subflows,
//! signalling events and every cryptographic check, serialisable as JSON.

use serde::Serialize;

#[derive(Debug, Default, Serialize)]
pub struct TraceReport {
    pub file: String,
    pub frames: usize,
    pub tcp_segments: usize,
    /// Frames that are not IP/TCP (ARP, UDP, ...) or use an unknown link type.
    pub other_frames: usize,
    /// Consecutive identical copies of a segment (captured on two interfaces).
    pub duplicates: usize,
    pub malformed: Vec<Malformed>,
    /// Set when the file ends mid-record: what was read is still analysed.
    pub truncated: Option<String>,
    pub connections: Vec<Connection>,
    pub tcp_flows: Vec<TcpFlow>,
    pub checks_ok: usize,
    pub checks_mismatch: usize,
}

#[derive(Debug, Serialize)]
pub struct Malformed {
    pub frame: usize,
    pub error: String,
}

#[derive(Debug, Default, Serialize, Clone)]
pub struct KeyInfo {
    pub key: Option<String>,
    pub token: Option<String>,
    pub idsn: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct Connection {
    pub id: usize,
    pub version: u8,
    /// Address:port of the host that sent the MP_CAPABLE SYN.
    pub client: String,
    pub server: String,
    pub checksums: bool,
    pub client_keys: KeyInfo,
    pub server_keys: KeyInfo,
    pub subflows: Vec<Subflow>,
    pub events: Vec<Event>,
    pub dss_mappings: usize,
    pub data_fin: Vec<String>,
    /// Why the connection fell back to plain TCP, if it did.
    pub fallback: Option<String>,
    pub checks: Vec<Check>,
    /// Per sender ([client, server]): each DSS-mapped data segment as
    /// (time s, data sequence offset from the IDSN, subflow index), for the
    /// connection's time-sequence graph. Left out of the JSON report.
    #[serde(skip)]
    pub dsn: [Vec<(f64, u64, usize)>; 2],
}

#[derive(Debug, Default, Serialize, Clone)]
pub struct Direction {
    pub segments: u64,
    pub bytes: u64,
    pub retransmitted_bytes: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct Subflow {
    pub index: usize,
    /// "MP_CAPABLE" or "MP_JOIN".
    pub kind: &'static str,
    /// The subflow's 5-tuple, from its SYN's sender.
    pub src: String,
    pub dst: String,
    /// Which end of the MPTCP connection opened it: "client" or "server".
    pub initiator: &'static str,
    pub local_addr_id: Option<u8>,
    pub remote_addr_id: Option<u8>,
    pub backup: bool,
    pub established: bool,
    pub first_time: f64,
    pub last_time: f64,
    /// From the subflow initiator to the responder.
    pub forward: Direction,
    pub reverse: Direction,
    pub dss_mappings: usize,
    pub closed_by: Option<String>,
    /// Each way ([forward, reverse]): every data segment as (time s,
    /// sequence offset from the ISN, sent before), for the time-sequence
    /// graph. Left out of the JSON report.
    #[serde(skip)]
    pub seq: [Vec<(f64, u64, bool)>; 2],
    /// Each way: RTT samples (time s, ms) of the data's sender, from ACKs
    /// of segments sent once (Karn: an ACK of a retransmitted segment says
    /// nothing of which copy arrived). Left out of the JSON report.
    #[serde(skip)]
    pub rtt: [Vec<(f64, f64)>; 2],
}

#[derive(Debug, Serialize)]
pub struct Event {
    pub time: f64,
    pub frame: usize,
    pub subflow: usize,
    pub kind: &'static str,
    /// "client" or "server": the connection end that sent it.
    pub from: &'static str,
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub frame: usize,
    pub what: String,
    pub expected: String,
    pub got: String,
    pub ok: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct TcpFlow {
    pub src: String,
    pub dst: String,
    pub forward: Direction,
    pub reverse: Direction,
    /// Why this is plain TCP: no MP_CAPABLE in the SYN, or a join that failed.
    pub note: String,
}
