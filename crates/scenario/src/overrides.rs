//! `--set path=value` overrides, applied to the TOML document before it is
//! deserialised into the typed schema, so an override is checked exactly
//! like the same value written in the file.
//!
//! Paths are dotted keys with numeric array indices: `links.0.rate`,
//! `links[0].rate`, `transport.mptcp.subflows`, `topology.rate.1`. The value
//! is read as a TOML value when it is one (`10`, `true`, `[1, 2]`,
//! `{ kind = "red", ... }`, `"quoted"`) and as a plain string otherwise
//! (`50Mbit`, `10s`, `fullmesh`).
//!
//! Missing tables and keys are created (`transport.mptcp.subflows` works on
//! a file without `[transport]`); typos in key names are then caught by the
//! schema's `deny_unknown_fields` and reported against the `--set`. An
//! array grows only by a whole element set at its length
//! (`middleboxes.2={ kind = "nat", node = "fw" }` on a file with two
//! boxes appends a third); `links.5.rate` on a file with two links is an
//! error.

use crate::error::{parse_path, render_path, Seg};

/// An applied override, kept so errors about the values it introduced
/// can name it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Override {
    /// As the user would type it: `links.0.rate=50Mbit`.
    pub arg: String,
    pub segs: Vec<Seg>,
}

/// Reads `value` as TOML if it parses as one value, else as a string.
pub(crate) fn parse_value(value: &str) -> toml::Value {
    let doc = format!("v = {value}");
    match toml::from_str::<toml::Table>(&doc) {
        // Exactly one key: "1\nx = 2" must not smuggle in a second one.
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or_else(|| toml::Value::String(value.to_string())),
        _ => toml::Value::String(value.to_string()),
    }
}

/// Sets `path` to `value` in `doc`. `Err` is (canonical path, message).
pub(crate) fn apply(doc: &mut toml::Table, path: &str, value: &str) -> Result<Override, (String, String)> {
    let segs = parse_path(path).filter(|s| !s.is_empty()).ok_or_else(|| {
        (path.to_string(), format!("invalid path {path:?}: expected dotted keys with numeric indices, like links.0.rate"))
    })?;
    let shown = render_path(&segs);
    let Some(Seg::Key(first)) = segs.first() else {
        return Err((shown, "a path starts with a key, like links.0.rate".into()));
    };
    let mut slot: &mut toml::Value = match doc.get_mut(first) {
        Some(v) => v,
        None if segs.len() == 1 => {
            doc.insert(first.clone(), parse_value(value));
            return Ok(Override { arg: format!("{path}={value}"), segs });
        }
        None => {
            let fresh = match segs.get(1) {
                Some(Seg::Key(_)) => toml::Value::Table(toml::Table::new()),
                _ => return Err((shown, format!("there is no {first} array to index"))),
            };
            doc.entry(first.clone()).or_insert(fresh)
        }
    };
    for (depth, seg) in segs.iter().enumerate().skip(1) {
        let here = render_path(&segs[..depth]);
        let last = depth + 1 == segs.len();
        slot = match (slot, seg) {
            (toml::Value::Table(t), Seg::Key(k)) => {
                if last {
                    t.insert(k.clone(), parse_value(value));
                    return Ok(Override { arg: format!("{path}={value}"), segs });
                }
                if !t.contains_key(k) {
                    match segs.get(depth + 1) {
                        Some(Seg::Key(_)) => {
                            t.insert(k.clone(), toml::Value::Table(toml::Table::new()));
                        }
                        _ => return Err((shown, format!("{here} has no `{k}` array to index"))),
                    }
                }
                t.get_mut(k).expect("present or just inserted")
            }
            (toml::Value::Array(a), Seg::Index(i)) => {
                let len = a.len();
                if last && *i == len {
                    a.push(parse_value(value));
                    return Ok(Override { arg: format!("{path}={value}"), segs });
                }
                let Some(item) = a.get_mut(*i) else {
                    return Err((shown, format!("{here} has {len} entries; index {i} is out of range")));
                };
                if last {
                    *item = parse_value(value);
                    return Ok(Override { arg: format!("{path}={value}"), segs });
                }
                item
            }
            (toml::Value::Array(_), Seg::Key(k)) => return Err((shown, format!("{here} is a list; use an index, not `{k}`"))),
            (toml::Value::Table(_), Seg::Index(i)) => return Err((shown, format!("{here} is a table, not a list; [{i}] does not apply"))),
            (_, _) => return Err((shown, format!("{here} is a single value; it has no fields"))),
        };
    }
    // Only reached when the path is the single top-level key that exists.
    *slot = parse_value(value);
    Ok(Override { arg: format!("{path}={value}"), segs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> toml::Table {
        toml::from_str("duration = \"30s\"\n[[links]]\na = \"x\"\nb = \"y\"\nrate = \"10Mbit\"\n").unwrap()
    }

    #[test]
    fn values_are_typed_when_they_parse() {
        assert_eq!(parse_value("10"), toml::Value::Integer(10));
        assert_eq!(parse_value("true"), toml::Value::Boolean(true));
        assert_eq!(parse_value("50Mbit"), toml::Value::String("50Mbit".into()));
        assert_eq!(parse_value("\"q\""), toml::Value::String("q".into()));
        assert_eq!(parse_value("1\nx = 2"), toml::Value::String("1\nx = 2".into()));
        assert!(parse_value("{ kind = \"droptail\", packets = 10 }").is_table());
    }

    #[test]
    fn sets_existing_and_new_keys() {
        let mut d = doc();
        apply(&mut d, "links.0.rate", "50Mbit").unwrap();
        apply(&mut d, "duration", "10s").unwrap();
        apply(&mut d, "transport.mptcp.subflows", "4").unwrap();
        apply(&mut d, "links[0].delay", "5ms").unwrap();
        assert_eq!(d["links"][0]["rate"].as_str(), Some("50Mbit"));
        assert_eq!(d["links"][0]["delay"].as_str(), Some("5ms"));
        assert_eq!(d["duration"].as_str(), Some("10s"));
        assert_eq!(d["transport"]["mptcp"]["subflows"].as_integer(), Some(4));
    }

    #[test]
    fn a_whole_element_at_the_end_appends() {
        let mut d = doc();
        apply(&mut d, "links.1", "{ a = \"p\", b = \"q\" }").unwrap();
        assert_eq!(d["links"].as_array().map(|a| a.len()), Some(2));
        assert_eq!(d["links"][1]["a"].as_str(), Some("p"));
        assert_eq!(d["links"][0]["rate"].as_str(), Some("10Mbit"), "the first is kept");
        assert!(apply(&mut d, "links.2.rate", "1Mbit").is_err(), "a field of an element that does not exist");
        assert!(apply(&mut d, "links.4", "{}").is_err(), "only at the end");
    }

    #[test]
    fn rejects_impossible_paths() {
        let mut d = doc();
        assert_eq!(apply(&mut d, "links.3.rate", "1Mbit").unwrap_err().1, "links has 1 entries; index 3 is out of range");
        assert!(apply(&mut d, "duration.x", "1").unwrap_err().1.contains("single value"));
        assert!(apply(&mut d, "links.rate", "1").unwrap_err().1.contains("is a list"));
        assert!(apply(&mut d, "flows.0.rate", "1").unwrap_err().1.contains("no flows array"));
        assert!(apply(&mut d, "", "1").is_err());
        assert!(apply(&mut d, "0.x", "1").is_err());
    }
}
