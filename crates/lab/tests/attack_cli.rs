//! `mplab attack`: the adversarial matrix on the simulator (every row
//! mplab's stack passes, each judged against what RFC 8684 / 7430 require),
//! its errors, and (as root) a few rows against Linux and against mplab's
//! stack on real packets.

mod lab_common;
mod support;

use lab_common::{col, mplab, read_csv, repo, Scratch};

/// Rows of the matrix and their verdict per backend, from attack.csv.
fn verdicts(dir: &std::path::Path) -> Vec<(String, String, String, String)> {
    let (h, rows) = read_csv(&dir.join("attack.csv"));
    let (a, b, v, o) = (col(&h, "attack"), col(&h, "backend"), col(&h, "verdict"), col(&h, "outcome"));
    rows.iter().map(|r| (r[a].clone(), r[b].clone(), r[v].clone(), r[o].clone())).collect()
}

/// Every attack.
const PASSING: &str = "join-unknown-token,join-stolen-token,join-replayed-hmac,join-syn-flood,add-addr-bad-hmac,add-addr-replayed,remove-addr-off-path,mp-prio-off-path,fastclose-wrong-key,mp-fail-off-path,infinite-mapping,dss-overlap,dss-out-of-window,dss-bad-checksum,rst-off-path,rst-on-path,strip-mid-connection,payload-rewrite,segment-split,nat-rebinding";

#[test]
fn mplab_stack_on_the_simulator_does_what_the_rfcs_require() {
    let tmp = Scratch::new("attack-sim");
    let scen = repo().join("scenarios/attack.toml");
    let out = tmp.join("m");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--rows".as_ref(), PASSING.as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let v = verdicts(&out);
    assert_eq!(v.len(), PASSING.split(',').count());
    for (attack, backend, verdict, outcome) in &v {
        assert_eq!((backend.as_str(), verdict.as_str()), ("sim", "ok"), "{attack}: {outcome}");
    }
    // The forged joins were answered as RFC 8684 3.2 says: the stolen
    // token got a SYN/ACK and then a reset at the third ACK's HMAC; the
    // unknown token only a reset.
    let (h, rows) = read_csv(&out.join("attack.csv"));
    let get = |a: &str, c: &str| rows.iter().find(|r| r[col(&h, "attack")] == a).map(|r| r[col(&h, c)].clone()).unwrap();
    assert_eq!((get("join-stolen-token", "syn_acks"), get("join-stolen-token", "resets")), ("1".into(), "1".into()));
    assert_eq!((get("join-unknown-token", "syn_acks"), get("join-unknown-token", "resets")), ("0".into(), "1".into()));
    // The deterministic simulator gives the same table twice.
    let again = tmp.join("m2");
    let o2 = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--rows".as_ref(), "join-stolen-token,dss-overlap,nat-rebinding".as_ref(), "--out".as_ref(), again.as_os_str()]);
    assert_eq!(o2.code, 0, "{}", o2.stderr);
    let first: Vec<_> = v.iter().filter(|r| ["join-stolen-token", "dss-overlap", "nat-rebinding"].contains(&r.0.as_str())).cloned().collect();
    assert_eq!(verdicts(&again), first);
}

/// The attacker on the joined subflow's link (wan2) instead of the initial
/// one's: the forged DSS mappings over data already received or far out of
/// the window change no byte the application reads (the simulator once
/// flagged a forged segment as delivered although the first copy of each
/// byte had won), the token is stolen from the MP_JOIN SYN seen there, and
/// an attack with nothing to replay on that link says "not mounted", never
/// a verdict on the stack.
#[test]
fn on_the_joined_subflows_link_no_forged_byte_is_delivered() {
    let tmp = Scratch::new("attack-wan2");
    let scen = repo().join("scenarios/attack.toml");
    let out = tmp.join("m");
    let rows = "dss-overlap,dss-out-of-window,join-stolen-token,add-addr-replayed";
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "wan2".as_ref(), "--rows".as_ref(), rows.as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let v = verdicts(&out);
    let verdict = |a: &str| v.iter().find(|r| r.0 == a).map(|r| (r.2.clone(), r.3.clone())).unwrap();
    for a in ["dss-overlap", "dss-out-of-window", "join-stolen-token"] {
        assert_eq!(verdict(a).0, "ok", "{a}: {}", verdict(a).1);
    }
    let (h, csv) = read_csv(&out.join("attack.csv"));
    let forged = |a: &str| csv.iter().find(|r| r[col(&h, "attack")] == a).map(|r| r[col(&h, "forged")].clone()).unwrap();
    assert_ne!(forged("join-stolen-token"), "0", "the stolen-token attack was mounted");
    assert_eq!(verdict("add-addr-replayed"), ("not mounted".to_string(), "no genuine ADD_ADDR crossed the link to replay".to_string()));
}

/// Subflows that come back: after an on-path RST on the joined subflow's
/// link (which reaches only the server of the download) or a forged
/// infinite mapping there, mplab's client learns the subflow is gone and
/// opens it again from the same address, and the transfer ends within
/// 1.5 times its unattacked time; before, it ran on one path to the end
/// (1.55 times).
#[test]
fn a_reset_subflow_comes_back_and_the_transfer_keeps_its_pace() {
    let tmp = Scratch::new("attack-rejoin");
    let scen = repo().join("scenarios/attack.toml");
    let out = tmp.join("m");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "wan2".as_ref(), "--rows".as_ref(), "rst-on-path,infinite-mapping,nat-rebinding".as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let (h, csv) = read_csv(&out.join("attack.csv"));
    for r in &csv {
        let (t, base): (f64, f64) = (r[col(&h, "completion_s")].parse().unwrap(), r[col(&h, "baseline_s")].parse().unwrap());
        assert!(t <= 1.5 * base, "{}: {t:.2} s against {base:.2} s unattacked", r[col(&h, "attack")]);
    }
}

/// The upload victim with the attacker next to the data receiver (lan0):
/// a thousand blind segments guessing the sequence number change nothing
/// and cost nothing. Before, one guess in the window had its REMOVE_ADDR
/// or MP_PRIO believed although its ACK number acknowledged data never
/// sent (RFC 5961 5.2), and every guess drew an ACK, a duplicate ACK to
/// the sender: the upload took 10.5 s instead of 6.8 s. The simulator is
/// deterministic, so the 5 % bound only has to hold for these runs; with
/// at most one ACK per 500 ms for the flood, the sender sees no run of
/// duplicate ACKs at all.
#[test]
fn blind_segments_next_to_an_upload_receiver_change_nothing() {
    let tmp = Scratch::new("attack-upload");
    let scen = repo().join("scenarios/attack-upload.toml");
    let out = tmp.join("m");
    let rows = "remove-addr-off-path,mp-prio-off-path,mp-fail-off-path,rst-off-path";
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "lan0".as_ref(), "--rows".as_ref(), rows.as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let (h, csv) = read_csv(&out.join("attack.csv"));
    assert_eq!(csv.len(), 4);
    for r in &csv {
        assert_eq!(r[col(&h, "verdict")], "ok", "{}: {}", r[col(&h, "attack")], r[col(&h, "outcome")]);
        assert_eq!(r[col(&h, "forged")], "1000", "{}: the flood was sent", r[col(&h, "attack")]);
        let (t, base): (f64, f64) = (r[col(&h, "completion_s")].parse().unwrap(), r[col(&h, "baseline_s")].parse().unwrap());
        assert!(t <= 1.05 * base, "{}: {t:.2} s against {base:.2} s unattacked", r[col(&h, "attack")]);
    }
}

/// The same place, the attacker's forged DSS segments at the receiver's
/// RCV.NXT (checksums off): their bytes beat the genuine segment to the
/// subflow, under a mapping over data already received or far beyond the
/// window. No changed byte reaches the application and the upload ends:
/// before, the first stopped the transfer (the genuine mapping, starting
/// at the same subflow byte, was dropped) and the second placed 1000
/// bytes 2^40 ahead.
#[test]
fn forged_mappings_next_to_an_upload_receiver_change_no_byte() {
    let tmp = Scratch::new("attack-upload-dss");
    let scen = repo().join("scenarios/attack-upload.toml");
    let out = tmp.join("m");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "lan0".as_ref(), "--rows".as_ref(), "dss-overlap,dss-out-of-window".as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let (h, csv) = read_csv(&out.join("attack.csv"));
    for r in &csv {
        assert_eq!(r[col(&h, "verdict")], "ok", "{}: {}", r[col(&h, "attack")], r[col(&h, "outcome")]);
        assert_eq!(r[col(&h, "forged")], "1", "{}: mounted", r[col(&h, "attack")]);
    }
}

/// `--product`: every link of the upload victim, checksums off and on,
/// two strike times (once the join is up, and mid-transfer), 20 rows
/// each: 320 cells, every one ok or not mounted (with its reason), and
/// the summary counts them along each dimension. (A strike during the
/// handshake still has WEAKER cells: docs/security.md, "The product".)
#[test]
fn the_product_over_links_checksums_and_strikes_has_no_weaker_cell() {
    let tmp = Scratch::new("attack-product");
    let scen = repo().join("scenarios/attack-upload.toml");
    let out = tmp.join("p");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--product".as_ref(), "--strikes".as_ref(), "mp-join,3s".as_ref(), "--out".as_ref(), out.as_os_str(), "-q".as_ref()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let (h, csv) = read_csv(&out.join("product.csv"));
    assert_eq!(csv.len(), 4 * 2 * 2 * 20);
    for r in &csv {
        let v = &r[col(&h, "verdict")];
        assert!(v == "ok" || v == "not mounted", "{:?}", r);
    }
    let md = std::fs::read_to_string(out.join("product.md")).unwrap();
    assert!(md.contains("| all | 320 cells |") && md.contains("| strike | mp-join |") && md.contains("| checksums | on |"), "{md}");
    // Not mounted names why.
    let (a, outcome) = (col(&h, "attack"), col(&h, "outcome"));
    assert!(csv.iter().filter(|r| r[col(&h, "verdict")] == "not mounted").all(|r| !r[outcome].is_empty()), "{:?}", csv.iter().map(|r| &r[a]).collect::<Vec<_>>());
    // Run again into the same directory on one thread: every point is read
    // back (each left its matrix and options), and the table is the same
    // as the one the parallel run wrote.
    let first = std::fs::read_to_string(out.join("product.csv")).unwrap();
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--product".as_ref(), "--strikes".as_ref(), "mp-join,3s".as_ref(), "--jobs".as_ref(), "1".as_ref(), "--out".as_ref(), out.as_os_str(), "-q".as_ref()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(out.join("product.csv")).unwrap(), first);
    assert!(std::fs::read_dir(&out).unwrap().flatten().filter(|e| e.path().is_dir()).all(|e| e.path().join("point.json").exists()));
}

/// The whole default product (every link, checksums off and on, the
/// seven default strikes) on each bundled victim: no WEAKER cell, and the
/// fallback-prone victim's TCP's-limit cells are the on-path rows against
/// a connection that fell back without the attacker.
#[test]
fn the_full_product_on_every_bundled_victim_has_no_weaker_cell() {
    let tmp = Scratch::new("attack-victims");
    for victim in ["attack", "attack-upload", "attack-uneven", "attack-both", "attack-fallback"] {
        let scen = repo().join(format!("scenarios/{victim}.toml"));
        let out = tmp.join(victim);
        let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--product".as_ref(), "--out".as_ref(), out.as_os_str(), "-q".as_ref()]);
        assert_eq!(o.code, 0, "{victim}: {}\n{}", o.stdout, o.stderr);
        let (h, csv) = read_csv(&out.join("product.csv"));
        assert_eq!(csv.len(), 4 * 2 * 7 * 20, "{victim}");
        assert!(csv.iter().all(|r| r[col(&h, "verdict")] != "WEAKER"), "{victim}");
        if victim == "attack-fallback" {
            let limits: Vec<_> = csv.iter().filter(|r| r[col(&h, "verdict")] == "TCP's limit").collect();
            assert!(!limits.is_empty());
            assert!(limits.iter().all(|r| r[col(&h, "outcome")].contains("fell back without the attacker")), "{limits:?}");
        }
    }
}

#[test]
fn bad_attack_arguments_are_usage_errors() {
    let tmp = Scratch::new("attack-bad");
    let scen = repo().join("scenarios/attack.toml");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--rows".as_ref(), "teleport".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("unknown attack \"teleport\""), "{}", o.stderr);
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--backends".as_ref(), "ns3".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("unknown backend \"ns3\""), "{}", o.stderr);
    // In a scenario file: the field is named.
    let o = mplab(&tmp.0, &["run".as_ref(), scen.as_os_str(), "--set".as_ref(), "middleboxes=[{ kind = \"attacker\", link = \"wan1\", attack = \"teleport\" }]".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("middleboxes[0].attack: unknown attack \"teleport\""), "{}", o.stderr);
    let o = mplab(&tmp.0, &["run".as_ref(), scen.as_os_str(), "--set".as_ref(), "middleboxes=[{ kind = \"attacker\", link = \"wan1\", attack = \"rst-on-path\", direction = \"ab\" }]".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("an attacker sees both directions of its link"), "{}", o.stderr);
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--at".as_ref(), "mp-teleport+5ms".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("unknown moment \"mp-teleport\""), "{}", o.stderr);
    let o = mplab(&tmp.0, &["run".as_ref(), scen.as_os_str(), "--set".as_ref(), "middleboxes=[{ kind = \"attacker\", link = \"wan1\", attack = \"rst-on-path\", after = \"syn\" }]".as_ref()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("middleboxes[0].after: unknown moment \"syn\""), "{}", o.stderr);
    let o = mplab(&tmp.0, &["attack".as_ref(), "--list".as_ref(), scen.as_os_str()]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("join-stolen-token") && o.stdout.contains("RFC 8684 3.2"), "{}", o.stdout);
}

/// The same attacks on real packets: Linux's MPTCP (kernel backend) and
/// mplab's stack on TUN (userspace backend) behind the link emulator's
/// attacker. Root only (CI is root); about two minutes.
#[test]
fn a_few_attacks_against_linux_and_mplab_on_real_packets() {
    if !support::netns::root_or_skip() {
        return;
    }
    let tmp = Scratch::new("attack-real");
    let scen = repo().join("scenarios/attack.toml");
    let out = tmp.join("m");
    let rows = "join-stolen-token,join-unknown-token,fastclose-wrong-key,rst-on-path";
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--rows".as_ref(), rows.as_ref(), "--backends".as_ref(), "kernel,userspace".as_ref(), "--out".as_ref(), out.as_os_str()]);
    let v = verdicts(&out);
    assert_eq!(v.len(), 8, "{}\n{}", o.stdout, o.stderr);
    for (attack, backend, verdict, outcome) in &v {
        assert_eq!(verdict, "ok", "{attack} on {backend}: {outcome}");
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// A strike at a protocol moment on real packets, Linux beside mplab: the
/// options vanish on lan0 as the first ADD_ADDR crosses it (the cell the
/// simulator's product found open, closed by the fallback fixes). mplab's
/// stack on the userspace backend falls back at both ends and delivers
/// every byte in place, as on the simulator; what Linux 6.18 does is
/// recorded beside it (docs/security.md), not judged.
#[test]
fn a_strike_at_a_protocol_moment_on_real_packets() {
    if !support::netns::root_or_skip() {
        return;
    }
    let tmp = Scratch::new("attack-real-moment");
    let scen = repo().join("scenarios/attack.toml");
    let out = tmp.join("m");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "lan0".as_ref(), "--at".as_ref(), "add-addr".as_ref(), "--rows".as_ref(), "strip-mid-connection".as_ref(), "--backends".as_ref(), "kernel,userspace".as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let v = verdicts(&out);
    assert_eq!(v.len(), 2, "{v:?}");
    for (attack, backend, verdict, outcome) in &v {
        match backend.as_str() {
            "userspace" => assert_eq!(verdict, "ok", "{attack} on {backend}: {outcome}"),
            _ => assert!(verdict != "n/a" && verdict != "not mounted", "{attack} on {backend}: {verdict}: {outcome}"),
        }
    }
}

/// During the handshake (10 ms), before a second subflow exists: blind
/// RSTs are ignored wherever they land (RFC 5961 3.2: only RCV.NXT
/// resets, in SYN-RECEIVED too: 1000 of them once ended the connection);
/// an on-path RST or a NAT rebinding of the only subflow ends the
/// connection with nothing changed, and a rewritten payload makes it fall
/// back: TCP's limit (RFC 8684 5), stated with the row's condition. One
/// rewrite alone is caught by the DSS checksum and never delivered; the
/// second comes after the fallback, where only TCP's checksum stands.
#[test]
fn during_the_handshake_the_only_subflow_is_as_strong_as_tcp() {
    let tmp = Scratch::new("attack-10ms");
    let scen = repo().join("scenarios/attack.toml");
    // The download and the upload (where the client, reset at 15 ms, once
    // went on opening a join its application could no longer write to).
    for (victim, link) in [("attack", "wan1"), ("attack", "lan0"), ("attack-upload", "wan1"), ("attack-upload", "lan0")] {
        let scen = repo().join(format!("scenarios/{victim}.toml"));
        let out = tmp.join(&format!("{victim}-{link}"));
        let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), link.as_ref(), "--at".as_ref(), "10ms".as_ref(), "--rows".as_ref(), "rst-off-path,rst-on-path,nat-rebinding,payload-rewrite".as_ref(), "--out".as_ref(), out.as_os_str()]);
        assert_eq!(o.code, 0, "{link}: {}\n{}", o.stdout, o.stderr);
        let v = verdicts(&out);
        let verdict = |a: &str| v.iter().find(|r| r.0 == a).map(|r| (r.2.clone(), r.3.clone())).unwrap();
        assert_eq!(verdict("rst-off-path").0, "ok", "{victim} {link}: {}", verdict("rst-off-path").1);
        for a in ["rst-on-path", "nat-rebinding"] {
            let (v, outcome) = verdict(a);
            assert_eq!(v, "TCP's limit", "{victim} {link} {a}: {outcome}");
            assert!(!outcome.contains("CHANGED"), "{outcome}");
        }
        let (v, outcome) = verdict("payload-rewrite");
        assert_eq!(v, "TCP's limit", "{link}: {outcome}");
        assert!(outcome.contains("fell back"), "{outcome}");
    }
    // One rewrite only: detected, never delivered, and the connection
    // falls back and completes.
    let out = tmp.join("one");
    let o = mplab(
        &tmp.0,
        &[
            "run".as_ref(),
            scen.as_os_str(),
            "--set".as_ref(),
            "transport.mptcp.checksum=true".as_ref(),
            "--set".as_ref(),
            "middleboxes=[{ kind = \"attacker\", link = \"wan1\", attack = \"payload-rewrite\", at = \"10ms\", count = 1 }]".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
            "--json".as_ref(),
        ],
    );
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let f = &s["flows"][0];
    assert_eq!((f["verified"].as_bool(), f["fallback"].as_bool(), f["completed"].as_bool()), (Some(true), Some(true), Some(true)), "{f}");
    assert_eq!(s["attacks"][0]["touched"].as_u64(), Some(1));
}

/// Strikes tied to protocol moments rather than the clock: on the joined
/// subflow's link the attacker strikes as the first MP_JOIN SYN crosses
/// it (and 50 ms after it), the stolen token's join is refused and the
/// forged mappings change no byte; a moment that never crosses the
/// attacker's link (the MP_CAPABLE SYN goes over wan1, never wan2) leaves
/// the row "not mounted", saying why.
#[test]
fn strikes_follow_protocol_moments() {
    let tmp = Scratch::new("attack-moments");
    let scen = repo().join("scenarios/attack.toml");
    let rows = "join-stolen-token,dss-overlap";
    // As the join's SYN crosses wan2 no subflow there is established yet:
    // nothing to steal or forge on, which the row says.
    let out = tmp.join("at-join");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "wan2".as_ref(), "--at".as_ref(), "mp-join".as_ref(), "--rows".as_ref(), rows.as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    for (attack, _, verdict, outcome) in verdicts(&out) {
        assert_eq!((verdict.as_str(), outcome.as_str()), ("not mounted", "no established subflow crossed the attacker's link"), "{attack}");
    }
    // 50 ms later the join is up (a 12 ms round trip): the stolen token's
    // join is refused and the forged mappings change no byte.
    let out = tmp.join("after-join");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "wan2".as_ref(), "--at".as_ref(), "mp-join+50ms".as_ref(), "--rows".as_ref(), rows.as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    for (attack, _, verdict, outcome) in verdicts(&out) {
        assert_eq!(verdict, "ok", "{attack}: {outcome}");
    }
    // It struck 50 ms after the join's SYN, within the first second, not
    // at the clock's default 3 s.
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("join-stolen-token/sim/summary.json")).unwrap()).unwrap();
    let struck = s["attacks"][0]["struck_ns"].as_u64().expect("struck");
    assert!((50_000_000..1_000_000_000).contains(&struck), "struck at {struck} ns");
    let out = tmp.join("never");
    let o = mplab(&tmp.0, &["attack".as_ref(), scen.as_os_str(), "--link".as_ref(), "wan2".as_ref(), "--at".as_ref(), "mp-capable".as_ref(), "--rows".as_ref(), "rst-on-path".as_ref(), "--out".as_ref(), out.as_os_str()]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let v = verdicts(&out);
    assert_eq!((v[0].2.as_str(), v[0].3.as_str()), ("not mounted", "its moment (the first MP_CAPABLE SYN) never crossed the attacker's link"));
}
