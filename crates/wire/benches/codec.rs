//! Segments parsed and serialised per second for a realistic mix (see
//! `mplab_wire::samples`). Run: `cargo bench -p mplab-wire --bench codec`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use mplab_wire::samples::segment_mix;
use mplab_wire::{TcpHeader, TcpOptions};

fn encoded_mix() -> Vec<Vec<u8>> {
    segment_mix()
        .iter()
        .map(|h| {
            let mut b = vec![0u8; 60];
            let n = h.encode(&mut b).unwrap();
            b.truncate(n);
            b
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mix = segment_mix();
    let bytes = encoded_mix();
    let mut g = c.benchmark_group("tcp-segment");
    g.throughput(Throughput::Elements(bytes.len() as u64));
    g.bench_function("parse header+options (mix)", |b| {
        b.iter(|| {
            for s in &bytes {
                black_box(TcpHeader::decode(black_box(s)).unwrap());
            }
        })
    });
    g.bench_function("serialize header+options (mix)", |b| {
        let mut buf = [0u8; 60];
        b.iter(|| {
            for h in &mix {
                black_box(black_box(h).encode(&mut buf).unwrap());
            }
        })
    });
    g.finish();
    // The yardstick: individual options decoded per second.
    let options: u64 = mix
        .iter()
        .map(|h| {
            let o = &h.options;
            (o.mss.is_some() as u64)
                + (o.wscale.is_some() as u64)
                + (o.sack_permitted as u64)
                + (o.timestamps.is_some() as u64)
                + (!o.sack().is_empty() as u64)
                + o.mptcp().count() as u64
        })
        .sum();
    let mut g = c.benchmark_group("tcp-options");
    g.throughput(Throughput::Elements(options));
    g.bench_function("option parses (mix)", |b| {
        b.iter(|| {
            for s in &bytes {
                black_box(TcpOptions::parse(black_box(&s[20..])).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
