//! What the stateful fuzz harnesses (pair.rs for MPTCP, tcp_pair.rs for
//! the TCP engine) share: the script of operations they read from the
//! fuzzer's bytes, the stream pattern their senders write and their
//! receivers check, the window test for forged segments, and the trace of
//! the last operations their error messages show.
//!
//! The two harnesses keep their own operation tables: the scripts in
//! fuzz/regressions are read op by op, so each table's numbering and the
//! bytes each operation consumes must stay as they are.

#![allow(dead_code)]

/// The stream's byte at `off`: not periodic (a segment placed at the wrong
/// offset shows), cheap.
pub fn pattern(off: u64) -> u8 {
    let mut z = (off / 8).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> ((off % 8) * 8)) as u8
}

/// Reads the script; past its end every read is 0.
pub struct Script<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Script<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Script { b, i: 0 }
    }
    pub fn u8(&mut self) -> u8 {
        let v = self.b.get(self.i).copied().unwrap_or(0);
        self.i += 1;
        v
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let s = self.i.min(self.b.len());
        let e = (self.i + n).min(self.b.len());
        self.i += n;
        &self.b[s..e]
    }
    pub fn done(&self) -> bool {
        self.i >= self.b.len()
    }
}


/// Segments in flight at most.
pub const MAX_WIRE: usize = 256;
/// A millisecond in nanoseconds.
pub const MS: u64 = 1_000_000;

/// Whether sequence number `seq` is more than 2^30 from the receiver's
/// RCV.NXT `rcv_nxt`, either way: far outside any window.
pub fn far_outside(seq: u32, rcv_nxt: u32) -> bool {
    let d = seq.wrapping_sub(rcv_nxt);
    (1 << 30..=(u32::MAX - (1 << 30))).contains(&d)
}

/// The last 40 operations, for error messages.
#[derive(Default)]
pub struct Trace(std::collections::VecDeque<String>);

impl Trace {
    pub fn note(&mut self, s: String) {
        if self.0.len() >= 40 {
            self.0.pop_front();
        }
        self.0.push_back(s);
    }

    /// One operation per line.
    pub fn lines(&self) -> String {
        self.0.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}
