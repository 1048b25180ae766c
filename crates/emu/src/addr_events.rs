//! Scenario events `remove_addr` / `add_addr` on the real backends: at the
//! event's time a kernel host deletes the address's MPTCP endpoint (`ip
//! mptcp endpoint delete id N`, REMOVE_ADDR) or adds it again with the
//! flags it was configured with; an mplab host gets the `remove` / `add`
//! control command through its stack's [`ControlFn`]. The link emulator leaves these events alone.

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
    add: bool,
    /// How the host's stack takes commands (mplab's stack), else the
    /// kernel's `ip mptcp endpoint`.
    control: Option<ControlFn>,
    /// The kernel host's `endpoint add ...` line for this address.
    endpoint: Option<String>,
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
                let (node, addr, add) = match &e.action {
                    LinkAction::RemoveAddr { node, addr, .. } => (*node, *addr, false),
                    LinkAction::AddAddr { node, addr, .. } => (*node, *addr, true),
                    _ => return None,
                };
                let prefix = format!("endpoint add {addr} ");
                let endpoint = plan.get(&node).and_then(|p| p.endpoints.iter().find(|x| x.starts_with(&prefix)).cloned());
                Some(Step { at_ns: e.at_ns, node_name: net.nodes[node].name.clone(), ns: node_ns[node].clone(), addr, add, control: control[node], endpoint })
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
                None => kernel(&s),
            };
            out.push(format!("{at:.3} s: {} {} {}: {what}", s.node_name, if s.add { "add_addr" } else { "remove_addr" }, s.addr));
        }
        out
    }
}

/// The mplab host's control command; retried while an earlier one is
/// still pending (at most 1 s).
fn control(s: &Step, send: ControlFn, clk: &Clock) -> String {
    let cmd = format!("{} {}\n", if s.add { "add" } else { "remove" }, s.addr);
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
fn kernel(s: &Step) -> String {
    if s.add {
        let Some(line) = &s.endpoint else {
            return "no MPTCP endpoint is configured for this address: nothing to add back".into();
        };
        let args: Vec<&str> = line.split_whitespace().collect();
        return ip(&s.ns, &[&["mptcp"], &args[..]].concat()).map_or_else(|e| format!("failed: {e}"), |_| format!("ip mptcp {line}"));
    }
    let show = match ip(&s.ns, &["mptcp", "endpoint", "show"]) {
        Ok(t) => t,
        Err(e) => return format!("failed: {e}"),
    };
    let prefix = format!("{} ", s.addr);
    let Some(id) = show.lines().find(|l| l.starts_with(&prefix)).and_then(|l| l.split_whitespace().skip_while(|w| *w != "id").nth(1)).map(str::to_string) else {
        return "no MPTCP endpoint for this address: nothing to delete".into();
    };
    ip(&s.ns, &["mptcp", "endpoint", "delete", "id", &id]).map_or_else(|e| format!("failed: {e}"), |_| format!("ip mptcp endpoint delete id {id}"))
}

fn ip(ns: &str, args: &[&str]) -> Result<String, String> {
    let out = crate::sys::output_within(Command::new("ip").arg("-n").arg(ns).args(args), None, crate::sys::COMMAND_LIMIT)?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
