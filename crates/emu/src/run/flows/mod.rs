//! The flows' drivers: each flow kind ([`FlowKind`]) is one driver behind
//! [`FlowDriver`], in its own file, which prepares its flows' ends before
//! time zero (sockets bound and listening, helper processes ready,
//! gateway devices up) and starts their threads at time zero. The ends on
//! mplab's stack are the stack's ([`super::stack::HostStack`]); these are
//! the kernel's sockets and the programs around them.

mod converter;
mod datagram;
mod sctp;
mod stream;
mod tunnel;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant as Wall;

use mplab_scenario::network::Flow;

use super::options::KernelError;
use super::plan::{FlowKind, Plan};
use super::stack::HostStack;
use crate::apps::{Clock, FlowState};

pub use sctp::SctpPaths;

/// One kind of flow on the real-packet backends.
pub trait FlowDriver {
    /// Prepares flow `f`'s ends before time zero (`stacks`: the ends
    /// mplab's stack takes over).
    fn prepare(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], st: &Arc<FlowState>, stacks: &mut [&mut dyn HostStack]) -> Result<(), KernelError>;
    /// Starts the prepared ends at time zero (`t0_real`, CLOCK_REALTIME):
    /// the threads the run joins.
    fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, t0_real: u64) -> Result<Vec<JoinHandle<()>>, KernelError>;
    /// Waits until `deadline` for what ends by itself (helper processes).
    fn finish(&mut self, _deadline: Wall) {}
    /// Closes what could keep the namespaces alive (listening sockets).
    fn close(&mut self) {}
}

/// The flows, prepared and not yet started. Dropping it (on a set-up
/// error) closes the sockets and ends the helper processes.
#[derive(Default)]
pub struct Flows {
    sctp: sctp::Sctp,
    datagram: datagram::Datagram,
    tunnel: tunnel::Tunnel,
    converter: converter::Converter,
    stream: stream::Stream,
}

impl Flows {
    /// The driver of `kind`.
    fn driver(&mut self, kind: FlowKind) -> &mut dyn FlowDriver {
        match kind {
            FlowKind::Sctp => &mut self.sctp,
            FlowKind::Datagram => &mut self.datagram,
            FlowKind::Tunnel => &mut self.tunnel,
            FlowKind::Converter => &mut self.converter,
            FlowKind::Stream => &mut self.stream,
        }
    }

    /// Prepares every flow's ends, kind by kind: the helper processes
    /// first, the streams' listeners last.
    pub fn prepare(plan: &Plan, node_ns: &[String], states: &[Arc<FlowState>], stacks: &mut [&mut dyn HostStack]) -> Result<Flows, KernelError> {
        let mut fl = Flows { stream: stream::Stream::new(plan.net.flows.len()), ..Default::default() };
        for kind in [FlowKind::Sctp, FlowKind::Datagram, FlowKind::Tunnel, FlowKind::Converter, FlowKind::Stream] {
            for f in plan.flows_of(kind) {
                fl.driver(kind).prepare(plan, f, node_ns, &states[f.id], stacks)?;
            }
        }
        Ok(fl)
    }

    /// The SCTP senders' per-path views, per flow.
    pub fn sctp_paths(&self, plan: &Plan) -> SctpPaths {
        self.sctp.paths(plan)
    }

    /// Starts every kind's ends at time zero: the usrsctp hosts told time
    /// zero, the gateways, converters, datagram ends, then each stream's
    /// servers and client.
    pub fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, t0_real: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let mut threads = Vec::new();
        for kind in [FlowKind::Sctp, FlowKind::Tunnel, FlowKind::Converter, FlowKind::Datagram, FlowKind::Stream] {
            threads.extend(self.driver(kind).start(plan, states, clk, t0_real)?);
        }
        Ok(threads)
    }

    /// Waits for the helper processes to end (they end by themselves at
    /// the hard deadline at the latest) until `deadline`.
    pub fn finish(&mut self, deadline: Wall) {
        self.sctp.finish(deadline);
    }

    /// Drops the listeners (nothing may keep the namespaces alive).
    pub fn close_listeners(&mut self) {
        self.stream.close();
    }
}

fn failed(f: &Flow, e: impl std::fmt::Display) -> KernelError {
    KernelError::Failed(format!("flow {}: {e}", f.name))
}

fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, KernelError> {
    std::thread::Builder::new().name(name).spawn(body).map_err(|e| KernelError::Failed(e.to_string()))
}
