//! RFC 8803 converter pairs: the CPE and HAG programs
//! ([`crate::converter`]), with the carriers mplab's stack takes.

use std::sync::Arc;
use std::thread::JoinHandle;

use mplab_scenario::network::Flow;

use super::{failed, spawn, FlowDriver};
use crate::apps::{Clock, FlowState};
use crate::converter::MplabCarriers;
use crate::run::options::KernelError;
use crate::run::plan::Plan;
use crate::run::stack::HostStack;

/// Converters, by flow id.
#[derive(Default)]
pub struct Converter {
    converters: Vec<(usize, crate::converter::Converter)>,
}

impl FlowDriver for Converter {
    /// Fast Open, the CPE's redirect, both listeners (or their stacks' carriers).
    fn prepare(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], _: &Arc<FlowState>, stacks: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        let mut carriers = MplabCarriers::default();
        for s in stacks.iter_mut() {
            s.converter_ends(f, &mut carriers).map_err(KernelError::Failed)?;
        }
        self.converters.push((f.id, crate::converter::prepare(plan.net, f, &node_ns[f.from], &node_ns[f.to], carriers).map_err(|e| failed(f, e))?));
        Ok(())
    }

    fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, _: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let mut threads = Vec::new();
        for (fi, conv) in self.converters.drain(..) {
            let (ff, st, c) = (plan.net.flows[fi].clone(), states[fi].clone(), clk.clone());
            threads.push(spawn(format!("conv-{}", ff.name), move || crate::converter::run(conv, st, c))?);
        }
        Ok(threads)
    }
}
