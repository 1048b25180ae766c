//! The roles of a host's flow ends, and what a host's loop counts.

/// Which end of a flow: the client opens the connection, the server
/// accepts it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Client,
    Server,
}

/// What a host's loop counts (for meta.json and the docs).
#[derive(Default, Debug, Clone)]
pub struct HostCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub bad_checksum: u64,
    pub not_tcp: u64,
    pub rsts_sent: u64,
    pub tx_dropped: u64,
    pub unplaced_segments: u64,
    pub wakeups: u64,
    /// The longest pass of the packet loop (input, timers, output, probes;
    /// not the wait for packets), and the passes longer than 10 ms: a
    /// stalled loop shows here.
    pub max_pass_ns: u64,
    pub passes_over_10ms: u64,
    /// The most CPU time one pass took: a pass much longer in wall time
    /// than in CPU time waited for a core (a loaded machine), not for work.
    pub max_pass_cpu_ns: u64,
    /// Connections accepted as a server (a balancer's backend counts its own).
    pub connections: u64,
    /// MP_JOIN SYNs answered, and refused (unknown token, or the
    /// connection said no: a join to a VIP behind the C flag).
    pub joins_accepted: u64,
    pub joins_refused: u64,
    /// Per flow end: SHA-256 of the bytes the application read, and how many.
    pub digests: Vec<(String, String, u64, String)>,
    /// Bytes a bridged connection asked for that its bridge no longer
    /// kept (sent as zeros: must stay 0).
    pub bridge_bytes_gone: u64,
    /// Converter carriers made at run time (dialled or accepted).
    pub carriers: u64,
}
