//! Scenario events `remove_addr` / `add_addr` / `prio` on the real
//! backends: at the event's time a kernel host deletes the address's MPTCP
//! endpoint (`ip mptcp endpoint delete id N`, REMOVE_ADDR), adds it again
//! with the flags it was configured with, or changes its backup flag (`ip
//! mptcp endpoint change id N backup|nobackup`, MP_PRIO); an mplab host
//! gets the `remove` / `add` / `backup` / `nobackup` control command
//! through its stack's [`ControlFn`]. The link emulator leaves these
//! events alone.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mplab_scenario::network::{Event, LinkAction, Network};

use crate::apps::Clock;
use crate::kconf::MptcpNode;

/// One address event, resolved to what runs where.
#[derive(Debug, Clone)]
struct Step {
    at_ns: u64,
    node_name: String,
    ns: String,
    addr: Ipv4Addr,
    change: Change,
    /// How the host's stack takes commands (mplab's stack), else the
    /// kernel's `ip mptcp endpoint`.
    control: Option<ControlFn>,
    /// The kernel host's `endpoint add ...` line for this address.
    endpoint: Option<String>,
}

/// What an event does to the address.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    Remove,
    Add,
    Prio { backup: bool },
}

impl Change {
    /// The event's name in a scenario file.
    fn event(self) -> &'static str {
        match self {
            Change::Remove => "remove_addr",
            Change::Add => "add_addr",
            Change::Prio { backup: true } => "prio backup",
            Change::Prio { backup: false } => "prio nobackup",
        }
    }
}

/// Hands commands (one per line) to the stack of the host in namespace
/// `ns` (mplab's: `crate::userspace::send_control`); `WouldBlock` while
/// earlier ones are pending.
pub type ControlFn = fn(ns: &str, commands: &str) -> std::io::Result<()>;

/// The address events of `net`, in time order.
pub struct AddrEvents {
    steps: Vec<Step>,
}

impl AddrEvents {
    /// `control[node]`: how that node's stack takes commands, None for the
    /// kernel's; `plan`: the kernel hosts' MPTCP endpoints.
    pub fn new(net: &Network, node_ns: &[String], control: &[Option<ControlFn>], plan: &BTreeMap<usize, MptcpNode>) -> AddrEvents {
        let steps = net
            .events
            .iter()
            .filter_map(|e: &Event| {
                let (node, addr, change) = match &e.action {
                    LinkAction::RemoveAddr { node, addr, .. } => (*node, *addr, Change::Remove),
                    LinkAction::AddAddr { node, addr, .. } => (*node, *addr, Change::Add),
                    LinkAction::Prio { node, addr, backup, .. } => (*node, *addr, Change::Prio { backup: *backup }),
                    _ => return None,
                };
                let prefix = format!("endpoint add {addr} ");
                let endpoint = plan.get(&node).and_then(|p| p.endpoints.iter().find(|x| x.starts_with(&prefix)).cloned());
                Some(Step { at_ns: e.at_ns, node_name: net.nodes[node].name.clone(), ns: node_ns[node].clone(), addr, change, control: control[node], endpoint })
            })
            .collect();
        AddrEvents { steps }
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Runs every event at its time (bounded by the clock's hard deadline
    /// and the abort flag); returns one line per event saying what it did.
    pub fn run(self, clk: Clock) -> Vec<String> {
        let mut out = Vec::new();
        // The backup flag `prio` events left on each kernel host address.
        let mut backup: BTreeMap<(String, Ipv4Addr), bool> = BTreeMap::new();
        for s in self.steps {
            loop {
                if clk.abort.load(Ordering::SeqCst) || clk.now_ns() >= clk.hard_ns {
                    return out;
                }
                let now = clk.now_ns();
                if now >= s.at_ns {
                    break;
                }
                std::thread::sleep(Duration::from_nanos((s.at_ns - now).clamp(100_000, 50_000_000)));
            }
            let at = clk.now_ns() as f64 / 1e9;
            let what = match s.control {
                Some(send) => control(&s, send, &clk),
                None => {
                    if let Change::Prio { backup: b } = s.change {
                        backup.insert((s.ns.clone(), s.addr), b);
                    }
                    kernel(&s, backup.get(&(s.ns.clone(), s.addr)).copied())
                }
            };
            out.push(format!("{at:.3} s: {} {} {}: {what}", s.node_name, s.change.event(), s.addr));
        }
        out
    }
}

/// The mplab host's control command; retried while an earlier one is
/// still pending (at most 1 s).
fn control(s: &Step, send: ControlFn, clk: &Clock) -> String {
    let verb = match s.change {
        Change::Remove => "remove",
        Change::Add => "add",
        Change::Prio { backup: true } => "backup",
        Change::Prio { backup: false } => "nobackup",
    };
    let cmd = format!("{verb} {}\n", s.addr);
    for _ in 0..200 {
        match send(&s.ns, &cmd) {
            Ok(()) => return "control command sent".into(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && !clk.abort.load(Ordering::SeqCst) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return format!("control command failed: {e}"),
        }
    }
    "control command not picked up within 1 s".into()
}

/// `ip mptcp endpoint delete` / `add` in the kernel host's namespace.
fn kernel(s: &Step, backup: Option<bool>) -> String {
    if s.change == Change::Add {
        let Some(line) = &s.endpoint else {
            return "no MPTCP endpoint is configured for this address: nothing to add back".into();
        };
        // Back with the flags it was configured with, but the backup flag
        // an earlier `prio` event gave it (as mplab's stack keeps it).
        let mut args: Vec<&str> = line.split_whitespace().filter(|w| *w != "backup").collect();
        if backup.unwrap_or_else(|| line.split_whitespace().any(|w| w == "backup")) {
            args.push("backup");
        }
        let line = args.join(" ");
        if crate::mptcp_netlink::needs_netlink(&line) {
            return crate::mptcp_netlink::add_endpoint(&s.ns, &line).map_or_else(|e| format!("failed: {e}"), |_| format!("{line} (netlink)"));
        }
        return ip(&s.ns, &[&["mptcp"], &args[..]].concat()).map_or_else(|e| format!("failed: {e}"), |_| format!("ip mptcp {line}"));
    }
    let show = match ip(&s.ns, &["mptcp", "endpoint", "show"]) {
        Ok(t) => t,
        Err(e) => return format!("failed: {e}"),
    };
    let prefix = format!("{} ", s.addr);
    let Some(id) = show.lines().find(|l| l.starts_with(&prefix)).and_then(|l| l.split_whitespace().skip_while(|w| *w != "id").nth(1)).map(str::to_string) else {
        return "no MPTCP endpoint for this address: nothing to change".into();
    };
    let args: Vec<&str> = match s.change {
        Change::Prio { backup } => vec!["mptcp", "endpoint", "change", "id", &id, if backup { "backup" } else { "nobackup" }],
        _ => vec!["mptcp", "endpoint", "delete", "id", &id],
    };
    ip(&s.ns, &args).map_or_else(|e| format!("failed: {e}"), |_| format!("ip {}", args.join(" ")))
}

fn ip(ns: &str, args: &[&str]) -> Result<String, String> {
    let out = crate::sys::output_within(Command::new("ip").arg("-n").arg(ns).args(args), None, crate::sys::COMMAND_LIMIT)?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
