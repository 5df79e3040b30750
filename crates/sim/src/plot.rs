//! SVG figures for the experiments.
//!
//! A deliberately small API over `plotters`' SVG backend: a line chart of
//! named `(x, y)` series ([`line_chart`]) and a grouped bar chart over named
//! categories ([`bar_chart`]). The SVG backend writes text as `<text>`
//! elements, so no font files are needed, and the output depends only on the
//! data (same data ⇒ byte-identical file).

use crate::SimError;
use plotters::prelude::*;
use std::path::Path;

/// One named line (or one bar group) of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// One group of bars: one value per category, drawn in the group's colour.
#[derive(Clone, Debug, PartialEq)]
pub struct BarGroup {
    pub name: String,
    pub values: Vec<f64>,
}

const WIDTH: u32 = 800;
const HEIGHT: u32 = 500;

/// A fixed, colour-blind-friendly-ish palette, indexed by series position.
fn colour(i: usize) -> RGBColor {
    const P: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(0, 0, 0),
        RGBColor(120, 120, 120),
    ];
    P[i % P.len()]
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> SimError {
    SimError::Plot {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

/// Padded `[lo, hi]` range covering `vals` (never empty, never NaN).
fn range(vals: impl Iterator<Item = f64>, force_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if force_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo < 1e-12 {
        let pad = if hi.abs() > 1e-12 {
            hi.abs() * 0.1
        } else {
            1.0
        };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    (
        if force_zero && lo >= 0.0 {
            lo
        } else {
            lo - pad
        },
        hi + pad,
    )
}

/// Writes a line chart with markers to `path` (SVG). The y axis includes 0.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), SimError> {
    let (x0, x1) = range(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        false,
    );
    let (y0, y1) = range(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        true,
    );
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| plot_err(path, e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()
        .map_err(|e| plot_err(path, e))?;
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(|e| plot_err(path, e))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))
            .map_err(|e| plot_err(path, e))?;
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| plot_err(path, e))?;
    }
    root.present().map_err(|e| plot_err(path, e))?;
    Ok(())
}

/// Writes a grouped bar chart to `path` (SVG): for every category, one bar
/// per group side by side. Groups shorter than `categories` leave gaps.
pub fn bar_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    categories: &[String],
    groups: &[BarGroup],
) -> Result<(), SimError> {
    let n = categories.len().max(1);
    let (y0, y1) = range(groups.iter().flat_map(|g| g.values.iter().copied()), true);
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
        .map_err(|e| plot_err(path, e))?;
    let cats = categories.to_vec();
    let fmt = move |x: &f64| {
        let r = x.round();
        if (x - r).abs() < 1e-6 && r >= 0.0 {
            cats.get(r as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.min(40))
        .x_label_formatter(&fmt)
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()
        .map_err(|e| plot_err(path, e))?;
    let g = groups.len().max(1) as f64;
    let width = 0.8 / g;
    for (gi, grp) in groups.iter().enumerate() {
        let c = colour(gi);
        let bars: Vec<Rectangle<(f64, f64)>> = grp
            .values
            .iter()
            .enumerate()
            .take(n)
            .filter(|(_, v)| v.is_finite())
            .map(|(ci, &v)| {
                let left = ci as f64 - 0.4 + gi as f64 * width;
                Rectangle::new([(left, 0.0), (left + width, v)], c.filled())
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(|e| plot_err(path, e))?
            .label(grp.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    if !groups.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| plot_err(path, e))?;
    }
    root.present().map_err(|e| plot_err(path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_bar_charts_are_written_and_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let s = vec![
            Series::new("a", vec![(1.0, 2.0), (2.0, 3.0), (3.0, 2.5)]),
            Series::new("b", vec![(1.0, 1.0), (2.0, f64::NAN), (3.0, 0.5)]),
        ];
        let p1 = dir.path().join("l1.svg");
        let p2 = dir.path().join("l2.svg");
        line_chart(&p1, "t", "x", "y", &s).unwrap();
        line_chart(&p2, "t", "x", "y", &s).unwrap();
        let a = std::fs::read(&p1).unwrap();
        assert_eq!(a, std::fs::read(&p2).unwrap());
        assert!(String::from_utf8(a).unwrap().contains("<svg"));
        let b = dir.path().join("b.svg");
        bar_chart(
            &b,
            "bars",
            "hour",
            "%",
            &["0".into(), "1".into()],
            &[
                BarGroup {
                    name: "ours".into(),
                    values: vec![1.0, 2.0],
                },
                BarGroup {
                    name: "paper".into(),
                    values: vec![1.5],
                },
            ],
        )
        .unwrap();
        assert!(std::fs::metadata(&b).unwrap().len() > 100);
        // Empty input still yields a valid figure.
        line_chart(&dir.path().join("e.svg"), "e", "x", "y", &[]).unwrap();
    }
}
