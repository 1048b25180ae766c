//! A small tidy table: named string columns, read from and written to CSV
//! (RFC 4180 quoting), with typed access by column name. Plots, sweeps,
//! reports and Parquet export all read results through it, by column
//! name, so columns added later (e.g. `ooo_bytes`) are picked up and
//! absent ones skipped.

use std::io;
use std::path::Path;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Splits CSV text into records (quotes, doubled quotes, CRLF).
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rec = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => rec.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                rec.push(std::mem::take(&mut field));
                out.push(std::mem::take(&mut rec));
                any = false;
            }
            _ => field.push(c),
        }
    }
    if any {
        rec.push(field);
        out.push(rec);
    }
    out
}

fn quote(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table { headers: headers.iter().map(|s| s.to_string()).collect(), rows: Vec::new() }
    }

    pub fn from_csv(text: &str) -> Table {
        let mut recs = parse_csv(text).into_iter();
        let headers = recs.next().unwrap_or_default();
        let n = headers.len();
        let rows = recs
            .filter(|r| !(r.len() == 1 && r[0].is_empty()))
            .map(|mut r| {
                r.resize(n, String::new());
                r
            })
            .collect();
        Table { headers, rows }
    }

    pub fn read_csv(path: &Path) -> io::Result<Table> {
        Ok(Table::from_csv(&std::fs::read_to_string(path)?))
    }

    pub fn to_csv(&self) -> String {
        let mut s = self.headers.iter().map(|h| quote(h)).collect::<Vec<_>>().join(",");
        s.push('\n');
        for r in &self.rows {
            s.push_str(&r.iter().map(|h| quote(h)).collect::<Vec<_>>().join(","));
            s.push('\n');
        }
        s
    }

    pub fn write_csv(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_csv())
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.col(name).is_some()
    }

    /// The cell as a number, `None` when the column is absent or the cell empty / not a number.
    pub fn num(&self, row: usize, name: &str) -> Option<f64> {
        let c = self.col(name)?;
        self.rows[row].get(c)?.trim().parse::<f64>().ok().filter(|v| v.is_finite())
    }

    pub fn str(&self, row: usize, name: &str) -> &str {
        self.col(name).and_then(|c| self.rows[row].get(c)).map(|s| s.as_str()).unwrap_or("")
    }

    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.headers.len());
        self.rows.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trip_with_quotes() {
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["[\"5ms\",\"10ms\"]".into(), "x".into()]);
        t.push(vec!["".into(), "2".into()]);
        let back = Table::from_csv(&t.to_csv());
        assert_eq!(back, t);
        assert_eq!(back.num(1, "b"), Some(2.0));
        assert_eq!(back.num(1, "a"), None);
        assert_eq!(back.num(0, "missing"), None);
    }
}
