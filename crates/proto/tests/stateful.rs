//! The stateful fuzz harnesses (tests/support/pair.rs for MPTCP,
//! tests/support/tcp_pair.rs for the TCP engine alone) on fixed inputs: the
//! scripts the fuzzers once failed on (fuzz/regressions/, each a bug fixed)
//! and thousands of seeded random scripts, so that the invariants are held
//! on every test run, nightly toolchain or not.

#[path = "support/pair.rs"]
mod pair;
#[path = "support/script.rs"]
mod script;
#[path = "support/tcp_pair.rs"]
mod tcp_pair;

/// A SplitMix64 byte stream: the seeded scripts.
fn script(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

#[test]
fn the_fuzzers_old_findings_hold() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        // `tcp-*` scripts are the TCP engine's (fuzz target tcp_pair).
        let tcp = e.file_name().to_string_lossy().starts_with("tcp-");
        let r = if tcp { tcp_pair::run(&data, 100_000).map(|_| ()) } else { pair::run(&data, 100_000).map(|_| ()) };
        if let Err(m) = r {
            panic!("{}: {m}", e.path().display());
        }
        n += 1;
    }
    eprintln!("{n} regression scripts");
}

/// Findings not fixed yet (fuzz/open/): each must pass once its bug is.
#[test]
#[ignore = "open findings, docs/security.md"]
fn the_fuzzers_open_findings() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/open");
    for e in std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.path().extension().is_some_and(|x| x == "bin")) {
        let data = std::fs::read(e.path()).unwrap();
        if let Err(m) = pair::run(&data, 100_000) {
            panic!("{}: {m}", e.path().display());
        }
    }
}

#[test]
fn seeded_scripts_keep_the_invariants() {
    let mut forged = 0;
    let mut read = 0;
    for seed in 0..4000u64 {
        let data = script(seed, 12_000);
        match pair::run(&data, 100_000) {
            Ok(o) => {
                forged += o.forged;
                read += o.read;
            }
            Err(m) => panic!("seed {seed}: {m}"),
        }
    }
    // The scripts did reach the interesting states: data flowed and
    // forgeries were delivered.
    assert!(forged > 1000 && read > 0, "forged {forged}, read {read}");
}

/// A script without an attacker: the transfer goes through whole.
#[test]
fn a_clean_script_delivers_every_byte() {
    let mut s = vec![1u8]; // DSS checksums on
    for _ in 0..400 {
        s.extend_from_slice(&[9, 0, 0x40, 0x00]); // write 0x40 * 16 bytes
        s.extend_from_slice(&[0, 0]); // emit
        for _ in 0..8 {
            s.extend_from_slice(&[2, 0]); // deliver the oldest
        }
        s.extend_from_slice(&[0, 0, 8, 0, 1]); // emit, 2 ms pass
    }
    let o = pair::run(&s, 1_000_000).unwrap();
    assert!(!o.tainted);
    assert!(o.read > 100_000, "{o:?}");
}

#[test]
fn seeded_tcp_scripts_keep_the_invariants() {
    let (mut forged, mut read) = (0, [0u64; 2]);
    for seed in 0..4000u64 {
        let data = script(seed ^ 0x7c9, 12_000);
        match tcp_pair::run(&data, 100_000) {
            Ok(o) => {
                forged += o.forged;
                read[0] += o.read[0];
                read[1] += o.read[1];
            }
            Err(m) => panic!("seed {seed}: {m}"),
        }
    }
    assert!(forged > 1000 && read[0] > 0 && read[1] > 0, "forged {forged}, read {read:?}");
}

/// Plain TCP without an attacker: both streams go through whole.
#[test]
fn a_clean_tcp_script_delivers_both_ways() {
    let mut s = vec![0, 0, 0, 1, 0, 0, 0, 2, 0]; // ISNs 2^24 and 2^25, SACK on
    for _ in 0..400 {
        s.extend_from_slice(&[9, 0, 0x40, 0x00]); // the client writes 1 KiB
        s.extend_from_slice(&[10, 0, 0x20, 0x00]); // the server 512 B
        s.extend_from_slice(&[0, 0]); // emit
        for _ in 0..8 {
            s.extend_from_slice(&[2, 0]); // deliver the oldest
        }
        s.extend_from_slice(&[0, 0, 8, 0, 1]); // emit, 2 ms pass
    }
    let o = tcp_pair::run(&s, 1_000_000).unwrap();
    assert!(!o.tainted);
    assert!(o.read[0] > 100_000 && o.read[1] > 50_000, "{o:?}");
}
