//! `mplab attack`: the adversarial matrix. Every row is one attack of
//! `mplab_scenario::attack` mounted by an `attacker` middlebox on one link
//! of a victim scenario, on each backend asked for: mplab's stack on the
//! simulator and on real packets (userspace backend), Linux's on the
//! kernel backend. A cell says what the victim did, measured the same way
//! everywhere (the attacker's count of replies on its forged four-tuples,
//! the transfer's completion and byte check, fallback), and whether that
//! is what RFC 8684 / RFC 7430 require.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mplab_scenario::attack::{AttackKind, Expect, Moment};
use mplab_scenario::Scenario;
use mplab_sim::{RunResults, Summary};
use serde::Serialize;

use crate::run::{self, RunError};

#[derive(Clone)]
pub struct Options {
    pub scenario: PathBuf,
    /// "sim", "kernel", "userspace".
    pub backends: Vec<String>,
    pub rows: Vec<AttackKind>,
    /// The link the attacker sits on.
    pub link: String,
    /// When it strikes (the attacker's `at`; default its own, 3 s).
    pub at: Option<String>,
    /// Scenario overrides (`--set`) applied before the attacker is added.
    pub sets: Vec<(String, String)>,
    pub out: PathBuf,
    pub quiet: bool,
    /// Points of `--product` run at once.
    pub jobs: usize,
}

/// One backend's result for one attack.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub backend: String,
    /// What the victim did, in words.
    pub outcome: String,
    /// "ok": as the RFCs require; "WEAKER": not; "TCP's limit": as strong
    /// as TCP, no stronger, where RFC 8684 5 says so (the row's condition,
    /// [`AttackKind::tcp_limit`]); "not mounted": the attack
    /// could not be mounted (nothing to replay, no token seen), with why;
    /// "n/a": the run gave no attacker report.
    pub verdict: &'static str,
    pub completed: bool,
    pub verified: bool,
    pub fallback: bool,
    pub completion_s: Option<f64>,
    pub baseline_s: Option<f64>,
    pub forged: u64,
    pub touched: u64,
    pub syn_acks: u64,
    pub resets: u64,
    /// The verdict rests on time alone: the victim's bytes were all the
    /// sender's and what the row expects happened, but the transfer was
    /// slowed or did not complete in time. On real packets such a cell is
    /// judged again on an idle host (`recheck_alone`).
    #[serde(default)]
    pub timing: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub attack: &'static str,
    pub position: &'static str,
    pub expect: &'static str,
    pub requirement: &'static str,
    pub cells: Vec<Cell>,
}

/// Rows the DSS checksum must be on for (what they test is the checksum).
fn extra_sets(k: AttackKind) -> Vec<(String, String)> {
    match k {
        AttackKind::DssBadChecksum | AttackKind::PayloadRewrite => vec![("transport.mptcp.checksum".into(), "true".into())],
        _ => Vec::new(),
    }
}

fn run_on(opt: &Options, backend: &str, attack: Option<AttackKind>, dir: &Path) -> Result<Summary, String> {
    let mut sc = Scenario::from_file(&opt.scenario).map_err(|e| e.to_string())?;
    sc.set_all(opt.sets.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| e.to_string())?;
    if let Some(k) = attack {
        let at = match &opt.at {
            Some(t) => strike_fields(t)?,
            None => String::new(),
        };
        // The attacker joins the victim's own boxes (a firewall that
        // strips options stays in place).
        let n = sc.spec().middleboxes.len();
        let attacker = format!("{{ kind = \"attacker\", link = {:?}, attack = {:?}{at} }}", opt.link, k.name());
        let mut sets = vec![if n == 0 { ("middleboxes".to_string(), format!("[{attacker}]")) } else { (format!("middleboxes.{n}"), attacker) }];
        sets.extend(extra_sets(k));
        sc.set_all(sets.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| e.to_string())?;
    }
    let net = mplab_backend::plugins::resolve(&sc).map_err(|e| e.to_string())?;
    let r = match backend {
        "sim" => run::simulate(&sc, net, dir, false, None),
        "kernel" | "userspace" => real_unless_stalled(backend, &sc, &net, dir),
        b => return Err(format!("unknown backend {b:?} (sim, kernel, userspace)")),
    };
    r.map(|(r, _)| r.summary).map_err(|e| match e {
        RunError::Usage(m) | RunError::Failed(m) => m,
    })
}

/// The attacker's fields for a strike given as `--at`: a time from the
/// run's start (`3s`), a protocol moment as the attacker first sees it on
/// its link (`mp-join`), or a delay after one (`mp-join+50ms`).
pub fn strike_fields(at: &str) -> Result<String, String> {
    let (moment, delay) = match at.split_once('+') {
        Some((m, d)) => (Some(m), Some(d)),
        None if at.starts_with(|c: char| c.is_ascii_alphabetic()) => (Some(at), None),
        None => (None, Some(at)),
    };
    let mut fields = String::new();
    if let Some(m) = moment {
        let m = Moment::from_name(m.trim()).ok_or_else(|| format!("--at {at:?}: unknown moment {m:?} ({})", Moment::names()))?;
        fields += &format!(", after = {:?}", m.name());
    }
    if let Some(d) = delay {
        fields += &format!(", at = {:?}", d.trim());
    }
    Ok(fields)
}

/// A real-time run, repeated while the host stalls it
/// (`mplab_emu::kernel::unless_host_stalled`): some verdicts compare the
/// run's time with the baseline's, and a run the virtual machine stopped
/// for a while would read as "slowed" by the attack.
fn real_unless_stalled(backend: &str, sc: &Scenario, net: &mplab_scenario::Network, dir: &Path) -> Result<(RunResults, serde_json::Value), RunError> {
    mplab_emu::kernel::unless_host_stalled(|_| run::run_real(backend, sc, net.clone(), dir), |r| &r.1)
}

/// The flows a verdict is about: the victim's MPTCP flows (an upload and
/// a download at once are two), or its first flow.
fn victims(s: &Summary) -> Vec<&mplab_sim::results::FlowSummary> {
    let v: Vec<_> = s.flows.iter().filter(|f| f.transport == "mptcp").collect();
    if v.is_empty() {
        s.flows.first().into_iter().collect()
    } else {
        v
    }
}

/// The verdict of one run against the row's expectation: each victim
/// flow judged against its own baseline time, the worst of them kept
/// (named by its flow when there are several).
fn judge(k: AttackKind, backend: &str, s: &Summary, baselines: &[Baseline]) -> Cell {
    let flows = victims(s);
    if flows.len() <= 1 {
        return judge_flow(k, backend, s, flows.first().copied(), baselines.first().copied());
    }
    let rank = |v: &str| match v {
        "WEAKER" => 3,
        TCPS_LIMIT => 2,
        "ok" => 1,
        _ => 0,
    };
    let cells = flows.iter().enumerate().map(|(i, f)| (f.name.clone(), judge_flow(k, backend, s, Some(f), baselines.get(i).copied())));
    let (name, mut worst) = cells.max_by_key(|(_, c)| rank(c.verdict)).expect("two flows or more");
    if rank(worst.verdict) > 0 {
        worst.outcome = format!("{name}: {}", worst.outcome);
    }
    worst
}

/// What a victim flow did without the attacker: its completion time,
/// and whether it fell back to TCP all the same (a path that strips
/// MPTCP's option): only a fallback the attack caused counts against it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Baseline {
    pub time_s: Option<f64>,
    pub fell_back: bool,
}

/// The verdict for one victim flow `f` of the run.
fn judge_flow(k: AttackKind, backend: &str, s: &Summary, f: Option<&mplab_sim::results::FlowSummary>, base: Option<Baseline>) -> Cell {
    let baseline = base.and_then(|b| b.time_s);
    let fell_back_anyway = base.is_some_and(|b| b.fell_back);
    let a = s.attacks.first().map(|a| &a.report);
    let (completed, verified, fallback, ct) = f.map_or((false, false, false, None), |f| (f.completed, f.verified, f.fallback, f.completion_time_s));
    let mut c = Cell {
        backend: backend.into(),
        outcome: String::new(),
        verdict: "ok",
        completed,
        verified,
        fallback,
        completion_s: ct,
        baseline_s: baseline,
        forged: a.map_or(0, |a| a.forged),
        touched: a.map_or(0, |a| a.touched),
        syn_acks: a.map_or(0, |a| a.syn_acks),
        resets: a.map_or(0, |a| a.resets),
        timing: false,
    };
    let Some(a) = a else {
        c.outcome = "no attacker report".into();
        c.verdict = "n/a";
        return c;
    };
    if a.struck_ns.is_none() {
        c.outcome = a.note.clone().unwrap_or_else(|| "the strike time never came".into());
        c.verdict = "not mounted";
        return c;
    }
    let fake = mplab_backend::attack::FAKE_ADDR.to_string();
    let to_fake = a.syns_to_fake_addr > 0 || f.is_some_and(|f| f.subflows.iter().any(|x| x.remote.starts_with(&fake) || x.local.starts_with(&fake)));
    let slowed = match (ct, baseline) {
        (Some(t), Some(b)) => t > b * 1.1 + 0.3,
        _ => false,
    };
    let time = ct.map_or("never completed".to_string(), |t| format!("done in {t:.2} s"));
    let delivered = f.map_or(0, |f| f.bytes_delivered);
    // Not verified with bytes delivered: some were not the sender's, or not
    // where it put them; with none, the connection ended before any.
    let changed = !verified && delivered > 0;
    // Nothing to judge completion against: the victim did not complete
    // without the attacker either (on real packets, a host too loaded to
    // carry the transfer in time, such as many product points at once on
    // a small machine). Changed bytes are judged all the same.
    if base.is_some_and(|b| b.time_s.is_none()) && !completed && !changed {
        c.outcome = format!("{}; the transfer did not complete without the attacker either: nothing to judge against", ct.map_or("never completed".to_string(), |t| format!("done in {t:.2} s")));
        c.verdict = "n/a";
        return c;
    }
    let mut what = Vec::new();
    if changed {
        what.push("CHANGED OR MISPLACED BYTES DELIVERED".to_string());
    } else if delivered == 0 {
        what.push("nothing delivered".to_string());
    }
    if !completed {
        what.push("transfer not completed".to_string());
    }
    if fallback {
        what.push(if fell_back_anyway { "fell back to TCP, as without the attacker" } else { "fell back to TCP" }.to_string());
    }
    if to_fake {
        what.push(format!("opened a subflow to the forged address ({} SYNs)", a.syns_to_fake_addr));
    }
    if a.syn_acks + a.resets + a.acks > 0 {
        what.push(format!("replies to forgeries: {} SYN/ACK, {} RST, {} other", a.syn_acks, a.resets, a.acks));
    }
    if slowed {
        what.push("slowed".to_string());
    }
    what.push(time);
    c.outcome = what.join("; ");
    // Plain TCP from the start: the attacker on its path is an attacker
    // against TCP (RFC 8684 5).
    let plain_tcp = fallback && fell_back_anyway;
    let fallback = fallback && !fell_back_anyway;
    let as_expected = match k.expect() {
        Expect::Refused => verified && a.resets > 0 && !fallback,
        Expect::Ignored => verified && !fallback && !to_fake,
        Expect::Survives => verified,
    };
    let in_time = completed && !(slowed && k.expect() == Expect::Ignored);
    let ok = as_expected && in_time;
    c.timing = as_expected && !in_time;
    c.verdict = if ok {
        "ok"
    } else if plain_tcp && k.position() == mplab_scenario::attack::Position::OnPath {
        c.outcome = format!("{}; plain TCP: the connection fell back without the attacker (RFC 8684 3.7), and what an on-path attacker does to TCP is TCP's to miss (RFC 8684 5)", c.outcome);
        TCPS_LIMIT
    } else if tcps_limit(k, f, changed, fallback) {
        c.outcome = format!("{}; the only subflow: {}", c.outcome, k.tcp_limit().unwrap_or_default());
        TCPS_LIMIT
    } else {
        "WEAKER"
    };
    c
}

/// The verdict of a cell where RFC 8684 5 leaves MPTCP as strong as TCP
/// and no stronger: the row's [`AttackKind::tcp_limit`] condition held.
pub const TCPS_LIMIT: &str = "TCP's limit";

/// Whether a cell that is not ok is TCP's limit: the attack hit the
/// connection's only subflow (no join had been made: RFC 8684 5, an
/// on-path attacker against one subflow is an attacker against TCP), and
/// what followed is what TCP allows: a reset or rebound subflow ends the
/// connection with no changed byte delivered; a rewritten payload makes
/// the only subflow fall back (RFC 8684 3.7) and the rewrites after it
/// reach the application as they would over TCP.
fn tcps_limit(k: AttackKind, f: Option<&mplab_sim::results::FlowSummary>, changed: bool, fallback: bool) -> bool {
    let Some(f) = f else { return false };
    // Joins opened but refused or never used carry nothing.
    let only_subflow = f.subflows.iter().filter(|s| s.bytes_sent > 0).count() <= 1;
    match k {
        AttackKind::RstOnPath | AttackKind::NatRebinding => only_subflow && !changed,
        AttackKind::PayloadRewrite => only_subflow && fallback,
        _ => false,
    }
}

/// Runs the matrix: a baseline per backend, then every row on every backend.
pub fn matrix(opt: &Options) -> Result<Vec<Row>, String> {
    let mut baselines = Vec::new();
    for b in &opt.backends {
        if !opt.quiet {
            eprintln!("attack: baseline on {b} ...");
        }
        let s = run_on(opt, b, None, &opt.out.join("baseline").join(b));
        if let Err(e) = &s {
            if is_interrupted(e) {
                return Err(e.clone());
            }
        }
        baselines.push(s.map_or(Vec::new(), |s| victims(&s).iter().map(|f| Baseline { time_s: f.completion_time_s, fell_back: f.fallback }).collect::<Vec<_>>()));
    }
    let mut rows = Vec::new();
    for &k in &opt.rows {
        let mut cells = Vec::new();
        for (b, base) in opt.backends.iter().zip(&baselines) {
            if !opt.quiet {
                eprintln!("attack: {} on {b} ...", k.name());
            }
            let cell = match run_on(opt, b, Some(k), &opt.out.join(k.name()).join(b)) {
                Ok(s) => judge(k, b, &s, base),
                Err(e) if is_interrupted(&e) => return Err(e),
                Err(e) => Cell {
                    backend: b.clone(),
                    outcome: format!("run failed: {e}"),
                    verdict: "n/a",
                    completed: false,
                    verified: false,
                    fallback: false,
                    completion_s: None,
                    baseline_s: base.first().and_then(|b| b.time_s),
                    forged: 0,
                    touched: 0,
                    syn_acks: 0,
                    resets: 0,
                    timing: false,
                },
            };
            cells.push(cell);
        }
        rows.push(Row { attack: k.name(), position: k.position().name(), expect: k.expect().name(), requirement: k.requirement(), cells });
    }
    Ok(rows)
}

/// A run stopped by Ctrl-C (or its namespaces removed under it) says
/// nothing of the victim: the matrix stops instead of recording a cell, so
/// that a resumed product runs the point again.
fn is_interrupted(e: &str) -> bool {
    e.starts_with("interrupted")
}

/// The table, as Markdown (it goes into docs/ as printed).
pub fn render(rows: &[Row]) -> String {
    let mut s = String::new();
    let backends: Vec<&str> = rows.first().map(|r| r.cells.iter().map(|c| c.backend.as_str()).collect()).unwrap_or_default();
    let _ = write!(s, "| attack | attacker | RFC 8684 / 7430 require | expect |");
    for b in &backends {
        let _ = write!(s, " {b} |");
    }
    let _ = writeln!(s);
    let _ = write!(s, "|---|---|---|---|");
    for _ in &backends {
        let _ = write!(s, "---|");
    }
    let _ = writeln!(s);
    for r in rows {
        let _ = write!(s, "| {} | {} | {} | {} |", r.attack, r.position, r.requirement, r.expect);
        for c in &r.cells {
            let _ = write!(s, " **{}**: {} |", c.verdict, c.outcome);
        }
        let _ = writeln!(s);
    }
    s
}

pub fn write(rows: &[Row], out: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let mut csv = String::from("attack,position,expect,backend,verdict,completed,verified,fallback,completion_s,baseline_s,forged,touched,syn_acks,resets,outcome\n");
    for r in rows {
        for c in &r.cells {
            let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"",
                r.attack,
                r.position,
                r.expect,
                c.backend,
                c.verdict,
                c.completed,
                c.verified,
                c.fallback,
                opt(c.completion_s),
                opt(c.baseline_s),
                c.forged,
                c.touched,
                c.syn_acks,
                c.resets,
                c.outcome.replace('"', "'")
            );
        }
    }
    std::fs::write(out.join("attack.csv"), csv)?;
    std::fs::write(out.join("attack.json"), serde_json::to_string_pretty(rows).unwrap_or_default())?;
    std::fs::write(out.join("attack.md"), render(rows))
}

/// Cells where mplab's own stack (simulator, userspace backend) does less
/// than the RFCs require: the command fails on them. Linux's are reported.
pub fn mplab_weaknesses(rows: &[Row]) -> usize {
    rows.iter().flat_map(|r| &r.cells).filter(|c| c.verdict == "WEAKER" && c.backend != "kernel").count()
}

/// Parses `--rows` (comma-separated names; empty: all).
pub fn parse_rows(s: Option<&str>) -> Result<Vec<AttackKind>, String> {
    match s {
        None | Some("") | Some("all") => Ok(AttackKind::ALL.to_vec()),
        Some(list) => list
            .split(',')
            .map(|n| AttackKind::from_name(n.trim()).ok_or_else(|| format!("unknown attack {n:?} ({})", AttackKind::names())))
            .collect(),
    }
}

/// When the attacker strikes in `--product`, by default: at protocol
/// moments as the attacker sees them on its link (10 ms after the
/// MP_CAPABLE SYN, within the handshake's first round trip, once the
/// client's side is established; as the first MP_JOIN SYN crosses; right
/// after the first ADD_ADDR; at the first DATA_FIN), and at clock times:
/// once the joins are up, mid-transfer, and near the end of a transfer of
/// the bundled victims' length (6.8 s unattacked).
pub const STRIKES: &[&str] = &["mp-capable+10ms", "mp-join", "add-addr", "300ms", "3s", "6.5s", "data-fin"];

/// One cell of the product: where the attacker sat, when it struck,
/// whether DSS checksums were on, and the row's cell.
#[derive(Debug, Clone, Serialize)]
pub struct ProductCell {
    pub link: String,
    pub checksum: bool,
    pub at: String,
    pub attack: &'static str,
    #[serde(flatten)]
    pub cell: Cell,
}

/// The matrix over every link of the victim, DSS checksums off and on,
/// and each strike: a matrix per point, the cells collected in the
/// points' order. Points run on `base.jobs` threads (every run is
/// independent: a real-packet run has namespaces of its own), and a point whose
/// directory holds the matrix of a run with the same options is read
/// back instead of run again: an interrupted product resumes where it
/// stopped.
pub fn product(base: &Options, strikes: &[String]) -> Result<Vec<ProductCell>, String> {
    let sc = Scenario::from_file(&base.scenario).map_err(|e| e.to_string())?;
    let net = mplab_backend::plugins::resolve(&sc).map_err(|e| e.to_string())?;
    let mut points = Vec::new();
    for link in net.links.iter().map(|l| l.name.clone()) {
        for checksum in [false, true] {
            for at in strikes {
                let mut opt = base.clone();
                opt.link = link.clone();
                opt.at = Some(at.clone());
                opt.sets.push(("transport.mptcp.checksum".into(), checksum.to_string()));
                opt.out = base.out.join(format!("{link}-checksum-{}-at-{at}", if checksum { "on" } else { "off" }));
                opt.quiet = true;
                points.push((checksum, opt));
            }
        }
    }
    let threads = base.jobs.clamp(1, points.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<Vec<Row>, String>>>> = std::sync::Mutex::new(vec![None; points.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((checksum, opt)) = points.get(i) else { break };
                let key = point_key(opt);
                let r = match read_point(&opt.out, &key) {
                    Some(rows) => Ok(rows),
                    None => {
                        if !base.quiet {
                            eprintln!("attack: {}, checksums {}, at {} ...", opt.link, if *checksum { "on" } else { "off" }, opt.at.as_deref().unwrap_or(""));
                        }
                        matrix(opt).and_then(|rows| {
                            write(&rows, &opt.out).and_then(|_| std::fs::write(opt.out.join("point.json"), &key)).map_err(|e| format!("{}: {e}", opt.out.display()))?;
                            Ok(rows)
                        })
                    }
                };
                if let Ok(mut v) = results.lock() {
                    v[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().map_err(|_| "a product worker panicked".to_string())?;
    let mut out = Vec::new();
    for ((checksum, opt), r) in points.iter().zip(results) {
        let mut rows = r.unwrap_or_else(|| Err("not run".into()))?;
        if threads > 1 && recheck_alone(opt, &mut rows, threads, base.quiet)? {
            write(&rows, &opt.out).map_err(|e| format!("{}: {e}", opt.out.display()))?;
        }
        for r in rows {
            for c in r.cells {
                out.push(ProductCell { link: opt.link.clone(), checksum: *checksum, at: opt.at.clone().unwrap_or_default(), attack: r.attack, cell: c });
            }
        }
    }
    Ok(out)
}

/// What a cell judged again on an idle host starts with.
const ALONE: &str = "alone: ";

/// Judges again, one run at a time, the real-packet cells of a point whose
/// verdict rests on time alone (`Cell::timing`): with several points at
/// once on a small host, the user-space stack and the link emulator share
/// its cores with other runs, and a transfer can be slowed by the host
/// rather than by the attacker. The row is run again with its own
/// baseline and nothing else running; its cell replaces the first, which
/// the outcome keeps. A changed byte is never judged again. Returns
/// whether a cell was replaced.
fn recheck_alone(opt: &Options, rows: &mut [Row], threads: usize, quiet: bool) -> Result<bool, String> {
    let mut replaced = false;
    for r in rows.iter_mut() {
        for c in r.cells.iter_mut().filter(|c| c.verdict == "WEAKER" && c.timing && c.backend != "sim" && !c.outcome.starts_with(ALONE)) {
            let Some(k) = AttackKind::from_name(r.attack) else { continue };
            let mut one = opt.clone();
            one.rows = vec![k];
            one.backends = vec![c.backend.clone()];
            one.out = opt.out.join("alone").join(k.name());
            if !quiet {
                eprintln!("attack: {} on {} at {} {} again, alone (slowed at {threads} points at once) ...", k.name(), c.backend, opt.link, opt.at.as_deref().unwrap_or(""));
            }
            let again = matrix(&one)?.into_iter().next().and_then(|r| r.cells.into_iter().next()).ok_or("no cell from a recheck")?;
            let first = std::mem::replace(c, again);
            c.outcome = format!("{ALONE}{}; at {threads} points at once it was {}: {}", c.outcome, first.verdict, first.outcome);
            replaced = true;
        }
    }
    Ok(replaced)
}

/// What makes a product point's matrix the same as an earlier one's: the
/// victim file and its bytes, the backends, rows, attacker link, strike
/// and overrides.
fn point_key(opt: &Options) -> String {
    let text = std::fs::read_to_string(&opt.scenario).unwrap_or_default();
    serde_json::json!({
        "scenario": opt.scenario.display().to_string(),
        "scenario_text": text,
        "backends": opt.backends,
        "rows": opt.rows.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "link": opt.link,
        "at": opt.at,
        "sets": opt.sets,
    })
    .to_string()
}

/// The matrix an earlier run of the same point left in `dir`, if its
/// options were these.
fn read_point(dir: &Path, key: &str) -> Option<Vec<Row>> {
    if std::fs::read_to_string(dir.join("point.json")).ok()? != key {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("attack.json")).ok()?).ok()?;
    v.as_array()?.iter().map(row_from_json).collect()
}

fn row_from_json(r: &serde_json::Value) -> Option<Row> {
    let k = AttackKind::from_name(r["attack"].as_str()?)?;
    let cells = r["cells"].as_array()?.iter().map(cell_from_json).collect::<Option<Vec<_>>>()?;
    Some(Row { attack: k.name(), position: k.position().name(), expect: k.expect().name(), requirement: k.requirement(), cells })
}

fn cell_from_json(c: &serde_json::Value) -> Option<Cell> {
    let verdict = ["ok", "WEAKER", TCPS_LIMIT, "not mounted", "n/a"].into_iter().find(|v| Some(*v) == c["verdict"].as_str())?;
    let n = |f: &str| c[f].as_u64().unwrap_or(0);
    Some(Cell {
        backend: c["backend"].as_str()?.to_string(),
        outcome: c["outcome"].as_str()?.to_string(),
        verdict,
        completed: c["completed"].as_bool()?,
        verified: c["verified"].as_bool()?,
        fallback: c["fallback"].as_bool()?,
        completion_s: c["completion_s"].as_f64(),
        baseline_s: c["baseline_s"].as_f64(),
        forged: n("forged"),
        touched: n("touched"),
        syn_acks: n("syn_acks"),
        resets: n("resets"),
        timing: c["timing"].as_bool().unwrap_or(false),
    })
}

/// The product's summary: cells per verdict, in all and along each
/// dimension, and every cell that is not ok or not mounted.
pub fn render_product(cells: &[ProductCell]) -> String {
    let verdicts = ["ok", "WEAKER", TCPS_LIMIT, "not mounted", "n/a"];
    let mut s = String::new();
    let _ = writeln!(s, "| dimension | value | {} |", verdicts.join(" | "));
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(verdicts.len()));
    let mut line = |dim: &str, value: &str, keep: &dyn Fn(&ProductCell) -> bool| {
        let counts: Vec<String> = verdicts.iter().map(|v| cells.iter().filter(|c| keep(c) && c.cell.verdict == *v).count().to_string()).collect();
        let _ = writeln!(s, "| {dim} | {value} | {} |", counts.join(" | "));
    };
    line("all", &format!("{} cells", cells.len()), &|_| true);
    let mut seen = Vec::new();
    for c in cells {
        if !seen.contains(&c.link) {
            seen.push(c.link.clone());
        }
    }
    for l in &seen {
        line("link", l, &|c| &c.link == l);
    }
    for on in [false, true] {
        line("checksums", if on { "on" } else { "off" }, &|c| c.checksum == on);
    }
    let mut ats: Vec<&String> = Vec::new();
    for c in cells {
        if !ats.contains(&&c.at) {
            ats.push(&c.at);
        }
    }
    for a in ats {
        line("strike", a, &|c| &c.at == a);
    }
    let odd: Vec<&ProductCell> = cells.iter().filter(|c| !matches!(c.cell.verdict, "ok" | "not mounted")).collect();
    if !odd.is_empty() {
        let _ = writeln!(s, "\n| link | checksums | strike | attack | backend | verdict | outcome |\n|---|---|---|---|---|---|---|");
        for c in odd {
            let _ = writeln!(s, "| {} | {} | {} | {} | {} | **{}** | {} |", c.link, if c.checksum { "on" } else { "off" }, c.at, c.attack, c.cell.backend, c.cell.verdict, c.cell.outcome);
        }
    }
    s
}

/// Writes product.csv, product.json and product.md into `out`.
pub fn write_product(cells: &[ProductCell], out: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let mut csv = String::from("link,checksum,at,attack,backend,verdict,completed,verified,completion_s,baseline_s,forged,outcome\n");
    for c in cells {
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
        let _ = writeln!(csv, "{},{},{},{},{},{},{},{},{},{},{},\"{}\"", c.link, c.checksum, c.at, c.attack, c.cell.backend, c.cell.verdict, c.cell.completed, c.cell.verified, opt(c.cell.completion_s), opt(c.cell.baseline_s), c.cell.forged, c.cell.outcome.replace('"', "'"));
    }
    std::fs::write(out.join("product.csv"), csv)?;
    std::fs::write(out.join("product.json"), serde_json::to_string_pretty(cells).unwrap_or_default())?;
    std::fs::write(out.join("product.md"), render_product(cells))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_backend::attack::AttackReport;
    use mplab_backend::results::{AttackSummary, FlowSummary};

    fn run(completed: bool, verified: bool) -> Summary {
        let flow = FlowSummary { name: "dl".into(), transport: "mptcp".into(), completed, verified, bytes_delivered: 1000, completion_time_s: completed.then_some(7.0), ..Default::default() };
        let report = AttackReport { struck_ns: Some(3_000_000_000), forged: 1, ..Default::default() };
        Summary { flows: vec![flow], attacks: vec![AttackSummary { link: "wan1".into(), attack: "rst-off-path".into(), report }], ..Default::default() }
    }

    /// A victim that did not complete without the attacker cannot be
    /// judged on completion ("n/a", saying why); one that did is, and a
    /// changed byte is WEAKER whatever the baseline did.
    #[test]
    fn an_incomplete_baseline_leaves_completion_unjudged() {
        let k = AttackKind::RstOffPath;
        let never = Baseline { time_s: None, fell_back: false };
        let done = Baseline { time_s: Some(6.8), fell_back: false };
        let c = judge(k, "userspace", &run(false, true), &[never]);
        assert_eq!(c.verdict, "n/a", "{}", c.outcome);
        assert!(c.outcome.contains("did not complete without the attacker"), "{}", c.outcome);
        assert_eq!(judge(k, "userspace", &run(false, true), &[done]).verdict, "WEAKER");
        assert_eq!(judge(k, "userspace", &run(false, false), &[never]).verdict, "WEAKER");
        assert_eq!(judge(k, "userspace", &run(true, true), &[done]).verdict, "ok");
    }

    /// A cell slowed with every byte the sender's rests on time alone (a
    /// product judges it again on an idle host); one with a changed byte,
    /// or slowed as well as changed, does not.
    #[test]
    fn only_a_slowed_intact_transfer_rests_on_time() {
        let k = AttackKind::RemoveAddrOffPath;
        let done = Baseline { time_s: Some(6.8), fell_back: false };
        let mut slow = run(true, true);
        slow.flows[0].completion_time_s = Some(9.0);
        let c = judge(k, "userspace", &slow, &[done]);
        assert_eq!((c.verdict, c.timing), ("WEAKER", true), "{}", c.outcome);
        let mut late = run(false, true);
        late.flows[0].completion_time_s = None;
        assert_eq!(judge(k, "userspace", &late, &[done]).timing, true);
        slow.flows[0].verified = false;
        let c = judge(k, "userspace", &slow, &[done]);
        assert_eq!((c.verdict, c.timing), ("WEAKER", false), "{}", c.outcome);
        assert!(!judge(k, "userspace", &run(true, true), &[done]).timing);
    }
}
