//! The commands a run sends a host's loop while it runs (see
//! [`crate::userspace::control_path`]): MP_PRIO, addresses out of and
//! back in service, aborts.

use std::net::IpAddr;

use super::end::End;

/// Applies one control command (see [`super::control_path`]); what it did.
pub(super) fn control(ends: &mut [End], line: &str) -> String {
    let mut w = line.split_whitespace();
    let verb = w.next().unwrap_or("");
    let arg = w.next();
    let addr: Option<IpAddr> = arg.and_then(|a| a.parse().ok());
    let mut done = Vec::new();
    for end in ends.iter_mut() {
        let name = end.flow.name.clone();
        let Some(conn) = end.conn.as_mut() else { continue };
        match (verb, addr) {
            ("backup" | "nobackup", Some(a)) => {
                let Some(mp) = conn.mptcp() else { continue };
                let Some(id) = mp.local_addr_id(a) else { continue };
                let n = mp.subflow_stats().iter().filter(|s| s.local.ip() == a && !s.closed && s.backup != (verb == "backup")).count();
                mp.set_local_backup(id, verb == "backup");
                done.push(format!("{name}: MP_PRIO on {n} subflow(s)"));
            }
            ("remove" | "add", Some(a)) => {
                let Some(id) = end.cfg.locals.iter().find(|l| l.addr == a).map(|l| l.id) else { continue };
                let Some(mp) = conn.mptcp() else { continue };
                if verb == "add" {
                    mp.add_local(id);
                    done.push(format!("{name}: address id {id} back in service"));
                } else {
                    mp.remove_local(id);
                    done.push(format!("{name}: REMOVE_ADDR id {id}"));
                }
            }
            ("abort", _) if arg.is_none_or(|f| f == name) => {
                conn.abort();
                end.aborted = true;
                done.push(format!("{name}: aborted"));
            }
            _ => {}
        }
    }
    if done.is_empty() {
        "no effect (unknown command, address or flow, or no connection yet)".into()
    } else if done.len() > 4 {
        // Many connections: the first ones and how many in all.
        format!("{}; ... ({} connections)", done[..3].join("; "), done.len())
    } else {
        done.join("; ")
    }
}

