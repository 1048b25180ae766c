//! Packets in flight: the pool that holds them and the small [`Hop`]
//! handles that links, queues, routers and tunnels pass around instead.

use std::net::Ipv4Addr;

use crate::packet::{flow_hash, Packet};

/// Packets in flight live here; links and queues move [`Hop`] handles,
/// not 400-byte packets (htsim's packet pool, for the same reason).
#[derive(Default)]
pub(super) struct Pool {
    pub(super) pkts: Vec<Packet>,
    pub(super) free: Vec<u32>,
}

/// What forwarding needs of a packet, carried by value through the links'
/// queues beside the packet's pool slot: a router hop reads the 20 bytes
/// that arrive with the link's delivery and never touches the packet (a
/// separate metadata array cost a cache miss per hop on large runs).
///
/// 20 bytes with 4-byte alignment (the hash kept as two halves, size and
/// TTL sharing a word), so that a link's flight entry (arrival, size, hop)
/// is exactly 32 bytes: two entries per cache line, none across two.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Hop {
    /// [`flow_hash`] of the 5-tuple, low half first.
    pub(super) flow_hash: [u32; 2],
    /// Pool slot of the packet.
    pub(super) id: u32,
    pub(super) dst_idx: u32,
    /// Wire size (bytes) `<< 8` | the IP TTL. Routers decrement the TTL
    /// here rather than in the packet.
    pub(super) size_ttl: u32,
}

/// The largest wire size a [`Hop`] carries (24 bits). Segments are at most
/// 64 KiB (the MSS is a 16-bit option), coalesced ones twice that.
pub(super) const HOP_MAX_SIZE: u32 = (1 << 24) - 1;

impl Hop {
    pub(super) fn of(id: u32, p: &Packet) -> Hop {
        let mut h = Hop { flow_hash: split_hash(flow_hash(p.flow_key())), id, dst_idx: p.dst_idx, size_ttl: 0 };
        h.set_size_ttl(p.size, p.ttl);
        h
    }

    #[inline]
    pub(super) fn flow_hash(&self) -> u64 {
        u64::from(self.flow_hash[1]) << 32 | u64::from(self.flow_hash[0])
    }

    #[inline]
    pub(super) fn size(&self) -> u32 {
        self.size_ttl >> 8
    }

    #[inline]
    pub(super) fn ttl(&self) -> u8 {
        self.size_ttl as u8
    }

    #[inline]
    pub(super) fn set_size_ttl(&mut self, size: u32, ttl: u8) {
        debug_assert!(size <= HOP_MAX_SIZE, "packet of {size} bytes");
        self.size_ttl = size.min(HOP_MAX_SIZE) << 8 | u32::from(ttl);
    }
}

#[inline]
pub(super) fn split_hash(h: u64) -> [u32; 2] {
    [h as u32, (h >> 32) as u32]
}

const _: () = assert!(std::mem::size_of::<Hop>() == 20);

impl Pool {
    pub(super) fn put(&mut self, p: Packet) -> Hop {
        match self.free.pop() {
            Some(id) => {
                let h = Hop::of(id, &p);
                self.pkts[id as usize] = p;
                h
            }
            None => {
                let id = self.pkts.len() as u32;
                let h = Hop::of(id, &p);
                self.pkts.push(p);
                h
            }
        }
    }
    /// A slot to build a packet in (see `Endpoint::poll_transmit_into`);
    /// handed back with `unalloc` if nothing was built. The free list ends
    /// as `put` would leave it, so slot numbers do not change.
    pub(super) fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(id) => id,
            None => {
                self.pkts.push(Packet::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, mplab_wire::TcpHeader::default(), 0, 0));
                (self.pkts.len() - 1) as u32
            }
        }
    }
    pub(super) fn unalloc(&mut self, id: u32) {
        self.free.push(id);
    }
    pub(super) fn release(&mut self, h: Hop) {
        self.free.push(h.id);
    }
    /// A copy of the packet in a slot of its own (a duplicating link).
    pub(super) fn copy(&mut self, h: Hop) -> Hop {
        let p = self.pkts[h.id as usize].clone();
        let mut c = self.put(p);
        c.size_ttl = h.size_ttl; // a router may have counted the TTL down
        c
    }
}
