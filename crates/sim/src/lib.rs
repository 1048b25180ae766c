//! # mplab-sim
//!
//! A deterministic packet-level discrete-event simulator: virtual time in
//! nanoseconds, one event queue with deterministic tie-breaking, seeded
//! random streams per element, links with serialisation, propagation delay,
//! jitter, loss and queues, hosts and routers with static, policy and ECMP
//! routing, and the sans-IO transport of crates/proto on the hosts.
//!
//! ```no_run
//! use mplab_scenario::Scenario;
//! // Resolved, with its plug-in tables (queues) checked: an error names the line.
//! let net = mplab_backend::plugins::resolve(&Scenario::from_file("scenarios/tcp-single.toml")?)?;
//! let end = mplab_proto::Instant(net.duration_ns);
//! let mut world = mplab_sim::World::new(net, None)?;
//! world.run_until(end);
//! let results = world.finish("sim");
//! println!("{:.1} Mbit/s", results.summary.flows[0].goodput_bps / 1e6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod capture;
pub use mplab_backend::transport::endpoint;
pub mod event;
pub mod hugepages;
pub mod middlebox;
pub mod packet;
// The pieces every backend shares live in crates/backend; the simulator
// reaches them under its own paths too.
pub use mplab_backend::{apps, config, link, results, rng, summary};
pub mod transport;
pub mod world;

pub use results::{RunResults, Summary};
pub use middlebox::unsupported_middleboxes;
pub use transport::{unsupported, Unsupported};
pub use world::{RunStats, World};

/// Runs `net` to its end on the simulator (no captures): the one call
/// behind `mplab run`'s simulator backend, the tests and the benchmarks.
/// Err: a setting the simulator refuses (see [`unsupported`]).
pub fn simulate(net: mplab_scenario::Network) -> std::io::Result<RunResults> {
    let end = mplab_proto::Instant(net.duration_ns);
    let mut w = World::new(net, None)?;
    w.run_until(end);
    Ok(w.finish("sim"))
}
