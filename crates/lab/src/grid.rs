//! Sweep grids: parameter value lists and ranges, the cartesian product,
//! explicit points, and the statistics across seeds.
//!
//! A parameter is `PATH=VALUES`. `PATH` is a `--set` path
//! (docs/scenario.md), or several joined by `+` that all take the same
//! value (`transport.tcp.rcv_buf+transport.tcp.snd_buf=64KB,256KB`).
//! `VALUES` is a comma-separated list of items (commas inside `[...]`,
//! `{...}` or quotes do not split), and each item is either a value,
//! used verbatim as a `--set` value, or an inclusive range
//! `START..END` (step 1) or `START..END:STEP`, whose ends and step are
//! numbers sharing one unit: `1..6`, `10ms..100ms:30ms`,
//! `10Mbit..50Mbit:20Mbit`, `0.5..2:0.5`.

use std::fmt::Write as _;

/// One `--set` assignment of a point: (path, value).
pub type Point = Vec<(String, String)>;

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub path: String,
    pub values: Vec<String>,
}

/// Splits at commas that are not inside brackets, braces or quotes.
pub fn split_top(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut cur = String::new();
    for c in s.chars() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                cur.push(c);
            }
            None => match c {
                '"' | '\'' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '[' | '{' => {
                    depth += 1;
                    cur.push(c);
                }
                ']' | '}' => {
                    depth -= 1;
                    cur.push(c);
                }
                c if c == sep && depth == 0 => out.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            },
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// `"10ms"` → (10.0, "ms"); `"1e6"` → (1e6, ""); `"fast"` → None.
pub fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let b = s.as_bytes();
    let mut end = 0;
    while end < b.len() {
        let c = b[end] as char;
        let ok = c.is_ascii_digit()
            || c == '.'
            || ((c == '-' || c == '+') && (end == 0 || matches!(b[end - 1], b'e' | b'E')))
            || ((c == 'e' || c == 'E') && end > 0 && b[end - 1].is_ascii_digit() && b.get(end + 1).is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+'));
        if !ok {
            break;
        }
        end += 1;
    }
    let v: f64 = s[..end].parse().ok()?;
    Some((v, s[end..].trim()))
}

fn fmt_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 && v.abs() < 1e15 {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.9}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Expands one item: a range or a literal.
fn expand_item(item: &str) -> Result<Vec<String>, String> {
    if item.starts_with(['[', '{', '"', '\'']) {
        return Ok(vec![item.to_string()]);
    }
    let Some((a, rest)) = item.split_once("..") else {
        return Ok(vec![item.to_string()]);
    };
    let (b, step) = match rest.split_once(':') {
        Some((b, s)) => (b, Some(s)),
        None => (rest, None),
    };
    let bad = |what: &str| format!("range {item:?}: {what} (ranges are START..END or START..END:STEP, e.g. 1..6 or 10ms..100ms:30ms)");
    let (x0, u0) = split_number(a).ok_or_else(|| bad("the start is not a number"))?;
    let (x1, u1) = split_number(b).ok_or_else(|| bad("the end is not a number"))?;
    let (dx, us) = match step {
        Some(s) => split_number(s).ok_or_else(|| bad("the step is not a number"))?,
        None => (1.0, ""),
    };
    let unit = [u0, u1, us].into_iter().find(|u| !u.is_empty()).unwrap_or("");
    for u in [u0, u1, us] {
        if !u.is_empty() && u != unit {
            return Err(bad(&format!("units differ ({u0:?}, {u1:?}, {us:?})")));
        }
    }
    if dx <= 0.0 || !dx.is_finite() {
        return Err(bad("the step must be positive"));
    }
    if x1 < x0 {
        return Err(bad("the end is below the start"));
    }
    let n = ((x1 - x0) / dx + 1e-9).floor() as u64 + 1;
    if n > 10_000 {
        return Err(bad(&format!("{n} values is too many")));
    }
    Ok((0..n).map(|i| format!("{}{unit}", fmt_num(x0 + dx * i as f64))).collect())
}

/// Expands a value list: `"10Mbit,50Mbit"`, `"1..6"`, `"1..3,8,10..20:5"`.
pub fn parse_values(spec: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top(spec, ',') {
        if item.is_empty() {
            return Err(format!("{spec:?}: empty value in the list"));
        }
        out.extend(expand_item(&item)?);
    }
    Ok(out)
}

/// `PATH=VALUES` as given to `--param`.
pub fn parse_param(arg: &str) -> Result<Param, String> {
    let Some((path, values)) = arg.split_once('=') else {
        return Err(format!("--param {arg}: expected PATH=VALUES, like topology.rate=10Mbit,50Mbit or transport.mptcp.subflows=1..6"));
    };
    let path = path.trim();
    if path.is_empty() || path.split('+').any(|p| p.trim().is_empty()) {
        return Err(format!("--param {arg}: empty path"));
    }
    let values = parse_values(values).map_err(|e| format!("--param {arg}: {e}"))?;
    Ok(Param { path: path.to_string(), values })
}

/// `--point "a=1;b=2"`: one explicit point (assignments separated by `;`).
pub fn parse_point(arg: &str) -> Result<Point, String> {
    let mut p = Vec::new();
    for a in split_top(arg, ';') {
        if a.is_empty() {
            continue;
        }
        let Some((k, v)) = a.split_once('=') else {
            return Err(format!("point {arg:?}: {a:?} is not PATH=VALUE"));
        };
        p.push((k.trim().to_string(), v.trim().to_string()));
    }
    if p.is_empty() {
        return Err(format!("point {arg:?}: no PATH=VALUE in it"));
    }
    Ok(p)
}

/// A points file: one point per line as for `--point`; `#` starts a comment.
pub fn parse_points_file(text: &str) -> Result<Vec<Point>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        out.push(parse_point(l).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok(out)
}

/// The cartesian product, the first parameter varying slowest.
pub fn grid(params: &[Param]) -> Vec<Point> {
    let mut out: Vec<Point> = vec![Vec::new()];
    for p in params {
        let mut next = Vec::with_capacity(out.len() * p.values.len());
        for base in &out {
            for v in &p.values {
                let mut q = base.clone();
                q.push((p.path.clone(), v.clone()));
                next.push(q);
            }
        }
        out = next;
    }
    if params.is_empty() {
        Vec::new()
    } else {
        out
    }
}

/// The `--set` assignments of a point (`a+b=v` sets both).
pub fn point_sets(p: &Point) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in p {
        for path in k.split('+') {
            out.push((path.trim().to_string(), v.clone()));
        }
    }
    out
}

/// `a=1; b=2` for messages and tables.
pub fn point_label(p: &Point) -> String {
    p.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
}

/// A directory name for a point: readable, filesystem-safe, and unique
/// (an FNV-1a hash of the exact assignments), so that a grown grid reuses
/// the runs it already has.
pub fn point_id(p: &Point) -> String {
    let label = point_label(p);
    let mut h: u32 = 0x811c9dc5;
    for b in label.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x01000193);
    }
    let mut slug = String::new();
    for (k, v) in p {
        let short = k.split('+').next().unwrap_or(k).rsplit('.').next().unwrap_or(k);
        let _ = write!(slug, "{}{short}={v}", if slug.is_empty() { "" } else { "_" });
    }
    let slug: String = slug.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | '-' | '_') { c } else { '_' }).take(80).collect();
    format!("{slug}-{h:08x}")
}

/// Seeds: `5` → 1..=5; `3,7,9` or `1..4` → those.
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        if n == 0 {
            return Err("--seeds 0: at least one seed".into());
        }
        return Ok((1..=n).collect());
    }
    let vals = parse_values(s).map_err(|e| format!("--seeds {s}: {e}"))?;
    vals.iter().map(|v| v.parse::<u64>().map_err(|_| format!("--seeds {s}: {v:?} is not a seed (a whole number)"))).collect()
}

/// Mean, sample standard deviation and the half-width of the 95 %
/// confidence interval of the mean (Student's t), for n ≥ 1 samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub mean: f64,
    pub stdev: f64,
    pub ci95: f64,
}

/// t quantile 0.975 for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
    2.048, 2.045, 2.042,
];

pub fn t975(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T975[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

pub fn stats(xs: &[f64]) -> Option<Stats> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(Stats { n, mean, stdev: 0.0, ci95: 0.0 });
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let stdev = var.sqrt();
    Some(Stats { n, mean, stdev, ci95: t975(n - 1) * stdev / (n as f64).sqrt() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_values("10Mbit,50Mbit, 100Mbit").unwrap(), ["10Mbit", "50Mbit", "100Mbit"]);
        assert_eq!(parse_values("1..6").unwrap(), ["1", "2", "3", "4", "5", "6"]);
        assert_eq!(parse_values("10ms..100ms:30ms").unwrap(), ["10ms", "40ms", "70ms", "100ms"]);
        assert_eq!(parse_values("10..50:20Mbit").unwrap(), ["10Mbit", "30Mbit", "50Mbit"]);
        assert_eq!(parse_values("0.5..2:0.5").unwrap(), ["0.5", "1", "1.5", "2"]);
        assert_eq!(parse_values("1..3,8").unwrap(), ["1", "2", "3", "8"]);
        assert_eq!(parse_values("minrtt,roundrobin").unwrap(), ["minrtt", "roundrobin"]);
        assert_eq!(parse_values("[\"5ms\",\"10ms\"],[\"1ms\",\"2ms\"]").unwrap(), ["[\"5ms\",\"10ms\"]", "[\"1ms\",\"2ms\"]"]);
        assert_eq!(parse_values("1e6..3e6:1e6").unwrap(), ["1000000", "2000000", "3000000"]);
    }

    #[test]
    fn bad_ranges_say_why() {
        assert!(parse_values("6..1").unwrap_err().contains("below the start"));
        assert!(parse_values("1..6:0").unwrap_err().contains("positive"));
        assert!(parse_values("1ms..6s").unwrap_err().contains("units differ"));
        assert!(parse_values("a..b").unwrap_err().contains("not a number"));
        assert!(parse_values("1,,2").unwrap_err().contains("empty"));
        assert!(parse_param("topology.rate").unwrap_err().contains("PATH=VALUES"));
    }

    #[test]
    fn cartesian_grid_first_param_slowest() {
        let p = [parse_param("a=1,2").unwrap(), parse_param("b=x,y,z").unwrap()];
        let g = grid(&p);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], vec![("a".to_string(), "1".to_string()), ("b".to_string(), "x".to_string())]);
        assert_eq!(g[2], vec![("a".to_string(), "1".to_string()), ("b".to_string(), "z".to_string())]);
        assert_eq!(g[3][0].1, "2");
        assert!(grid(&[]).is_empty());
        let g1 = grid(&[parse_param("links.0.rate=10Mbit,50Mbit,100Mbit,200Mbit").unwrap(), parse_param("transport.mptcp.subflows=1..6").unwrap()]);
        assert_eq!(g1.len(), 24);
    }

    #[test]
    fn linked_paths_and_points() {
        let p = parse_point("transport.tcp.rcv_buf+transport.tcp.snd_buf=64KB; topology.delay=[\"1ms\", \"2ms\"]").unwrap();
        assert_eq!(
            point_sets(&p),
            vec![("transport.tcp.rcv_buf".to_string(), "64KB".to_string()), ("transport.tcp.snd_buf".into(), "64KB".into()), ("topology.delay".into(), "[\"1ms\", \"2ms\"]".into())]
        );
        let pts = parse_points_file("# comment\na=1;b=2\n\na=3\n").unwrap();
        assert_eq!(pts.len(), 2);
        assert!(parse_points_file("a=1\nnonsense\n").unwrap_err().starts_with("line 2"));
    }

    #[test]
    fn point_ids_are_stable_safe_and_distinct() {
        let a = parse_point("topology.rate=10Mbit;transport.mptcp.subflows=2").unwrap();
        let b = parse_point("topology.rate=10Mbit;transport.mptcp.subflows=3").unwrap();
        assert_eq!(point_id(&a), point_id(&a.clone()));
        assert_ne!(point_id(&a), point_id(&b));
        assert!(point_id(&a).starts_with("rate=10Mbit_subflows=2-"), "{}", point_id(&a));
        let c = parse_point("topology.delay=[\"1ms\", \"2 ms\"]").unwrap();
        assert!(point_id(&c).chars().all(|ch| ch.is_ascii_alphanumeric() || "._=-".contains(ch)), "{}", point_id(&c));
    }

    #[test]
    fn seeds() {
        assert_eq!(parse_seeds("3").unwrap(), [1, 2, 3]);
        assert_eq!(parse_seeds("3,7,9").unwrap(), [3, 7, 9]);
        assert_eq!(parse_seeds("2..4").unwrap(), [2, 3, 4]);
        assert!(parse_seeds("0").is_err());
        assert!(parse_seeds("x").is_err());
    }

    #[test]
    fn aggregation_mean_stdev_ci() {
        let s = stats(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(s.n, 3);
        assert!((s.mean - 12.0).abs() < 1e-12);
        assert!((s.stdev - 2.0).abs() < 1e-12);
        // t(0.975, 2) = 4.303; 4.303 * 2 / sqrt(3)
        assert!((s.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        let one = stats(&[5.0]).unwrap();
        assert_eq!((one.stdev, one.ci95), (0.0, 0.0));
        assert!(stats(&[]).is_none());
        assert!((t975(100) - 1.98).abs() < 1e-12);
    }
}
