//! One real-packet run (the kernel and userspace backends) as a pipeline
//! of phases, each in its own module:
//!
//! 1. [`plan`]: everything derived once from the `Network` (which stack
//!    each node runs, the kernel hosts' MPTCP settings, the balancers, how
//!    each flow runs, the link emulator's configuration);
//! 2. [`setup`]: namespaces and links, then addresses and routes;
//! 3. [`stack`]: each host's (MP)TCP stack configured ([`HostStack`]: the
//!    kernel's here, mplab's in `crate::userspace::stack`);
//! 4. [`middleboxes`]: rules on nodes, the load balancers' forwarders;
//!    then the stacks open their devices;
//! 5. [`flows`]: every flow's ends prepared before time zero, started at it;
//! 6. [`probe`]: the probe loop until the scenario's end;
//! 7. [`collect`]: the results in the simulator's format, and meta.json.
//!
//! The namespaces live in the [`crate::topo::Topology`] made first and
//! dropped last: every error return tears them down, after the sockets,
//! devices and threads of the later phases are closed.

pub mod collect;
pub mod flows;
pub mod middleboxes;
pub mod options;
pub mod plan;
pub mod probe;
pub mod setup;
pub mod stack;
pub mod track;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant as Wall};

use mplab_scenario::network::Network;

use crate::addr_events::{AddrEvents, ControlFn};
use crate::apps::{self, Clock, FlowState};
use crate::emulator::Emulator;
use crate::{sys, topo};

pub use options::{KernelError, KernelOptions, KernelRun};
pub use plan::{FlowKind, Plan, GRACE, LEAD};
pub use stack::{HostStack, KernelStack};

/// Runs `net` with the nodes `mplab_stack` names on that stack (mplab's
/// own, the userspace backend) and the rest on the kernel's; None runs
/// every node on the kernel (the kernel backend).
pub fn run(net: &Network, opts: &KernelOptions, mplab_stack: Option<Box<dyn HostStack>>) -> Result<KernelRun, KernelError> {
    // Flows' random start times, drawn as every backend draws them (a
    // caller that drew them already left nothing to draw).
    let jittered;
    let net = if net.flows.iter().any(|f| f.start_jitter_ns > 0) {
        let mut n = net.clone();
        mplab_backend::workload::apply_start_jitter(&mut n);
        jittered = n;
        &jittered
    } else {
        net
    };
    let mplab = mplab_stack.as_ref().map_or_else(|| vec![false; net.nodes.len()], |s| s.nodes());
    setup::preflight()?;
    let plan = Plan::new(net, mplab)?;
    setup::path_manager_answers(&plan)?;
    let wall = Wall::now();
    let prefix = opts.prefix.clone().unwrap_or_else(topo::run_prefix);
    let abort = opts.abort.clone();
    let check = || if abort.load(Ordering::SeqCst) { Err(KernelError::Interrupted) } else { Ok(()) };
    // Declared first, dropped last: whatever fails below, the namespaces go.
    let mut topo = setup::namespaces(&plan, &prefix)?;
    setup::addresses(&plan, &topo)?;
    check()?;
    let ns = topo.node_ns.clone();
    // Declared before the stacks so that, on an error, the stacks' devices
    // close before the balancers' forwarders stop.
    let balancers: middleboxes::Balancers;
    let mut stacks: Vec<Box<dyn HostStack>> = vec![Box::new(KernelStack::new(&plan))];
    stacks.extend(mplab_stack);
    for s in stacks.iter_mut() {
        s.configure(&plan, &ns)?;
    }
    middleboxes::rules(&plan, &ns)?;
    check()?;
    balancers = middleboxes::Balancers::start(&plan, &ns)?;
    for s in stacks.iter_mut() {
        s.open(&plan, &ns)?;
    }
    let setup_s = wall.elapsed().as_secs_f64();

    // Sockets and counters, all before time zero.
    let netdev = probe::Probes::open_counters(&plan, &ns)?;
    let states: Vec<Arc<FlowState>> = net.flows.iter().map(|_| Arc::new(FlowState::default())).collect();
    let mut flows = {
        let mut refs: Vec<&mut dyn HostStack> = stacks.iter_mut().map(|s| &mut **s as &mut dyn HostStack).collect();
        flows::Flows::prepare(&plan, &ns, &states, &mut refs)?
    };
    let sctp_paths = flows.sctp_paths(&plan);

    // Time zero: the link emulator, the balancers' clocks, the captures,
    // then every flow's and stack's threads.
    let t0 = Wall::now() + LEAD;
    let t0_real = sys::realtime_ns() + LEAD.as_nanos() as u64;
    let emu = Emulator::start(plan.emu_config(&topo.wire_ns), t0).map_err(KernelError::Failed)?;
    balancers.start_clock(t0);
    let captures = probe::start_captures(&plan, opts.pcap_dir.as_deref(), &ns, t0_real)?;
    let clk = Clock { t0, end_ns: net.duration_ns, hard_ns: plan.hard_ns, abort: abort.clone(), poll_ns: Clock::poll_step(net.flows.len()) };
    let mut threads = flows.start(&plan, &states, &clk, t0_real)?;
    for s in stacks.iter_mut() {
        threads.extend(s.start(&plan, &ns, &states, &clk)?);
    }
    let addr_thread = address_events(&plan, &ns, &stacks, &clk)?;

    // Probes at every interval until the end.
    let mut probes = probe::Probes::at_time_zero(&plan, &ns, &sctp_paths, &clk, abort.clone(), t0, netdev);
    let end = probes.run(&states);
    // The end of the run: counters and subflows as of now.
    probes.observe_all(&states, probes.k);
    let interrupted = probes.interrupted;
    if interrupted {
        abort.store(true, Ordering::SeqCst);
    }
    for t in threads {
        let _ = t.join();
    }
    let addr_notes = addr_thread.map(|t| t.join().unwrap_or_default()).unwrap_or_default();
    // The usrsctp hosts end by themselves at the hard deadline at the latest.
    let sctp_deadline = t0 + Duration::from_nanos(plan.hard_ns) + Duration::from_secs(3);
    flows.finish(if interrupted { Wall::now() } else { sctp_deadline });
    // Last look at the subflows (retransmissions during the drain count).
    probes.observe_all(&states, probes.k + 1);
    let (pcap_packets, pcap_errors) = probe::finish_captures(captures);
    let report = emu.stop();
    let balancer_stats = balancers.stop();
    for st in &states {
        for s in [st.client.get(), st.server.get()].into_iter().flatten() {
            apps::abortive_close(s);
        }
    }
    for s in stacks.iter_mut() {
        s.finish();
    }
    let netstat = collect::netstat(&plan, &ns);
    // Everything the results need from the flows, then close their sockets
    // so nothing keeps the namespaces alive.
    let flow_outs = collect::flow_outs(&plan, &states);
    drop(states);
    flows.close_listeners();
    probes.close();
    let teardown_errors = topo.teardown();
    if interrupted {
        return Err(KernelError::Interrupted);
    }
    let ending = collect::Ending { prefix, setup_s, report, balancers: balancer_stats, netstat, flows: flow_outs, addr_notes, pcap_errors, pcap_packets, base: std::mem::take(&mut probes.base), end, teardown_errors };
    let results = std::mem::take(&mut probes.results);
    Ok(collect::kernel_run(&plan, results, ending, &probes.tracks, &stacks))
}

/// The address events (remove_addr / add_addr) at their times, on their
/// own thread; None when the scenario has none.
fn address_events(plan: &Plan, node_ns: &[String], stacks: &[Box<dyn HostStack>], clk: &Clock) -> Result<Option<JoinHandle<Vec<String>>>, KernelError> {
    let mut control: Vec<Option<ControlFn>> = vec![None; plan.net.nodes.len()];
    for s in stacks {
        if let Some(send) = s.control() {
            for (c, mine) in control.iter_mut().zip(s.nodes()) {
                if mine {
                    *c = Some(send);
                }
            }
        }
    }
    let events = AddrEvents::new(plan.net, node_ns, &control, &plan.mptcp);
    if events.is_empty() {
        return Ok(None);
    }
    let c = clk.clone();
    std::thread::Builder::new().name("addr-events".into()).spawn(move || events.run(c)).map(Some).map_err(|e| KernelError::Failed(e.to_string()))
}
