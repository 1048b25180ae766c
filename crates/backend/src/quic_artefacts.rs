//! What a Multipath QUIC connection leaves in the results directory for
//! the QUIC world's tools, on every backend:
//!
//! * with `probes.qlog`, a qlog trace per connection end,
//!   `qlog/FLOW-client.qlog` and `qlog/FLOW-server.qlog` (noq's JSON-SEQ
//!   qlog, event times from the run's zero; qvis reads it);
//! * with any `probes.pcap`, the TLS secrets beside the captures,
//!   `pcap/keys.log` in the SSLKEYLOGFILE format (NSS key log), so that
//!   Wireshark and tshark decrypt the captured QUIC packets.
//!
//! Both go to the run's `probes.out_dir`, which the runner sets; a network
//! run without one (a test, a benchmark) writes nothing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use mplab_scenario::network::{Flow, Network};
use noq_proto::{ConnectionId, QlogConfig, QlogFactory, Side};

use crate::quic_common;

/// The key log file beside the pcaps.
pub const KEYLOG_FILE: &str = "keys.log";

/// The key log of `net`'s QUIC connections, if the run captures packets.
/// Only clients log: both ends hold the same secrets.
pub fn keylog(net: &Network, client: bool) -> Option<Arc<dyn rustls::KeyLog>> {
    let dir = net.probes.out_dir.as_ref().filter(|_| client && !net.probes.pcap.is_empty())?;
    Some(Arc::new(KeyLogLines { path: dir.join("pcap").join(KEYLOG_FILE) }))
}

/// The qlog trace of flow `f`'s end, if the run asks for qlog.
pub fn qlog(net: &Network, f: &Flow, client: bool) -> Option<Arc<dyn QlogFactory>> {
    let dir = net.probes.out_dir.as_ref().filter(|_| net.probes.qlog)?;
    let side = if client { "client" } else { "server" };
    let path = dir.join("qlog").join(format!("{}-{side}.qlog", file_safe(&f.name)));
    Some(Arc::new(QlogFile { path, title: format!("mplab flow {} ({side})", f.name) }))
}

/// A flow name as a file name: path separators and the like become `_`.
fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

/// Appends `LABEL CLIENT_RANDOM SECRET` lines (hex) to a file: the
/// format Wireshark's `tls.keylog_file` reads. Opened per line: a
/// connection logs five secrets, and several connections (threads, on the
/// real-packet backends) may share the file.
#[derive(Debug)]
struct KeyLogLines {
    path: PathBuf,
}

impl rustls::KeyLog for KeyLogLines {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
        let written = self.path.parent().map(std::fs::create_dir_all).transpose().and_then(|_| OpenOptions::new().create(true).append(true).open(&self.path)).and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!("warning: key log {}: {e}", self.path.display());
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One connection end's qlog file, created when noq opens its trace.
struct QlogFile {
    path: PathBuf,
    title: String,
}

impl QlogFactory for QlogFile {
    fn for_connection(&self, _side: Side, _remote: SocketAddr, _cid: ConnectionId, _now: std::time::Instant) -> Option<QlogConfig> {
        let created = self.path.parent().map(std::fs::create_dir_all).transpose().and_then(|_| File::create(&self.path));
        let file = match created {
            Ok(f) => f,
            Err(e) => {
                eprintln!("warning: qlog {}: {e}", self.path.display());
                return None;
            }
        };
        // Unbuffered: the trace is whole on disk whenever the run stops,
        // however the connection ends.
        let mut c = QlogConfig::new(Box::new(file));
        c.title(Some(self.title.clone())).start_time(quic_common::at(0));
        Some(c)
    }
}
