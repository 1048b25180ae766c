//! TCP and MPTCP byte streams between kernel sockets (the ends on mplab's
//! stack are the stack's): every kernel server listens, a kernel client
//! has its socket, and the flow's application runs on each
//! ([`crate::apps`]).

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;

use mplab_scenario::network::Flow;

use super::{failed, spawn, FlowDriver};
use crate::apps::{self, Clock, FlowState};
use crate::run::options::KernelError;
use crate::run::plan::Plan;
use crate::run::stack::HostStack;

#[derive(Default)]
pub struct Stream {
    /// Per flow: the client's kernel socket, if its client is the kernel's.
    clients: Vec<Option<OwnedFd>>,
    /// Per flow: the listeners of its kernel servers, (node, listener).
    listeners: Vec<Vec<(usize, Arc<OwnedFd>)>>,
}

impl Stream {
    pub fn new(flows: usize) -> Stream {
        Stream { clients: (0..flows).map(|_| None).collect(), listeners: vec![Vec::new(); flows] }
    }
}

impl FlowDriver for Stream {
    /// Every kernel server of the flow (a balanced flow's backends)
    /// listens; a kernel client has its socket.
    fn prepare(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], _: &Arc<FlowState>, _: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        let mut ls = Vec::new();
        for &srv in f.servers.iter().filter(|&&srv| plan.on_kernel[srv]) {
            let name = &plan.net.nodes[srv].name;
            let l = apps::listen(&node_ns[srv], f).map_err(|e| failed(f, format!("listening on {name}:{}: {e}", f.dport)))?;
            ls.push((srv, Arc::new(l)));
        }
        self.listeners[f.id] = ls;
        if plan.on_kernel[f.from] {
            self.clients[f.id] = Some(apps::client_socket(&node_ns[f.from], f).map_err(|e| failed(f, format!("socket on {}: {e}", f.from_name)))?);
        }
        Ok(())
    }

    /// Each stream's servers, then its client.
    fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, _: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let mut threads = Vec::new();
        for (i, f) in plan.net.flows.iter().enumerate() {
            for (node, l) in self.listeners[i].clone() {
                let (ff, st, c) = (f.clone(), states[i].clone(), clk.clone());
                threads.push(spawn(format!("srv-{}", f.name), move || apps::run_server(ff, l, node, st, c))?);
            }
            if let Some(s) = self.clients[i].take() {
                let (ff, st, c) = (f.clone(), states[i].clone(), clk.clone());
                threads.push(spawn(format!("cli-{}", f.name), move || apps::run_client(ff, s, st, c))?);
            }
        }
        Ok(threads)
    }

    fn close(&mut self) {
        self.listeners.clear();
    }
}
