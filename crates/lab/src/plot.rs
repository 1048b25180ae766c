//! Plots (plotters): line charts with optional error bars and event
//! markers, CDFs and horizontal bar charts, each written as PNG and SVG, or
//! rendered to an SVG string for the HTML report. A PNG is its SVG
//! rasterised (resvg), with text shaped from the bundled DejaVu Sans
//! (assets/), so no system fonts are needed and both files show the same
//! text: plotters' own bitmap text layout misplaces glyphs.

use std::io;
use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::FontStyle;

const W: u32 = 960;
const H: u32 = 540;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold, FontStyle::Italic, FontStyle::Oblique] {
            let _ = plotters::style::register_font("sans-serif", style, FONT);
        }
    });
}

/// tab10: distinct at a glance, and the first colours are the ones the
/// report test looks for.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Half-widths of error bars, one per point.
    pub err: Option<Vec<f64>>,
    /// Draw a marker at each point (sweeps), not just the line.
    pub markers: bool,
    /// Step line (CDFs).
    pub step: bool,
    /// Thicker, black: a total drawn over its parts.
    pub emphasis: bool,
    /// Small dots only, no line (time-sequence graphs: one dot a segment).
    pub dots: bool,
}

#[derive(Clone, Debug, Default)]
pub struct LinePlot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Vertical markers: (x, label), e.g. link events.
    pub events: Vec<(f64, String)>,
    /// x tick labels for a categorical axis (x = 0, 1, ...).
    pub categories: Option<Vec<String>>,
    /// Plot x on a log10 axis (the points' x are plain values).
    pub x_log: bool,
    /// y axis starts at 0 (throughputs); otherwise it fits the data.
    pub y_zero: bool,
    /// Fixed y range (CDFs: 0..1).
    pub y_range: Option<(f64, f64)>,
}

/// Horizontal bars: (label, value), e.g. relative differences per metric.
#[derive(Clone, Debug, Default)]
pub struct BarPlot {
    pub title: String,
    pub x_label: String,
    pub bars: Vec<(String, f64)>,
}

pub enum Plot {
    Line(LinePlot),
    Bar(BarPlot),
}

impl Plot {
    pub fn title(&self) -> &str {
        match self {
            Plot::Line(p) => &p.title,
            Plot::Bar(p) => &p.title,
        }
    }
}

/// A short readable number for tick labels.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e4 || a < 1e-3 {
        format!("{v:.1e}")
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

type DErr<DB> = DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>;

fn draw_line<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, p: &LinePlot) -> Result<(), DErr<DB>> {
    root.fill(&WHITE)?;
    let tx = |x: f64| if p.x_log { x.max(1e-12).log10() } else { x };
    let all: Vec<(f64, f64)> = p.series.iter().flat_map(|s| s.points.iter().copied()).filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    let errs: Vec<f64> = p.series.iter().flat_map(|s| s.err.clone().unwrap_or_default()).collect();
    let (mut x0, mut x1) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, _)| (a.min(tx(*x)), b.max(tx(*x))));
    let ymax_err = p.series.iter().flat_map(|s| s.points.iter().zip(s.err.clone().unwrap_or_else(|| vec![0.0; s.points.len()])).map(|((_, y), e)| y + e)).fold(f64::NEG_INFINITY, f64::max);
    let ymin_err = p.series.iter().flat_map(|s| s.points.iter().zip(s.err.clone().unwrap_or_else(|| vec![0.0; s.points.len()])).map(|((_, y), e)| y - e)).fold(f64::INFINITY, f64::min);
    let _ = errs;
    for (t, _) in &p.events {
        x0 = x0.min(tx(*t));
        x1 = x1.max(tx(*t));
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if p.categories.is_some() {
        x0 -= 0.5;
        x1 += 0.5;
    } else if x1 - x0 < 1e-12 {
        x0 -= 0.5;
        x1 += 0.5;
    } else if p.series.iter().any(|s| s.markers) {
        let pad = (x1 - x0) * 0.04;
        x0 -= pad;
        x1 += pad;
    }
    let (y0, y1) = match p.y_range {
        Some(r) => r,
        None => {
            let (mut lo, mut hi) = (if ymin_err.is_finite() { ymin_err } else { 0.0 }, if ymax_err.is_finite() { ymax_err } else { 1.0 });
            if p.y_zero {
                lo = lo.min(0.0);
            }
            if hi - lo < 1e-12 {
                hi = lo + 1.0;
            }
            // Headroom for the legend and the event labels.
            (lo, hi + (hi - lo) * if p.series.len() > 1 || !p.events.is_empty() { 0.25 } else { 0.08 })
        }
    };
    let mut chart = ChartBuilder::on(root).caption(&p.title, ("sans-serif", 22)).margin(14).x_label_area_size(50).y_label_area_size(75).build_cartesian_2d(x0..x1, y0..y1)?;
    let cats = p.categories.clone();
    // Whole-numbered x values over a short range (subflow counts): whole ticks only.
    let mut data_x: Vec<f64> = all.iter().map(|(x, _)| *x).collect();
    data_x.sort_by(f64::total_cmp);
    data_x.dedup();
    let (lx0, lx1) = (x0, x1);
    let data_x_f = data_x.clone();
    let int_x = !p.x_log && p.categories.is_none() && !all.is_empty() && all.iter().all(|(x, _)| (x - x.round()).abs() < 1e-9) && (x1 - x0) <= 20.0;
    let xfmt = move |v: &f64| -> String {
        if int_x && (v - v.round()).abs() > 1e-6 {
            return String::new();
        }
        if let Some(c) = &cats {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                return c[i as usize].clone();
            }
            return String::new();
        }
        if p.x_log {
            // Label only the swept values themselves (the nearest key point).
            let tol = (lx1 - lx0) / 240.0;
            return data_x_f.iter().find(|d| (d.max(1e-12).log10() - v).abs() <= tol).map(|d| tick(*d)).unwrap_or_default();
        }
        tick(*v)
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&|v| tick(*v))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215));
    // Long category labels (lists of delays) get a smaller font.
    let longest = p.categories.as_ref().map(|c| c.iter().map(|s| s.chars().count()).max().unwrap_or(0) * c.len()).unwrap_or(0);
    if longest > 90 {
        mesh.x_label_style(("sans-serif", 11));
    }
    if let Some(c) = &p.categories {
        mesh.x_labels(c.len().min(30));
    } else if int_x {
        mesh.x_labels(((x1 - x0).round() as usize + 1).max(2));
    } else if p.x_log {
        // Dense key points, most unlabelled: no grid or ticks for them; the
        // swept values get their own grid lines below.
        mesh.x_labels(120).disable_x_mesh().set_tick_mark_size(LabelAreaPosition::Bottom, 0);
    }
    mesh.draw()?;

    if p.x_log {
        for d in &data_x {
            let x = tx(*d);
            chart.draw_series(std::iter::once(PathElement::new(vec![(x, y0), (x, y1)], RGBColor(215, 215, 215).stroke_width(1))))?;
        }
    }
    for (t, label) in &p.events {
        let x = tx(*t);
        chart.draw_series(std::iter::once(PathElement::new(vec![(x, y0), (x, y1)], RGBColor(90, 90, 90).stroke_width(2))))?;
        chart.draw_series(std::iter::once(Text::new(format!(" {label}"), (x, y1 - (y1 - y0) * 0.02), ("sans-serif", 14).into_font().color(&RGBColor(60, 60, 60)))))?;
    }
    let mut idx = 0usize;
    for (si, s) in p.series.iter().enumerate() {
        let color = if s.emphasis { RGBColor(0, 0, 0) } else { PALETTE[idx % PALETTE.len()] };
        if !s.emphasis {
            idx += 1;
        }
        let width = if s.emphasis { 3 } else { 2 };
        let mut pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (tx(x), y)).filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        if s.step {
            let mut st = Vec::with_capacity(pts.len() * 2);
            for (i, &(x, y)) in pts.iter().enumerate() {
                if i > 0 {
                    st.push((x, pts[i - 1].1));
                }
                st.push((x, y));
            }
            pts = st;
        }
        let style = color.stroke_width(width);
        if s.dots {
            chart.draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 2, color.filled())))?.label(s.name.clone()).legend(move |(x, y)| Circle::new((x + 11, y), 3, color.filled()));
        } else if p.categories.is_some() {
            // Categories (scheduler names) have no order between them:
            // points only, no line suggesting a trend.
            chart.draw_series(s.points.iter().map(|&(x, y)| Circle::new((tx(x), y), 5, color.filled())))?.label(s.name.clone()).legend(move |(x, y)| Circle::new((x + 11, y), 5, color.filled()));
        } else if coincides_with_earlier(&p.series, si, (y1 - y0) * 0.005) {
            // Drawn solid it would hide under (or hide) the series it
            // coincides with: dashed, so both stay visible.
            chart.draw_series(DashedLineSeries::new(pts.clone(), 9, 7, style))?.label(s.name.clone()).legend(move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 22, y)], 6, 4, color.stroke_width(width)));
        } else {
            chart.draw_series(LineSeries::new(pts.clone(), style))?.label(s.name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(width)));
        }
        if s.markers && p.categories.is_none() {
            chart.draw_series(s.points.iter().map(|&(x, y)| Circle::new((tx(x), y), 4, color.filled())))?;
        }
        if let Some(err) = &s.err {
            let cap = (x1 - x0) * 0.006;
            for (&(x, y), &e) in s.points.iter().zip(err) {
                if e > 0.0 && e.is_finite() {
                    let x = tx(x);
                    chart.draw_series([
                        PathElement::new(vec![(x, y - e), (x, y + e)], color.stroke_width(1)),
                        PathElement::new(vec![(x - cap, y - e), (x + cap, y - e)], color.stroke_width(1)),
                        PathElement::new(vec![(x - cap, y + e), (x + cap, y + e)], color.stroke_width(1)),
                    ])?;
                }
            }
        }
    }
    if p.series.len() > 1 || p.series.iter().any(|s| !s.name.is_empty() && s.name != "total") {
        chart
            .configure_series_labels()
            .position(if p.y_range.is_some() { SeriesLabelPosition::LowerRight } else { SeriesLabelPosition::UpperRight })
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Whether series `i` runs on top of earlier ones for a tenth of its points
/// or more (the same x, a y within `tol`: half a percent of the y axis is
/// under a line's width at the plots' size). Such a series is drawn dashed
/// so the ones below it show between its dashes.
fn coincides_with_earlier(series: &[Series], i: usize, tol: f64) -> bool {
    let s = &series[i];
    let on_top = s.points.iter().enumerate().filter(|&(k, a)| series[..i].iter().any(|e| e.points.get(k).is_some_and(|b| a.0 == b.0 && (a.1 - b.1).abs() <= tol))).count();
    !s.points.is_empty() && on_top * 10 >= s.points.len()
}

fn draw_bar<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, p: &BarPlot) -> Result<(), DErr<DB>> {
    root.fill(&WHITE)?;
    let n = p.bars.len().max(1);
    let lim = p.bars.iter().map(|(_, v)| v.abs()).filter(|v| v.is_finite()).fold(1.0f64, f64::max) * 1.15;
    let label_w = p.bars.iter().map(|(l, _)| l.len()).max().unwrap_or(10).clamp(10, 48) as u32 * 8;
    // Counts never go below zero: no empty negative half then.
    let low = if p.bars.iter().all(|(_, v)| *v >= 0.0) { 0.0 } else { -lim };
    let mut chart =
        ChartBuilder::on(root).caption(&p.title, ("sans-serif", 22)).margin(14).x_label_area_size(50).y_label_area_size(label_w).build_cartesian_2d(low..lim, -0.5f64..(n as f64 - 0.5))?;
    let labels: Vec<String> = p.bars.iter().map(|(l, _)| l.clone()).collect();
    let yfmt = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
            labels[labels.len() - 1 - i as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_labels(n.min(40))
        .y_label_formatter(&yfmt)
        .x_label_formatter(&|v| tick(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    chart.draw_series(std::iter::once(PathElement::new(vec![(0.0, -0.5), (0.0, n as f64 - 0.5)], BLACK.stroke_width(1))))?;
    for (i, (_, v)) in p.bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        let v = if v.is_finite() { *v } else { 0.0 };
        let color = if v >= 0.0 { PALETTE[0] } else { PALETTE[3] };
        chart.draw_series(std::iter::once(Rectangle::new([(0.0, y - 0.35), (v, y + 0.35)], color.filled())))?;
    }
    root.present()?;
    Ok(())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, p: &Plot) -> Result<(), String> {
    match p {
        Plot::Line(l) => draw_line(&root, l),
        Plot::Bar(b) => draw_bar(&root, b),
    }
    .map_err(|e| format!("plot {:?}: {e:?}", p.title()))
}

fn height(p: &Plot) -> u32 {
    match p {
        Plot::Bar(b) => (120 + 28 * b.bars.len() as u32).clamp(260, 1400),
        _ => H,
    }
}

/// The plot as an SVG document.
pub fn svg_string(p: &Plot) -> Result<String, String> {
    fonts();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, height(p))).into_drawing_area();
        draw(root, p)?;
    }
    Ok(s)
}

/// The resolution of a PNG: 96 dots per inch gives the SVG's own size in
/// pixels (960 wide); 192 doubles both sides, for print.
pub const DEFAULT_DPI: u32 = 96;

/// Writes `base.png` (at `DEFAULT_DPI`) and `base.svg`.
pub fn write(p: &Plot, base: &Path) -> io::Result<()> {
    write_at(p, base, DEFAULT_DPI)
}

/// Writes `base.png` at `dpi` dots per inch and `base.svg`.
pub fn write_at(p: &Plot, base: &Path, dpi: u32) -> io::Result<()> {
    if let Some(d) = base.parent() {
        std::fs::create_dir_all(d)?;
    }
    let svg = svg_string(p).map_err(io::Error::other)?;
    std::fs::write(base.with_extension("png"), png_from_svg(&svg, dpi).map_err(io::Error::other)?)?;
    std::fs::write(base.with_extension("svg"), svg)
}

/// Rasterises an SVG document at `dpi` (the SVG's pixels are at 96 dpi).
pub fn png_from_svg(svg: &str, dpi: u32) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options { dpi: dpi as f32, ..Default::default() };
    let db = opt.fontdb_mut();
    db.load_font_data(FONT.to_vec());
    // plotters names the generic family; there is one font to resolve it to.
    db.set_sans_serif_family("DejaVu Sans");
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("svg: {e}"))?;
    let scale = dpi.max(1) as f32 / DEFAULT_DPI as f32;
    let size = tree.size().to_int_size().scale_by(scale).ok_or("png size")?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("png size")?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    let mut png = pixmap.encode_png().map_err(|e| format!("png: {e}"))?;
    set_png_dpi(&mut png, dpi);
    Ok(png)
}

/// Adds a pHYs chunk (pixels per metre) after IHDR, so image viewers and
/// word processors size the PNG as intended.
fn set_png_dpi(png: &mut Vec<u8>, dpi: u32) {
    // 8-byte signature, then IHDR: length (4) + type (4) + 13 bytes + CRC (4).
    const AFTER_IHDR: usize = 8 + 4 + 4 + 13 + 4;
    if png.len() < AFTER_IHDR || &png[12..16] != b"IHDR" {
        return;
    }
    let ppm = ((dpi as f64) / 0.0254).round() as u32;
    let mut body = Vec::with_capacity(13);
    body.extend_from_slice(b"pHYs");
    body.extend_from_slice(&ppm.to_be_bytes());
    body.extend_from_slice(&ppm.to_be_bytes());
    body.push(1); // unit: metre
    let mut chunk = Vec::with_capacity(21);
    chunk.extend_from_slice(&9u32.to_be_bytes());
    chunk.extend_from_slice(&body);
    chunk.extend_from_slice(&crc32(&body).to_be_bytes());
    png.splice(AFTER_IHDR..AFTER_IHDR, chunk);
}

/// CRC-32 (ISO-HDLC, as PNG chunks use).
fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(12.345), "12.3");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(2.5e6), "2.5e6");
    }

    /// Categories (scheduler names) have no order: their points are drawn
    /// alone, with no line between them.
    #[test]
    fn categorical_points_are_not_joined() {
        let series = vec![Series { name: "goodput".into(), points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)], ..Default::default() }];
        let cat = svg_string(&Plot::Line(LinePlot { series: series.clone(), categories: Some(vec!["minrtt".into(), "blest".into(), "ecf".into()]), ..Default::default() })).unwrap();
        let num = svg_string(&Plot::Line(LinePlot { series, ..Default::default() })).unwrap();
        // The numeric plot joins its points (and its legend shows a line):
        // polylines the categorical one does not draw.
        assert!(num.matches("<polyline").count() > cat.matches("<polyline").count(), "{cat}");
        assert!(cat.matches("<circle").count() >= 3, "the three points are drawn");
    }

    #[test]
    fn svg_has_title_axes_and_legend() {
        let p = Plot::Line(LinePlot {
            title: "Goodput".into(),
            x_label: "time (s)".into(),
            y_label: "goodput (Mbit/s)".into(),
            series: vec![
                Series { name: "sf0".into(), points: vec![(0.0, 1.0), (1.0, 2.0)], err: Some(vec![0.1, 0.2]), markers: true, ..Default::default() },
                Series { name: "sf1".into(), points: vec![(0.0, 2.0), (1.0, 3.0)], ..Default::default() },
            ],
            events: vec![(0.5, "wan2 down".into())],
            y_zero: true,
            ..Default::default()
        });
        let s = svg_string(&p).unwrap();
        for t in ["Goodput", "time (s)", "goodput (Mbit/s)", "sf0", "sf1", "wan2 down"] {
            assert!(s.contains(t), "svg lacks {t}");
        }
    }

    fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>, Vec<u8>) {
        let mut dec = png::Decoder::new(png_bytes);
        dec.set_transformations(png::Transformations::EXPAND);
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        let phys = r.info().pixel_dims.map(|d| d.xppu.to_be_bytes().to_vec()).unwrap_or_default();
        buf.truncate(info.buffer_size());
        let gray = buf.chunks(info.color_type.samples()).map(|p| (p[..3].iter().map(|&c| c as u32).sum::<u32>() / 3) as u8).collect();
        (info.width, info.height, gray, phys)
    }

    /// Dark columns of a text's bounding row band, as runs of ink: each
    /// glyph of "lllll" is a run of its own when letters are laid out by
    /// their advances (the old bitmap text merged "cl" into one shape).
    #[test]
    fn png_text_keeps_letters_apart_and_size_follows_dpi() {
        let svg = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="10" y="28" font-family="sans-serif" font-size="20">lllll</text></svg>"#);
        let (w, h, gray, phys) = decode(&png_from_svg(&svg, DEFAULT_DPI).unwrap());
        assert_eq!((w, h), (200, 40));
        assert_eq!(phys, 3780u32.to_be_bytes().to_vec(), "pHYs at 96 dpi");
        let inked: Vec<bool> = (0..w as usize).map(|x| (0..h as usize).any(|y| gray[y * w as usize + x] < 128)).collect();
        let runs = inked.windows(2).filter(|p| !p[0] && p[1]).count() + usize::from(inked[0]);
        assert_eq!(runs, 5, "five separate glyphs: {inked:?}");
        let (w2, h2, _, _) = decode(&png_from_svg(&svg, 192).unwrap());
        assert_eq!((w2, h2), (400, 80), "192 dpi doubles each side");
    }

    #[test]
    fn coincident_series_are_detected() {
        let line = |name: &str, f: &dyn Fn(usize) -> f64| Series { name: name.into(), points: (0..20).map(|i| (i as f64, f(i))).collect(), ..Default::default() };
        let a = line("a", &|_| 10.0);
        let b = line("b", &|i| if (5..10).contains(&i) { 0.0 } else { 10.0 }); // on a for 15 of 20
        let c = line("c", &|i| 30.0 - i as f64 * 2.0); // crosses a at one point
        let all = [a, b, c];
        assert!(!coincides_with_earlier(&all, 0, 0.01));
        assert!(coincides_with_earlier(&all, 1, 0.01));
        assert!(!coincides_with_earlier(&all, 2, 0.01), "one point in twenty in common is a crossing");
        let svg = svg_string(&Plot::Line(LinePlot { series: all.to_vec(), ..Default::default() })).unwrap();
        // Dashes are separate short polylines: far more than one per series.
        assert!(svg.matches("<polyline").count() > 10, "b is drawn dashed");
    }

}
