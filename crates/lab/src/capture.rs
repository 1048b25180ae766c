//! Reading captures: classic pcap (any byte order, µs or ns) and pcapng, via
//! the pcap-file crate. Records are returned raw so that frames whose
//! original length exceeds the snap length (GSO aggregates) are kept.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use mplab_wire::Datalink;
use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::PcapError;

/// One captured frame.
pub struct Frame {
    /// Seconds since the epoch of the capture.
    pub time: f64,
    /// `None` when the interface's link type is not one we decode.
    pub link: Option<Datalink>,
    pub data: Vec<u8>,
}

/// What a whole capture file yields: frames, plus the reason reading stopped
/// early if the file was cut or damaged (what was read stays usable).
pub struct Capture {
    pub frames: Vec<Frame>,
    pub truncated: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: not a pcap or pcapng capture (it starts with {})", first_bytes(.magic))]
    NotACapture { path: String, magic: Vec<u8> },
    #[error("{path}: bad capture header: {source}")]
    Header { path: String, source: PcapError },
}

/// A file's first bytes as a reader recognises them: hex, and the text they
/// spell when they are printable (`3c 21 44 4f "<!DO"`).
fn first_bytes(b: &[u8]) -> String {
    if b.is_empty() {
        return "nothing: the file is empty".into();
    }
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let text: String = b.iter().map(|&c| c as char).collect();
    if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        format!("{} \"{text}\"", hex.join(" "))
    } else {
        hex.join(" ")
    }
}

pub fn read(path: &Path) -> Result<Capture, CaptureError> {
    let name = path.display().to_string();
    let io = |source| CaptureError::Io { path: name.clone(), source };
    let mut f = BufReader::new(File::open(path).map_err(io)?);
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match f.read(&mut magic[got..]).map_err(io)? {
            0 => break,
            n => got += n,
        }
    }
    let rest = std::io::Cursor::new(magic[..got].to_vec()).chain(f);
    match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0xa1, 0xb2, 0xc3, 0xd4] | [0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d] => {
            read_pcap(rest, &name)
        }
        [0x0a, 0x0d, 0x0d, 0x0a] => read_pcapng(rest, &name),
        _ => Err(CaptureError::NotACapture { path: name, magic: magic[..got].to_vec() }),
    }
}

fn read_pcap<R: Read>(r: R, name: &str) -> Result<Capture, CaptureError> {
    let mut rd = PcapReader::new(r).map_err(|source| CaptureError::Header { path: name.into(), source })?;
    let h = rd.header();
    let linktype = u32::from(h.datalink);
    let link = Datalink::from_linktype(linktype);
    let frac = match h.ts_resolution {
        pcap_file::TsResolution::MicroSecond => 1e-6,
        pcap_file::TsResolution::NanoSecond => 1e-9,
    };
    let mut frames = Vec::new();
    let mut truncated = None;
    while let Some(rec) = rd.next_raw_packet() {
        match rec {
            Ok(p) => frames.push(Frame {
                time: p.ts_sec as f64 + p.ts_frac as f64 * frac,
                link,
                data: p.data.into_owned(),
            }),
            Err(e) => {
                truncated = Some(format!("record {} unreadable ({e}); capture cut or damaged", frames.len() + 1));
                break;
            }
        }
    }
    Ok(Capture { frames, truncated })
}

fn read_pcapng<R: Read>(r: R, name: &str) -> Result<Capture, CaptureError> {
    let mut rd = PcapNgReader::new(r).map_err(|source| CaptureError::Header { path: name.into(), source })?;
    let mut linktypes: Vec<u32> = Vec::new();
    let mut frames = Vec::new();
    let mut truncated = None;
    while let Some(b) = rd.next_block() {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                truncated = Some(format!("block after record {} unreadable ({e}); capture cut or damaged", frames.len()));
                break;
            }
        };
        let (iface, time, data) = match b {
            Block::SectionHeader(_) => {
                linktypes.clear();
                continue;
            }
            Block::InterfaceDescription(idb) => {
                linktypes.push(u32::from(idb.linktype));
                continue;
            }
            Block::EnhancedPacket(p) => (p.interface_id as usize, p.timestamp.as_secs_f64(), p.data.into_owned()),
            Block::SimplePacket(p) => (0, 0.0, p.data.into_owned()),
            // Obsolete Packet Block: timestamp in microseconds (default resolution).
            Block::Packet(p) => (p.interface_id as usize, p.timestamp as f64 * 1e-6, p.data.into_owned()),
            _ => continue,
        };
        let linktype = linktypes.get(iface).copied().unwrap_or(u32::MAX);
        frames.push(Frame { time, link: Datalink::from_linktype(linktype), data });
    }
    Ok(Capture { frames, truncated })
}
