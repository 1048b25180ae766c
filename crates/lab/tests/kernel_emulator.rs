//! Accuracy of mplab's userspace link emulator under real kernel TCP:
//! delay (request/response latency = 2 x one-way delay), rate (TCP
//! goodput = rate x 1448/1500), loss (bytes lost on a lossy direction).
//! Needs root; each test cleans up its namespaces even when it fails.

mod kernel_support;

use kernel_support::{can_run, run, serial, NsGuard};

/// A frame leaving the emulator this late (µs) after its model time means
/// the host did not run the emulator's thread: measured 7.7 ms once in a
/// full test run on a 2-core machine, where it is otherwise within 200 µs.
const HOST_STALL_US: f64 = 2000.0;

/// Three host pairs on 1 Gbit/s links with 10, 50 and 200 ms one-way
/// delay, and a fourth with 1 ms; a small request/response every 450 ms
/// on each. The claim is the emulator's: a link's delay adds exactly twice
/// itself to a round trip. The hosts' own share of a round trip (the
/// emulator's timed wakes, the stacks, the applications: 0.2-0.65 ms
/// measured on this 2-core machine, more under load) is what the 1 ms pair
/// takes beyond its 2 ms, and is taken off the others. (A pair without
/// delay is no reference: its frames never wait on the emulator's timer.)
#[test]
fn kernel_emulator_delay_accuracy() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("dly");
    let mut toml = String::from("name = \"delay\"\nduration = \"4.5s\"\n");
    let delays = [10.0, 50.0, 200.0, 1.0];
    for (i, d) in delays.iter().enumerate() {
        toml += &format!(
            "[[nodes]]\nname = \"c{i}\"\n[[nodes]]\nname = \"s{i}\"\n[[links]]\na = \"c{i}\"\nb = \"s{i}\"\nrate = \"1Gbit\"\ndelay = \"{d}ms\"\n\
             [[flows]]\nname = \"f{i}\"\nfrom = \"c{i}\"\nto = \"s{i}\"\ntransport = \"tcp\"\napp = \"request\"\nrequest_size = \"100B\"\nresponse_size = \"100B\"\ncount = 8\ninterval = \"450ms\"\n"
        );
    }
    // The claim is the emulator's model; a run in which the host kept the
    // emulator's thread from running on time (its own lateness figures say
    // so) measures the host instead and is run again, at most three times
    // in all, 10 s apart (the virtual machine's stalls come in spells of a
    // minute or so). When every attempt stalled, the machine could not
    // measure the claim then: the test says so and does not judge it.
    let stalled = |r: &mplab_emu::kernel::KernelRun| r.meta["emulator"]["lateness_max_us"].as_f64().unwrap_or(0.0) > HOST_STALL_US;
    let mut r = run(&g, 0, &toml);
    for attempt in 1..3 {
        if !stalled(&r) {
            break;
        }
        eprintln!("host stall: the emulator was up to {} us late; running again in 10 s", r.meta["emulator"]["lateness_max_us"]);
        std::thread::sleep(std::time::Duration::from_secs(10));
        r = run(&g, attempt, &toml);
    }
    if stalled(&r) {
        eprintln!("NOT MEASURED: the host stalled the emulator in all three attempts (last: up to {} us late); the delay claim is not judged", r.meta["emulator"]["lateness_max_us"]);
        g.assert_clean();
        return;
    }
    eprintln!("emulator: {}", r.meta["emulator"]);
    let latency = |i: usize| {
        let f = &r.results.summary.flows[i];
        assert!(f.verified && f.completed, "{f:?}");
        (f.mean_latency_ms.expect("latency"), f.p99_latency_ms.expect("latency"), f.mean_srtt_ms)
    };
    let reference = delays[delays.len() - 1];
    let (mean, max, _) = latency(delays.len() - 1);
    let (host, host_max) = (mean - 2.0 * reference, max - 2.0 * reference);
    eprintln!("delay {reference} ms: request/response mean {mean:.3} ms, max {max:.3} ms: the hosts' own share {host:.3} ms");
    // Above this, the run measures a host that is not keeping up, not the
    // emulator's delay; ten times what an idle machine shows.
    assert!((0.0..5.0).contains(&host), "the hosts took {host:.3} ms of a round trip over a {reference} ms link");
    for (i, d) in delays[..delays.len() - 1].iter().enumerate() {
        let (mean, max, srtt) = latency(i);
        let added = mean - host;
        eprintln!("delay {d} ms: request/response mean {mean:.3} ms, max {max:.3} ms, {added:.3} ms more than the hosts' share (want {:.1}), client srtt {srtt:?} ms", 2.0 * d);
        assert!((added - 2.0 * d).abs() <= 0.5, "delay {d} ms: a round trip took {added:.3} ms more than the hosts' share, want {} +- 0.5", 2.0 * d);
        assert!(max - host_max - 2.0 * d <= 1.5, "delay {d} ms: worst latency {max:.3} ms (the hosts' worst share: {host_max:.3} ms)");
    }
    g.assert_clean();
}

/// TCP goodput over a 10 and a 100 Mbit/s link: the rate times the payload
/// share of a 1500-byte packet (1448 bytes with timestamps), within 5 %.
#[test]
fn kernel_emulator_rate_accuracy() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("rate");
    let mut toml = String::from("name = \"rate\"\nduration = \"6s\"\n[transport.tcp]\ncc = \"cubic\"\n");
    let rates = [10u64, 100];
    for (i, m) in rates.iter().enumerate() {
        toml += &format!(
            "[[nodes]]\nname = \"c{i}\"\n[[nodes]]\nname = \"s{i}\"\n[[links]]\na = \"c{i}\"\nb = \"s{i}\"\nrate = \"{m}Mbit\"\ndelay = \"5ms\"\nqueue = {{ kind = \"droptail\", packets = 100 }}\n\
             [[flows]]\nname = \"f{i}\"\nfrom = \"c{i}\"\nto = \"s{i}\"\ntransport = \"tcp\"\napp = \"bulk\"\n"
        );
    }
    let r = run(&g, 0, &toml);
    for (i, m) in rates.iter().enumerate() {
        let f = &r.results.summary.flows[i];
        assert!(f.verified, "{f:?}");
        let want = *m as f64 * 1e6 * 1448.0 / 1500.0;
        let got = f.goodput_bps;
        eprintln!("rate {m} Mbit/s: goodput {:.3} Mbit/s, {:.2} % of {:.3}", got / 1e6, got / want * 100.0, want / 1e6);
        assert!((got / want - 1.0).abs() <= 0.05, "rate {m} Mbit/s: goodput {:.3} Mbit/s, want {:.3} +- 5 %", got / 1e6, want / 1e6);
    }
    g.assert_clean();
}

/// 1 % and 5 % Bernoulli loss on the data direction of two links, with a
/// paced sender far below the rate (no queue drops): the bytes that reach
/// the receiver's interface match 1 - p within 5 standard deviations.
#[test]
fn kernel_emulator_loss_accuracy() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("loss");
    let mut toml = String::from("name = \"loss\"\nduration = \"5s\"\nseed = 3\n");
    let losses = [0.01, 0.05];
    for (i, p) in losses.iter().enumerate() {
        toml += &format!(
            "[[nodes]]\nname = \"c{i}\"\n[[nodes]]\nname = \"s{i}\"\n[[links]]\nname = \"l{i}\"\na = \"c{i}\"\nb = \"s{i}\"\nrate = \"100Mbit\"\ndelay = \"2ms\"\n[links.ab]\nloss = {p}\n\
             [[flows]]\nname = \"f{i}\"\nfrom = \"c{i}\"\nto = \"s{i}\"\ntransport = \"tcp\"\napp = \"rate\"\nrate = \"20Mbit\"\n"
        );
    }
    let r = run(&g, 0, &toml);
    let s = &r.results.summary;
    for (i, p) in losses.iter().enumerate() {
        assert!(s.flows[i].verified, "{:?}", s.flows[i]);
        let tx = s.interfaces.iter().find(|x| x.node == format!("c{i}")).unwrap().tx_bytes as f64;
        let rx = s.interfaces.iter().find(|x| x.node == format!("s{i}")).unwrap().rx_bytes as f64;
        let link = s.links.iter().find(|l| l.name == format!("l{i}") && l.direction == "ab").unwrap();
        let n = link.tx_packets as f64;
        let measured = 1.0 - rx / tx;
        let sd = (p * (1.0 - p) / n).sqrt();
        eprintln!(
            "loss {p}: measured {measured:.4} over {n} packets (sd {sd:.4}); model drew {} losses = {:.4}",
            link.drops_loss,
            link.drops_loss as f64 / n
        );
        assert!(link.drops_queue == 0, "queue drops on a paced flow: {link:?}");
        assert!((measured - p).abs() <= 5.0 * sd + 0.002, "loss {p}: measured {measured:.4}, sd {sd:.4}");
    }
    g.assert_clean();
}

/// Duplication: 5 % of a paced flow's packets sent twice. The receiving
/// interface counts the copies, the kernel's TCP takes each byte once.
#[test]
fn kernel_emulator_duplicate_accuracy() {
    let _s = serial();
    if !can_run() {
        return;
    }
    let g = NsGuard::new("dup");
    let p = 0.05;
    let toml = format!(
        "name = \"dup\"\nduration = \"5s\"\nseed = 3\n[[nodes]]\nname = \"c\"\n[[nodes]]\nname = \"s\"\n[[links]]\nname = \"l\"\na = \"c\"\nb = \"s\"\nrate = \"100Mbit\"\ndelay = \"2ms\"\n[links.ab]\nduplicate = {p}\n\
         [[flows]]\nname = \"f\"\nfrom = \"c\"\nto = \"s\"\ntransport = \"tcp\"\napp = \"rate\"\nrate = \"20Mbit\"\n"
    );
    let r = run(&g, 0, &toml);
    let s = &r.results.summary;
    assert!(s.flows[0].verified, "{:?}", s.flows[0]);
    let tx = s.interfaces.iter().find(|x| x.node == "c").unwrap().tx_bytes as f64;
    let rx = s.interfaces.iter().find(|x| x.node == "s").unwrap().rx_bytes as f64;
    let link = s.links.iter().find(|l| l.direction == "ab").unwrap();
    let n = (link.tx_packets - link.duplicated) as f64;
    let measured = rx / tx - 1.0;
    let sd = (p * (1.0 - p) / n).sqrt();
    eprintln!("duplicate {p}: measured {measured:.4} over {n} packets (sd {sd:.4}); model made {} copies", link.duplicated);
    assert!(link.drops_queue == 0 && link.drops_loss == 0, "{link:?}");
    assert!((measured - p).abs() <= 5.0 * sd + 0.002, "duplicate {p}: measured {measured:.4}, sd {sd:.4}");
    assert!((link.duplicated as f64 / n - p).abs() <= 5.0 * sd, "{link:?}");
    g.assert_clean();
}
