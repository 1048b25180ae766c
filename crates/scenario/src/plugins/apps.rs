//! Applications (`app = ...` of a flow): what runs on the two ends of a
//! connection. The state machines live in crates/backend (`apps`), shared
//! by every backend; this registry checks a flow's fields.

use super::{only_its_fields, About, OnKernel};
use crate::error::{diag, Diag};
use crate::network::App;
use crate::schema::FlowSpec;
use crate::units::Size;

/// One application kind.
pub struct AppEntry {
    pub about: About,
    /// Checks the flow's fields and builds the validated application.
    pub(crate) resolve: fn(&FlowSpec, &str) -> Result<App, Diag>,
}

/// The same program on every backend: mplab's application over a kernel
/// socket, or over mplab's stack.
const EVERYWHERE: OnKernel = OnKernel::Runs("mplab's application over a kernel TCP/MPTCP socket");

/// The applications by name; one line each.
pub const REGISTRY: &[AppEntry] = &[
    AppEntry { about: About { name: "bulk", params: &["bytes"], what: "send as fast as the transport allows, `bytes` or until `stop` (iperf)", kernel: EVERYWHERE }, resolve: bulk },
    AppEntry { about: About { name: "rate", params: &["bytes", "rate"], what: "send at `rate` at the application level (iperf3 -b)", kernel: EVERYWHERE }, resolve: rate },
    AppEntry { about: About { name: "download", params: &["bytes"], what: "`to` sends `bytes` back to `from`; the result is the completion time (wget)", kernel: EVERYWHERE }, resolve: download },
    AppEntry {
        about: About { name: "request", params: &["request_size", "response_size", "count", "interval"], what: "`count` request/response exchanges, one every `interval`; the results are their latencies", kernel: EVERYWHERE },
        resolve: request,
    },
];

/// The flow's application, with the fields that don't apply to it refused
/// so `rate = ...` on a bulk flow isn't silently ignored.
pub(crate) fn resolve(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let name = f.app.name();
    let e = REGISTRY.iter().find(|e| e.about.name == name).expect("every schema AppKind has a registry entry");
    let given = [
        ("bytes", f.bytes.is_some()),
        ("rate", f.rate.is_some()),
        ("request_size", f.request_size.is_some()),
        ("response_size", f.response_size.is_some()),
        ("count", f.count.is_some()),
        ("interval", f.interval.is_some()),
    ];
    only_its_fields(&e.about, &given, path, "app")?;
    if f.bytes.is_some_and(|b| b.bytes() == 0) {
        return diag(format!("{path}.bytes"), "must be greater than 0 (leave it out to send until stop)");
    }
    (e.resolve)(f, path)
}

/// A size the application needs, greater than 0.
fn need(f: &FlowSpec, v: Option<Size>, path: &str, field: &str) -> Result<u64, Diag> {
    match v {
        Some(s) if s.bytes() > 0 => Ok(s.bytes()),
        Some(_) => diag(format!("{path}.{field}"), "must be greater than 0"),
        None => diag(path, format!("app = {:?} needs `{field}`", f.app.name())),
    }
}

fn bulk(f: &FlowSpec, _: &str) -> Result<App, Diag> {
    Ok(App::Bulk { bytes: f.bytes.map(|b| b.bytes()) })
}

fn rate(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    let rate = f.rate.ok_or_else(|| Diag::new(path, "app = \"rate\" needs `rate`"))?;
    if rate.bps() == 0 {
        return diag(format!("{path}.rate"), "must be greater than 0");
    }
    Ok(App::Rate { rate_bps: rate.bps(), bytes: f.bytes.map(|b| b.bytes()) })
}

fn download(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    Ok(App::Download { bytes: need(f, f.bytes, path, "bytes")? })
}

fn request(f: &FlowSpec, path: &str) -> Result<App, Diag> {
    if f.count == Some(0) {
        return diag(format!("{path}.count"), "must be at least 1 (leave it out to repeat until stop)");
    }
    Ok(App::Request {
        request_bytes: need(f, f.request_size, path, "request_size")?,
        response_bytes: need(f, f.response_size, path, "response_size")?,
        count: f.count,
        interval_ns: f.interval.unwrap_or_default().as_nanos(),
    })
}
