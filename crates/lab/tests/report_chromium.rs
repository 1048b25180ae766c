//! The HTML report in a real browser: headless Chromium renders the report
//! of a run and of a sweep, and the screenshot must show the plots (pixels
//! in the plot colours, the page not blank). Skips with a message when
//! chromium is absent outside CI; fails in CI (scripts/setup.sh installs it).

mod lab_common;

use std::path::Path;
use std::process::Command;

use lab_common::*;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|c| Command::new(c).arg("--version").output().map(|o| o.status.success()).unwrap_or(false))
}

/// Screenshot of `html` (1100 x 2400) as RGBA rows.
fn screenshot(browser: &str, html: &Path, png: &Path) -> (u32, u32, Vec<u8>) {
    let o = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1100,2400", "--virtual-time-budget=2000"])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(png.exists(), "chromium wrote no screenshot: {}", String::from_utf8_lossy(&o.stderr));
    let dec = png::Decoder::new(std::fs::File::open(png).unwrap());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        c => panic!("unexpected screenshot colour type {c:?}"),
    };
    let mut rgba = Vec::with_capacity((info.width * info.height * 4) as usize);
    for px in buf[..info.buffer_size()].chunks(ch) {
        rgba.extend_from_slice(&[px[0], px[1], px[2], 255]);
    }
    (info.width, info.height, rgba)
}

/// (non-white pixels, pixels close to the plots' first two series colours).
fn count(w: u32, h: u32, rgba: &[u8], from_row: u32) -> (usize, usize) {
    let (mut ink, mut plot) = (0, 0);
    for y in from_row..h {
        for x in 0..w {
            let i = ((y * w + x) * 4) as usize;
            let (r, g, b) = (rgba[i] as i32, rgba[i + 1] as i32, rgba[i + 2] as i32);
            if r < 235 || g < 235 || b < 235 {
                ink += 1;
            }
            // tab10 blue (31,119,180) and orange (255,127,14).
            let near = |c: (i32, i32, i32)| (r - c.0).abs() + (g - c.1).abs() + (b - c.2).abs() < 60;
            if near((31, 119, 180)) || near((255, 127, 14)) {
                plot += 1;
            }
        }
    }
    (ink, plot)
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is needed in CI (scripts/setup.sh installs it)");
        }
        eprintln!("SKIPPED: chromium is not installed (apt-get install chromium; scripts/setup.sh does it)");
        return;
    };
    let tmp = Scratch::new("chromium");
    // Seed 000's lab 1, shortened: the link cut and recovery at 3 s and 6 s.
    let run = tmp.join("lab1");
    let sc = scenario("seed000-lab1.toml");
    let r =
        mplab(&tmp.0, &["run", sc.to_str().unwrap(), "--set", "duration=8s", "--set", "events.0.at=3s", "--set", "events.1.at=6s", "--set", "probes.pcap=[]", "-q", "--out", run.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = mplab(&tmp.0, &["report", run.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (w, h, px) = screenshot(browser, &run.join("report.html"), &tmp.join("run.png"));
    assert!(w >= 1000 && h >= 2000, "screenshot {w}x{h}");
    // The first plot starts below the summary tables (~700 px down).
    let (ink, plot) = count(w, h, &px, 600);
    eprintln!("run report: {ink} non-white pixels, {plot} in the plot colours");
    assert!(ink > 40_000, "the report looks blank below the tables ({ink} non-white pixels)");
    assert!(plot > 3_000, "no plot lines rendered ({plot} pixels in the series colours)");

    // A sweep report.
    let sw = tmp.join("sw");
    let two = scenario("two-paths.toml");
    let r = mplab(
        &tmp.0,
        &[
            "sweep",
            two.to_str().unwrap(),
            "--param",
            "topology.rate=10Mbit,20Mbit",
            "--param",
            "transport.mptcp.subflows=1,2",
            "--seeds",
            "2",
            "--set",
            "duration=1s",
            "--set",
            "topology.loss=0.01",
            "--set",
            "probes.pcap=[]",
            "-q",
            "--out",
            sw.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = mplab(&tmp.0, &["report", sw.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (w, h, px) = screenshot(browser, &sw.join("report.html"), &tmp.join("sweep.png"));
    let (ink, plot) = count(w, h, &px, 0);
    eprintln!("sweep report: {ink} non-white pixels, {plot} in the plot colours");
    assert!(ink > 40_000 && plot > 1_500, "sweep report: {ink} non-white, {plot} plot-coloured pixels");
}
