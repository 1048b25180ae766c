//! Plots (plotters): line charts with optional error bars and event
//! markers, CDFs and horizontal bar charts, each written as PNG and SVG, or
//! rendered to an SVG string for the HTML report. Text in PNGs is drawn
//! with the bundled DejaVu Sans (assets/), so no system fonts are needed.

use std::io;
use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
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
    for s in &p.series {
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
        chart.draw_series(LineSeries::new(pts.clone(), style))?.label(s.name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(width)));
        if s.markers {
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

/// Writes `base.png` and `base.svg`.
pub fn write(p: &Plot, base: &Path) -> io::Result<()> {
    fonts();
    if let Some(d) = base.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(base.with_extension("svg"), svg_string(p).map_err(io::Error::other)?)?;
    let png = base.with_extension("png");
    let root = BitMapBackend::new(&png, (W, height(p))).into_drawing_area();
    draw(root, p).map_err(io::Error::other)?;
    Ok(())
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
}
