//! The adversarial matrix's attacker as a box on a link: one
//! [`crate::attack::Attacker`] shared by the link's two directions
//! (a box per direction, as every link box), so that what it learns from
//! one direction shapes what it forges into the other.

use std::cell::RefCell;
use std::rc::Rc;

use mplab_proto::Instant;

use super::element::{Hook, Middlebox};
use super::segment::ModelPacket;
use super::split::Split;
use crate::attack::{AttackReport, Attacker, Seg};

pub struct AttackerBox {
    pub shared: Rc<RefCell<Attacker>>,
    /// Link direction of this box (0: a→b).
    pub dir: usize,
}

impl AttackerBox {
    /// The two boxes of one attacker: a→b and b→a.
    pub fn pair(a: Attacker) -> [AttackerBox; 2] {
        let shared = Rc::new(RefCell::new(a));
        [AttackerBox { shared: shared.clone(), dir: 0 }, AttackerBox { shared, dir: 1 }]
    }
}

impl<P: ModelPacket> Middlebox<P> for AttackerBox {
    fn kind(&self) -> &'static str {
        "attacker"
    }

    fn process(&mut self, now: Instant, at: Hook, mut p: P, out: &mut Vec<P>) {
        if !matches!(at, Hook::Link) {
            out.push(p);
            return;
        }
        let mut seg = Seg { src: p.src(), dst: p.dst(), tcp: *p.tcp(), payload_len: p.payload_len() };
        let t = self.shared.borrow_mut().on_segment(now, self.dir, &mut seg);
        if t.drop {
            return;
        }
        if t.header {
            p.set_src(seg.src);
            p.set_dst(seg.dst);
            *p.tcp_mut() = seg.tcp;
            p.resize();
        }
        let c = p.corrupted() | t.corrupt;
        p.set_corrupted(c);
        match t.split_at {
            Some(n) if p.tail().is_none() && n > 0 => Split { size: n.max(p.payload_len() - n) }.process(now, at, p, out),
            _ => out.push(p),
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.shared.borrow().next_deadline(self.dir)
    }

    fn on_timer(&mut self, now: Instant, out: &mut Vec<P>) {
        let mut a = self.shared.borrow_mut();
        while let Some(f) = a.poll_forged(now, self.dir) {
            let mut p = P::new_segment(f.seg.src, f.seg.dst, f.seg.tcp, f.seg.payload_len, f.claims);
            // The attacker's bytes are not the sender's.
            p.set_corrupted(f.seg.payload_len > 0);
            out.push(p);
        }
    }

    fn attack_report(&self) -> Option<AttackReport> {
        (self.dir == 0).then(|| self.shared.borrow().report().clone())
    }
}
