//! Middlebox kinds (`[[middleboxes]] kind = ...`): what a box on a link or
//! a router does to the packets passing it. The boxes themselves are
//! mplab-backend's `middlebox` kinds (crates/backend/src/middlebox/, one
//! file each, run by the simulator and, for link-placed option stripping,
//! by the link emulator) and, where the kernel backend runs a kind on a
//! router, iptables/nftables rules; this registry checks the fields and
//! says where a kind may sit.

use super::about::{only_its_fields, About, OnKernel};
use crate::error::{diag, Diag};
use crate::attack::AttackKind;
use crate::network::{BalancerMode, Direction, MiddleboxAction};
use crate::schema::{MiddleboxSpec, ResegmentMode, StripOn};

/// One middlebox kind.
pub struct MiddleboxEntry {
    pub about: About,
    /// It may sit on a link direction (`link = ...`).
    pub on_link: bool,
    /// It may sit on a router (`node = ...`).
    pub on_router: bool,
    /// Checks the fields and builds the validated action.
    pub(crate) resolve: fn(&MiddleboxSpec, &str) -> Result<MiddleboxAction, Diag>,
}

/// The kinds; one line each.
pub const REGISTRY: &[MiddleboxEntry] = &[
    MiddleboxEntry {
        about: About {
            name: "strip_mptcp",
            params: &["on"],
            what: "removes TCP option 30 (MPTCP) from every segment or only SYNs, like a Cisco ASA",
            kernel: OnKernel::Runs("on a link: the link emulator rewrites the option to NOPs; on a router: iptables TCPOPTSTRIP"),
        },
        on_link: true,
        on_router: true,
        resolve: strip_mptcp,
    },
    MiddleboxEntry {
        about: About { name: "nat", params: &["addr"], what: "source NAT to `addr` (default: the outgoing interface's address)", kernel: OnKernel::Runs("nftables snat / masquerade on the router") },
        on_link: false,
        on_router: true,
        resolve: nat,
    },
    MiddleboxEntry {
        about: About {
            name: "resegment",
            params: &["mode", "size", "hold"],
            what: "splits segments or coalesces them (TSO/GRO, proxies)",
            kernel: OnKernel::Refuses("resegmenting middleboxes are not available on the kernel backend"),
        },
        on_link: true,
        on_router: true,
        resolve: resegment,
    },
    MiddleboxEntry {
        about: About {
            name: "rewrite",
            params: &["every"],
            what: "changes payload bytes and fixes the TCP checksum (an application gateway): only MPTCP's DSS checksum can tell",
            kernel: OnKernel::Refuses("payload-rewriting middleboxes are not available on the kernel backend"),
        },
        on_link: true,
        on_router: true,
        resolve: rewrite,
    },
    MiddleboxEntry {
        about: About {
            name: "load_balancer",
            params: &["mode", "vip", "backends", "table", "idle"],
            what: "a layer-4 load balancer for `vip` in front of `backends`: iphash, fivetuple (Maglev), token (MPTCP-aware) or stateless (joins to the backends' own addresses)",
            kernel: OnKernel::Runs("an NFQUEUE forwarder in the router's namespace marks each segment to the VIP for its backend's routing table; the VIP on the backends' lo"),
        },
        on_link: false,
        on_router: true,
        resolve: load_balancer,
    },
    MiddleboxEntry {
        about: About {
            name: "attacker",
            params: &["attack", "at", "count"],
            what: "an attacker on a link (both directions) that forges, replays or changes MPTCP segments at `at`: one row of the adversarial matrix (`mplab attack`)",
            kernel: OnKernel::Runs("in the link emulator, on the frames of that link"),
        },
        on_link: true,
        on_router: false,
        resolve: attacker,
    },
];

/// The entry of a kind.
pub fn entry(name: &str) -> &'static MiddleboxEntry {
    REGISTRY.iter().find(|e| e.about.name == name).expect("every schema MiddleboxKind has a registry entry")
}

/// The entry of a resolved action.
pub fn of(action: &MiddleboxAction) -> &'static MiddleboxEntry {
    entry(action.kind())
}

/// Checks a middlebox's fields (not its placement) and builds its action.
pub(crate) fn resolve(m: &MiddleboxSpec, path: &str) -> Result<MiddleboxAction, Diag> {
    let e = entry(m.kind.name());
    let given = [
        ("on", m.on.is_some()),
        ("addr", m.addr.is_some()),
        ("mode", m.mode.is_some()),
        ("size", m.size.is_some()),
        ("hold", m.hold.is_some()),
        ("every", m.every.is_some()),
        ("vip", m.vip.is_some()),
        ("backends", m.backends.is_some()),
        ("table", m.table.is_some()),
        ("idle", m.idle.is_some()),
        ("attack", m.attack.is_some()),
        ("at", m.at.is_some()),
        ("count", m.count.is_some()),
    ];
    only_its_fields(&e.about, &given, path, "kind")?;
    (e.resolve)(m, path)
}

fn strip_mptcp(m: &MiddleboxSpec, _: &str) -> Result<MiddleboxAction, Diag> {
    Ok(MiddleboxAction::StripMptcp { on: m.on.unwrap_or(StripOn::All) })
}

fn nat(m: &MiddleboxSpec, _: &str) -> Result<MiddleboxAction, Diag> {
    Ok(MiddleboxAction::Nat { addr: m.addr })
}

fn resegment(m: &MiddleboxSpec, path: &str) -> Result<MiddleboxAction, Diag> {
    let mode = match m.mode.as_deref() {
        Some("coalesce") => ResegmentMode::Coalesce,
        Some("split") => ResegmentMode::Split,
        Some(other) => return diag(format!("{path}.mode"), format!("unknown mode {other:?} for kind = \"resegment\" (\"coalesce\" or \"split\")")),
        None => return diag(path, "kind = \"resegment\" needs `mode` (\"coalesce\" or \"split\")"),
    };
    if m.size.is_some_and(|s| s.bytes() == 0) {
        return diag(format!("{path}.size"), "must be greater than 0");
    }
    if m.hold.is_some() && mode != ResegmentMode::Coalesce {
        return diag(format!("{path}.hold"), "only applies to mode = \"coalesce\"");
    }
    if m.hold.is_some_and(|h| h.as_nanos() == 0 || h.as_nanos() > 1_000_000_000) {
        return diag(format!("{path}.hold"), "must be greater than 0 and at most 1s");
    }
    Ok(MiddleboxAction::Resegment { mode, size: m.size.map(|s| s.bytes()), hold_ns: m.hold.map(|h| h.as_nanos()) })
}

fn rewrite(m: &MiddleboxSpec, path: &str) -> Result<MiddleboxAction, Diag> {
    if m.every.is_some_and(|s| s.bytes() == 0) {
        return diag(format!("{path}.every"), "must be greater than 0");
    }
    Ok(MiddleboxAction::Rewrite { every: m.every.map_or(1_000_000, |s| s.bytes()) })
}

fn load_balancer(m: &MiddleboxSpec, path: &str) -> Result<MiddleboxAction, Diag> {
    let names = || BalancerMode::ALL.map(|m| format!("{:?}", m.name())).join(", ");
    let mode = match m.mode.as_deref() {
        Some(s) => BalancerMode::from_name(s).ok_or_else(|| Diag::new(format!("{path}.mode"), format!("unknown mode {s:?} for kind = \"load_balancer\" ({})", names())))?,
        None => return diag(path, format!("kind = \"load_balancer\" needs `mode` ({})", names())),
    };
    let vip = m.vip.ok_or_else(|| Diag::new(path, "kind = \"load_balancer\" needs `vip`, the address clients connect to"))?;
    let backends = m.backends.clone().unwrap_or_default();
    if backends.is_empty() {
        return diag(format!("{path}.backends"), "a load balancer needs at least one backend host");
    }
    if backends.len() > 1000 {
        return diag(format!("{path}.backends"), "at most 1000 backends");
    }
    if m.table.is_some_and(|t| t == 0 || t > 1 << 26) {
        return diag(format!("{path}.table"), "must be between 1 and 67108864 entries");
    }
    if m.idle.is_some_and(|d| d.as_nanos() == 0) {
        return diag(format!("{path}.idle"), "must be greater than 0");
    }
    Ok(MiddleboxAction::LoadBalancer { mode, vip, backends, table: m.table.unwrap_or(1 << 20), idle_ns: m.idle.map_or(300_000_000_000, |d| d.as_nanos()) })
}

fn attacker(m: &MiddleboxSpec, path: &str) -> Result<MiddleboxAction, Diag> {
    let attack = match m.attack.as_deref() {
        Some(s) => AttackKind::from_name(s).ok_or_else(|| Diag::new(format!("{path}.attack"), format!("unknown attack {s:?} ({})", AttackKind::names())))?,
        None => return diag(path, format!("kind = \"attacker\" needs `attack` ({})", AttackKind::names())),
    };
    // It learns from and forges into both directions of its link.
    if m.direction.is_some_and(|d| d != Direction::Both) {
        return diag(format!("{path}.direction"), "an attacker sees both directions of its link: leave `direction` out");
    }
    if m.count.is_some_and(|c| c == 0 || c > 1_000_000) {
        return diag(format!("{path}.count"), "must be between 1 and 1000000");
    }
    Ok(MiddleboxAction::Attacker { attack, at_ns: m.at.map_or(3_000_000_000, |d| d.as_nanos()), count: m.count.map(|c| c as u32) })
}
