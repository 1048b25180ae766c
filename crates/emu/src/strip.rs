//! A middlebox in the emulator: TCP option 30 (MPTCP) replaced by NOPs,
//! like iptables' TCPOPTSTRIP or a Cisco ASA, with the TCP checksum fixed.

const ETH_HLEN: usize = 14;
const TCP_OPT_MPTCP: u8 = 30;

/// Replaces every MPTCP option of an Ethernet/IPv4/TCP frame with NOPs
/// (on every segment, or only on SYNs when `syn_only`). Returns whether the
/// frame changed. Anything that is not a well-formed first fragment of an
/// IPv4 TCP segment is left alone.
pub fn strip_mptcp(frame: &mut [u8], syn_only: bool) -> bool {
    if frame.len() < ETH_HLEN + 20 || frame[12..14] != [0x08, 0x00] {
        return false;
    }
    let ip = &frame[ETH_HLEN..];
    if ip[0] >> 4 != 4 {
        return false;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
    if ip[9] != 6 || ihl < 20 || frag != 0 || total > ip.len() || total < ihl + 20 {
        return false;
    }
    let t = ETH_HLEN + ihl;
    let doff = usize::from(frame[t + 12] >> 4) * 4;
    if doff < 20 || t + doff > ETH_HLEN + total {
        return false;
    }
    if syn_only && frame[t + 13] & 0x02 == 0 {
        return false;
    }
    let mut changed = false;
    let (mut i, end) = (t + 20, t + doff);
    while i < end {
        match frame[i] {
            0 => break,
            1 => i += 1,
            kind => {
                if i + 1 >= end {
                    break;
                }
                let len = usize::from(frame[i + 1]);
                if len < 2 || i + len > end {
                    break;
                }
                if kind == TCP_OPT_MPTCP {
                    frame[i..i + len].fill(1);
                    changed = true;
                }
                i += len;
            }
        }
    }
    if changed {
        let seg_len = total - ihl;
        frame[t + 16] = 0;
        frame[t + 17] = 0;
        let mut sum: u32 = 0;
        let ip = &frame[ETH_HLEN..];
        for w in ip[12..20].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        sum += 6 + seg_len as u32;
        let seg = &frame[t..t + seg_len];
        let mut chunks = seg.chunks_exact(2);
        for w in &mut chunks {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = chunks.remainder() {
            sum += u32::from(*last) << 8;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let c = !(sum as u16);
        frame[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checksum_ok(frame: &[u8]) -> bool {
        let ip = &frame[ETH_HLEN..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let seg = &ip[ihl..total];
        let mut sum: u32 = 0;
        for w in ip[12..20].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        sum += 6 + seg.len() as u32;
        let mut c = seg.chunks_exact(2);
        for w in &mut c {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [l] = c.remainder() {
            sum += u32::from(*l) << 8;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    /// An Ethernet/IPv4/TCP SYN with MSS, MP_CAPABLE (12 bytes) and a
    /// 3-byte payload, valid checksum.
    fn syn(flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 8;
        let opts: Vec<u8> = vec![2, 4, 5, 0xb4, 30, 12, 0x01, 0x81, 1, 2, 3, 4, 5, 6, 7, 8];
        let tcp_len = 20 + opts.len();
        let total = 20 + tcp_len + 3;
        let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1];
        let mut tcp = vec![0xc0, 0x00, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0, ((tcp_len / 4) << 4) as u8, flags, 0xff, 0xff, 0, 0, 0, 0];
        tcp.extend_from_slice(&opts);
        tcp.extend_from_slice(b"abc");
        f.append(&mut ip);
        f.append(&mut tcp);
        f.extend_from_slice(&[0, 0]); // Ethernet padding must be ignored
        // Compute a valid checksum by "stripping" nothing: do it by hand.
        let t = 34;
        let seg_len = total - 20;
        let mut sum: u32 = 0;
        for w in f[26..34].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        sum += 6 + seg_len as u32;
        let mut c = f[t..t + seg_len].chunks_exact(2);
        for w in &mut c {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [l] = c.remainder() {
            sum += u32::from(*l) << 8;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let ck = !(sum as u16);
        f[t + 16..t + 18].copy_from_slice(&ck.to_be_bytes());
        assert!(checksum_ok(&f));
        f
    }

    #[test]
    fn strips_option_30_and_fixes_checksum() {
        let mut f = syn(0x02);
        assert!(strip_mptcp(&mut f, false));
        assert_eq!(&f[54..58], &[2, 4, 5, 0xb4], "MSS kept");
        assert!(f[58..70].iter().all(|&b| b == 1), "MP_CAPABLE became NOPs");
        assert!(checksum_ok(&f));
        assert_eq!(&f[70..73], b"abc");
        // Idempotent: nothing left to strip.
        assert!(!strip_mptcp(&mut f, false));
    }

    #[test]
    fn syn_only_leaves_other_segments() {
        let mut f = syn(0x10);
        let before = f.clone();
        assert!(!strip_mptcp(&mut f, true));
        assert_eq!(f, before);
        assert!(strip_mptcp(&mut f, false));
        let mut s = syn(0x12);
        assert!(strip_mptcp(&mut s, true), "SYN/ACK is a SYN");
    }

    #[test]
    fn ignores_non_tcp_and_garbage() {
        let mut arp = vec![0u8; 60];
        arp[12] = 8;
        arp[13] = 6;
        assert!(!strip_mptcp(&mut arp, false));
        let mut f = syn(0x02);
        f[23] = 17; // UDP
        assert!(!strip_mptcp(&mut f, false));
        let mut g = syn(0x02);
        g[59] = 40; // option length runs past the header
        assert!(!strip_mptcp(&mut g, false));
        for n in 0..g.len() {
            let mut cut = syn(0x02)[..n].to_vec();
            let _ = strip_mptcp(&mut cut, false);
        }
    }
}
