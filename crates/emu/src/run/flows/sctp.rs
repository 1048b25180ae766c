//! SCTP flows with an end on a kernel host: usrsctp host processes in the
//! ends' namespaces (this kernel has no SCTP).

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant as Wall};

use mplab_scenario::network::Flow;

use super::{failed, FlowDriver};
use crate::apps::{Clock, FlowState};
use crate::run::options::KernelError;
use crate::run::plan::Plan;
use crate::run::stack::HostStack;
use crate::usrsctp::flow::SctpFlow;
use crate::usrsctp::host::PathLine;

/// Per flow: the SCTP sender's latest per-path view, for the probes.
pub type SctpPaths = Vec<Option<Arc<Mutex<Vec<PathLine>>>>>;

/// usrsctp pairs, in flow order; they live until [`FlowDriver::finish`].
#[derive(Default)]
pub struct Sctp {
    flows: Vec<SctpFlow>,
}

impl Sctp {
    /// The senders' per-path views, per flow.
    pub fn paths(&self, plan: &Plan) -> SctpPaths {
        let mut it = self.flows.iter();
        plan.net.flows.iter().map(|f| if f.transport.is_sctp() { it.next().map(|s| s.paths.clone()) } else { None }).collect()
    }
}

impl FlowDriver for Sctp {
    /// The usrsctp hosts, ready (bound, listening) before time zero.
    fn prepare(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], st: &Arc<FlowState>, _: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        let s = SctpFlow::spawn(plan.net, f, node_ns, plan.hard_ns, st.clone(), [plan.on_kernel[f.to], plan.on_kernel[f.from]]).map_err(|e| failed(f, e))?;
        s.wait_ready(Duration::from_secs(5)).map_err(|e| failed(f, e))?;
        self.flows.push(s);
        Ok(())
    }

    /// Tells the hosts time zero; they run in their own processes.
    fn start(&mut self, _: &Plan, _: &[Arc<FlowState>], _: &Clock, t0_real: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        for s in &mut self.flows {
            s.start(t0_real);
        }
        Ok(Vec::new())
    }

    fn finish(&mut self, deadline: Wall) {
        for s in self.flows.drain(..) {
            s.finish(deadline);
        }
    }
}
