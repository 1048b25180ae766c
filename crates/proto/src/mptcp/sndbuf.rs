//! Send-buffer autotuning of the Linux profile.
//!
//! A Linux MPTCP socket whose application did not set SO_SNDBUF may hold
//! `tcp_wmem[0]` plus the sum of its subflows' send buffers
//! (`__mptcp_sync_sndbuf`, net/mptcp/protocol.h). Each subflow's buffer
//! starts at its initial window's worth and grows to twice its window of
//! worst-case socket buffers (`tcp_sndbuf_expand`, net/ipv4/tcp_input.c):
//! 2 x max(10, cwnd) x 2304 bytes, at most `tcp_wmem[2]`, but only on an
//! ACK that finds the writer waiting for room and the window not full
//! (`Connection::grow_sndbuf_on_input`). The buffer holds
//! data until it is DATA_ACKed, so over paths of very different RTTs it is
//! what stalls the fast subflows while the slow one delays the data-level
//! acknowledgement: measured on a 1 + 50 Mbit/s pair, the kernel reaches
//! 7.8 Mbit/s (docs/validation.md). mplab's own profile has one fixed
//! buffer (`snd_buf`, 4 MiB by default).

/// `tcp_wmem[0]`: the connection's own share.
pub const WMEM_MIN: u64 = 4096;
/// `tcp_wmem[1]`: a subflow's buffer before the handshake completes.
pub const WMEM_DEFAULT: u64 = 16 * 1024;
/// What one full-sized segment may cost in socket memory when every frame
/// has its own skb: a 1460-byte MSS plus MAX_TCP_HEADER (192 on x86-64)
/// and the shared info (320) rounded up to a power of two (2048), plus the
/// sk_buff itself (256). `ss -tmi` on this kernel's subflows shows send
/// buffers (`tb`) of 138240, 156672, 161280 and 179712 bytes: 30, 34, 35
/// and 39 times 4608, twice this.
pub const TRUESIZE_PER_MSS: u64 = 2304;
/// TCP_INIT_CWND.
const INIT_CWND: u64 = 10;

/// A subflow's send buffer once its window is `cwnd_segs` segments: it
/// only grows, up to `max` (`tcp_wmem[2]`).
pub fn subflow_sndbuf(current: u64, cwnd_segs: u64, max: u64) -> u64 {
    let want = (2 * cwnd_segs.max(INIT_CWND) * TRUESIZE_PER_MSS).min(max);
    current.max(want).max(WMEM_DEFAULT.min(max))
}

/// The connection's send buffer from its subflows' buffers.
pub fn connection_sndbuf(subflows: impl Iterator<Item = u64>) -> u64 {
    WMEM_MIN + subflows.sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_the_window_and_never_shrinks() {
        let max = 4 << 20;
        assert_eq!(subflow_sndbuf(WMEM_DEFAULT, 4, max), 2 * 10 * 2304, "at least the initial window's worth");
        let b = subflow_sndbuf(0, 30, max);
        assert_eq!(b, 138_240, "as `ss -tmi` shows for a subflow whose window reached 30");
        assert_eq!(subflow_sndbuf(b, 20, max), b);
        assert_eq!(subflow_sndbuf(b, 10_000, max), max);
    }

    #[test]
    fn the_connection_sums_its_subflows() {
        assert_eq!(connection_sndbuf([100, 200].into_iter()), 4096 + 300);
        assert_eq!(connection_sndbuf(core::iter::empty()), 4096);
    }
}
