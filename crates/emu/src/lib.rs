//! # mplab-emu: the kernel backend
//!
//! Runs a resolved scenario (`mplab_scenario::Network`) on the Linux
//! kernel's TCP and MPTCP: one network namespace per node, veth pairs per
//! link whose far ends meet in a "wire" namespace where mplab's own link
//! emulator (the simulator's link model on a real clock) bridges them,
//! kernel MPTCP configured from the scenario, applications on real sockets,
//! probes, and results in the simulator's format. See docs/kernel-backend.md.
//!
//! ```no_run
//! use mplab_scenario::Scenario;
//! let sc = Scenario::from_file("scenarios/two-paths.toml")?;
//! let net = mplab_backend::plugins::resolve(&sc)?;
//! let errors = mplab_emu::kconf::unsupported(&sc, &net);
//! assert!(errors.is_empty(), "{errors:?}");
//! let run = mplab_emu::kernel::run(&net, &mplab_emu::kernel::KernelOptions::default())?;
//! println!("{:.1} Mbit/s", run.results.summary.flows[0].goodput_bps / 1e6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod addr_events;
pub mod apps;
pub mod balancer;
pub mod converter;
pub mod datagrams;
pub mod gateway;
pub mod emulator;
pub mod endpoint_flow;
pub mod frame;
pub mod kconf;
pub mod kernel;
pub mod mptcp_netlink;
pub mod nfqueue;
pub mod probes;
pub mod run;
pub mod signal;
pub mod sys;
pub mod topo;
pub mod userspace;
pub mod usrsctp;
