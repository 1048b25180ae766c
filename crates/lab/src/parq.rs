//! Apache Parquet export of a [`Table`], through parquet's low-level column
//! writer (no arrow): one row group, uncompressed, every column OPTIONAL
//! (an empty CSV cell is a null). Column types are inferred: all integers
//! → INT64, all numbers → DOUBLE, all true/false → BOOLEAN, otherwise a UTF-8 string. pandas
//! (`read_parquet`, pyarrow) and R `arrow::read_parquet` load the files as
//! they are.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::table::Table;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Bool,
    Int,
    Float,
    Text,
}

/// The type a column's non-empty cells all fit.
pub fn infer(t: &Table, c: usize) -> Kind {
    let mut cells = t.rows.iter().map(|r| r[c].trim()).filter(|v| !v.is_empty()).peekable();
    if cells.peek().is_some() && cells.clone().all(|v| v == "true" || v == "false") {
        return Kind::Bool;
    }
    let mut kind = Kind::Int;
    let mut any = false;
    for v in cells {
        any = true;
        if kind == Kind::Int && v.parse::<i64>().is_err() {
            kind = Kind::Float;
        }
        if kind == Kind::Float && v.parse::<f64>().is_err() {
            return Kind::Text;
        }
    }
    // An all-empty column is a numeric one with no values (pandas reads it as float NaN).
    if any {
        kind
    } else {
        Kind::Float
    }
}

fn err(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e.to_string())
}

pub fn write_table(t: &Table, path: &Path) -> io::Result<()> {
    let kinds: Vec<Kind> = (0..t.headers.len()).map(|c| infer(t, c)).collect();
    let mut fields = Vec::new();
    for (h, k) in t.headers.iter().zip(&kinds) {
        let b = match k {
            Kind::Bool => Type::primitive_type_builder(h, PhysicalType::BOOLEAN),
            Kind::Int => Type::primitive_type_builder(h, PhysicalType::INT64),
            Kind::Float => Type::primitive_type_builder(h, PhysicalType::DOUBLE),
            Kind::Text => Type::primitive_type_builder(h, PhysicalType::BYTE_ARRAY).with_logical_type(Some(LogicalType::String)),
        };
        fields.push(Arc::new(b.with_repetition(Repetition::OPTIONAL).build().map_err(err)?));
    }
    let schema = Arc::new(Type::group_type_builder("schema").with_fields(fields).build().map_err(err)?);
    let props = Arc::new(WriterProperties::builder().set_compression(Compression::UNCOMPRESSED).set_created_by(format!("mplab {}", env!("CARGO_PKG_VERSION"))).build());
    let tmp = path.with_extension("parquet.tmp");
    let file = File::create(&tmp)?;
    let mut w = SerializedFileWriter::new(file, schema, props).map_err(err)?;
    let mut rg = w.next_row_group().map_err(err)?;
    let mut c = 0;
    while let Some(mut col) = rg.next_column().map_err(err)? {
        let cells: Vec<&str> = t.rows.iter().map(|r| r[c].trim()).collect();
        let def: Vec<i16> = cells.iter().map(|v| i16::from(!v.is_empty())).collect();
        let present = cells.iter().filter(|v| !v.is_empty());
        match kinds[c] {
            Kind::Bool => {
                let vals: Vec<bool> = present.map(|v| *v == "true").collect();
                col.typed::<BoolType>().write_batch(&vals, Some(&def), None).map_err(err)?;
            }
            Kind::Int => {
                let vals: Vec<i64> = present.map(|v| v.parse().unwrap_or(0)).collect();
                col.typed::<Int64Type>().write_batch(&vals, Some(&def), None).map_err(err)?;
            }
            Kind::Float => {
                let vals: Vec<f64> = present.map(|v| v.parse().unwrap_or(f64::NAN)).collect();
                col.typed::<DoubleType>().write_batch(&vals, Some(&def), None).map_err(err)?;
            }
            Kind::Text => {
                let vals: Vec<ByteArray> = present.map(|v| ByteArray::from(*v)).collect();
                col.typed::<ByteArrayType>().write_batch(&vals, Some(&def), None).map_err(err)?;
            }
        }
        col.close().map_err(err)?;
        c += 1;
    }
    rg.close().map_err(err)?;
    w.close().map_err(err)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_column_types() {
        let t = Table::from_csv("a,b,c,d,e\n1,1.5,x,,true\n2,,3,,false\n");
        assert_eq!(infer(&t, 0), Kind::Int);
        assert_eq!(infer(&t, 1), Kind::Float);
        assert_eq!(infer(&t, 2), Kind::Text);
        assert_eq!(infer(&t, 3), Kind::Float);
        assert_eq!(infer(&t, 4), Kind::Bool);
    }

    #[test]
    fn writes_a_parquet_file_with_magic() {
        let t = Table::from_csv("time_s,flow,subflow,goodput_bps,cwnd_bytes\n0.1,bulk,all,100.5,\n0.2,bulk,0,200,3000\n");
        let p = std::env::temp_dir().join(format!("mplab-parq-{}.parquet", std::process::id()));
        write_table(&t, &p).unwrap();
        let b = std::fs::read(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        assert_eq!(&b[..4], b"PAR1");
        assert_eq!(&b[b.len() - 4..], b"PAR1");
    }
}
