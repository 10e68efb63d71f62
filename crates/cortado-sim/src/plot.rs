//! Hit-ratio curves: hit ratio against cache size, one line per policy, one panel per trace,
//! drawn to PNG or SVG.
//!
//! [`draw`] writes the chart to a path whose extension picks the format ([`ImageFormat`]); text
//! needs a TrueType font found at run time ([`load_font`]), and a missing one is a
//! [`PlotError::NoFont`] that tells the user to set `CORTADO_FONT`, never a panic.
//!
//! # Design
//!
//! - **Fonts at run time.** plotters' `ab_glyph` backend measures and draws text with a font
//!   registered by the program; it has no system font lookup. Both formats need it: the SVG
//!   backend writes `<text>` elements but the chart layout still measures every label. So
//!   [`load_font`] takes `CORTADO_FONT` if set, otherwise the first readable file of
//!   [`FONT_PATHS`] (DejaVu, Liberation, Noto, FreeFont on Linux; Arial on macOS and Windows),
//!   and registers it once per process as `sans-serif`. No font ships with the crate.
//! - **Axes.** Cache sizes often span orders of magnitude (1 % to 25 % of the keys, or
//!   1,000 to 1,000,000 entries), so the x axis is logarithmic when the largest size exceeds
//!   [`LOG_SPAN`] (10) times the smallest, linear otherwise. The y axis starts at 0 so curves of
//!   different panels read alike, and ends a little above the highest point.
//! - **Stable colours.** A policy keeps its colour across panels (Tableau 10, then Tableau 20's
//!   lighter companions, in the order the policies were given: every policy of the registry has
//!   its own), and the offline optimum `opt` is drawn in black: it is the ceiling,
//!   not a competitor. `opt-bypass` takes a palette colour, so the legend tells the two apart.
//! - **Panels.** Several traces share one image in a grid of about square shape
//!   (`ceil(sqrt(n))` columns), [`PANEL`] pixels each.
//!
//! # References
//!
//! 1. plotters (`style::register_font`, `ab_glyph` feature), 0.3.
//! 2. M. Stone: the Tableau 10 and Tableau 20 palettes (2016).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::replay::{Outcome, Trace};

/// Pixels of one trace's panel.
pub const PANEL: (u32, u32) = (720, 480);

/// Sizes spanning more than this factor get a logarithmic axis.
pub const LOG_SPAN: f64 = 10.0;

/// The environment variable naming a font file to use.
pub const FONT_VAR: &str = "CORTADO_FONT";

/// Fonts tried in order when [`FONT_VAR`] is not set.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/google-noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/gnu-free/FreeSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Tableau 10, in its usual order, then the lighter companions Tableau 20 pairs with them: every
/// policy of the registry gets its own colour on one chart.
const PALETTE: [RGBColor; 20] = [
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
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
    RGBColor(255, 152, 150),
    RGBColor(197, 176, 213),
    RGBColor(196, 156, 148),
    RGBColor(247, 182, 210),
    RGBColor(199, 199, 199),
    RGBColor(219, 219, 141),
    RGBColor(158, 218, 229),
];

/// An image format, from the output file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// `.png`: a bitmap.
    Png,
    /// `.svg`: vector graphics.
    Svg,
}

impl ImageFormat {
    /// The format named by `path`'s extension (case-insensitive).
    pub fn from_path(path: &Path) -> Result<ImageFormat, PlotError> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("png") => Ok(ImageFormat::Png),
            Some("svg") => Ok(ImageFormat::Svg),
            _ => Err(PlotError::UnknownExtension {
                path: path.to_owned(),
            }),
        }
    }
}

/// Why a chart could not be drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlotError {
    /// The output name ends in neither `.png` nor `.svg`.
    UnknownExtension {
        /// The path given.
        path: PathBuf,
    },
    /// No font file was found.
    NoFont,
    /// The font file could not be read or is not a font.
    BadFont {
        /// The font file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// There is nothing to plot.
    Empty,
    /// Drawing or writing the image failed.
    Draw {
        /// The output file.
        path: PathBuf,
        /// The backend's message.
        reason: String,
    },
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::UnknownExtension { path } => write!(
                f,
                "{}: the plot file must end in .png or .svg",
                path.display()
            ),
            PlotError::NoFont => write!(
                f,
                "no font found for the plot's text (tried {}); set {FONT_VAR} to a .ttf file",
                FONT_PATHS.join(", ")
            ),
            PlotError::BadFont { path, reason } => write!(
                f,
                "font {}: {reason}; set {FONT_VAR} to another .ttf file",
                path.display()
            ),
            PlotError::Empty => write!(f, "nothing to plot"),
            PlotError::Draw { path, reason } => write!(f, "{}: {reason}", path.display()),
        }
    }
}

impl std::error::Error for PlotError {}

/// Finds a font and registers it for plotters, once per process; returns its path.
pub fn load_font() -> Result<PathBuf, PlotError> {
    static FONT: OnceLock<Result<PathBuf, PlotError>> = OnceLock::new();
    FONT.get_or_init(|| {
        let path = match std::env::var_os(FONT_VAR) {
            Some(path) => PathBuf::from(path),
            None => FONT_PATHS
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
                .ok_or(PlotError::NoFont)?,
        };
        let bytes = std::fs::read(&path).map_err(|error| PlotError::BadFont {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        // plotters keeps fonts for the whole process; leaking one file once is that lifetime.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| {
            PlotError::BadFont {
                path: path.clone(),
                reason: "not a TrueType or OpenType font".into(),
            }
        })?;
        Ok(path)
    })
    .clone()
}

/// Draws hit ratio against cache size for every trace with outcomes, to `path` (PNG or SVG).
pub fn draw(path: &Path, traces: &[Trace], outcomes: &[Outcome]) -> Result<(), PlotError> {
    let format = ImageFormat::from_path(path)?;
    load_font()?;
    let shown: Vec<usize> = (0..traces.len())
        .filter(|&t| outcomes.iter().any(|o| o.trace == t))
        .collect();
    if shown.is_empty() {
        return Err(PlotError::Empty);
    }
    let cols = (shown.len() as f64).sqrt().ceil() as usize;
    let rows = shown.len().div_ceil(cols);
    let size = (PANEL.0 * cols as u32, PANEL.1 * rows as u32);
    let chart = Chart {
        traces,
        outcomes,
        shown: &shown,
        grid: (rows, cols),
        path,
    };
    match format {
        ImageFormat::Png => chart.render(BitMapBackend::new(path, size).into_drawing_area()),
        ImageFormat::Svg => chart.render(SVGBackend::new(path, size).into_drawing_area()),
    }
}

/// One image's inputs.
struct Chart<'a> {
    traces: &'a [Trace],
    outcomes: &'a [Outcome],
    shown: &'a [usize],
    grid: (usize, usize),
    path: &'a Path,
}

/// One policy's curve on one trace.
struct Curve {
    policy: &'static str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

impl Chart<'_> {
    fn fail(&self, error: impl fmt::Display) -> PlotError {
        PlotError::Draw {
            path: self.path.to_owned(),
            reason: error.to_string(),
        }
    }

    fn render<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        root.fill(&WHITE).map_err(|e| self.fail(e))?;
        let mut policies: Vec<&'static str> = Vec::new();
        for o in self.outcomes {
            if !policies.contains(&o.policy) {
                policies.push(o.policy);
            }
        }
        let panels = root.split_evenly(self.grid);
        for (&t, area) in self.shown.iter().zip(&panels) {
            let curves = self.curves(t, &policies);
            let (lo, hi) = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.0))
                .fold((f64::INFINITY, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
            let top = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.1))
                .fold(0f64, f64::max);
            let y = 0.0..(top * 1.08 + 1.0).min(100.0);
            let title = &self.traces[t].name;
            if hi > lo * LOG_SPAN {
                let (lo, hi) = (lo / 1.2, hi * 1.2);
                let x = (lo..hi).log_scale().with_key_points(log_ticks(lo, hi));
                self.panel(area, title, x, y, &curves)?;
            } else {
                let pad = ((hi - lo) * 0.05).max(1.0);
                self.panel(area, title, (lo - pad).max(0.0)..hi + pad, y, &curves)?;
            }
        }
        root.present().map_err(|e| self.fail(e))
    }

    fn curves(&self, trace: usize, policies: &[&'static str]) -> Vec<Curve> {
        let mut curves = Vec::new();
        let mut next_color = 0;
        for &policy in policies {
            let color = if policy == "opt" {
                BLACK
            } else {
                next_color += 1;
                PALETTE[(next_color - 1) % PALETTE.len()]
            };
            let mut points: Vec<(f64, f64)> = self
                .outcomes
                .iter()
                .filter(|o| o.trace == trace && o.policy == policy)
                .map(|o| (o.size as f64, 100.0 * o.hit_ratio()))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !points.is_empty() {
                curves.push(Curve {
                    policy,
                    color,
                    points,
                });
            }
        }
        curves
    }

    fn panel<DB, X>(
        &self,
        area: &DrawingArea<DB, Shift>,
        title: &str,
        x: X,
        y: std::ops::Range<f64>,
        curves: &[Curve],
    ) -> Result<(), PlotError>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(x, y)
            .map_err(|e| self.fail(e))?;
        chart
            .configure_mesh()
            .x_desc("cache size (entries)")
            .y_desc("hit ratio (%)")
            .x_labels(8)
            .y_labels(8)
            .max_light_lines(1)
            .x_label_formatter(&|v| compact(*v))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(|e| self.fail(e))?;
        for curve in curves {
            let color = curve.color;
            chart
                .draw_series(LineSeries::new(
                    curve.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| self.fail(e))?
                .label(curve.policy)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    curve
                        .points
                        .iter()
                        .map(|&p| Circle::new(p, 3, color.filled())),
                )
                .map_err(|e| self.fail(e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|e| self.fail(e))
    }
}

/// Ticks at 1, 2 and 5 times the powers of ten within `lo..=hi`.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powi(lo.max(1.0).log10().floor() as i32);
    while decade <= hi {
        for step in [1.0, 2.0, 5.0] {
            let tick = decade * step;
            if (lo..=hi).contains(&tick) {
                ticks.push(tick);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// A tick label: `950`, `1k`, `1.5k`, `10.5k`, `1.05M`.
///
/// A linear axis puts ticks at steps finer than the unit (every 500 over 10,000..12,000, every
/// 0.5 over 1..2), so a label shows as many decimals as its tick needs, up to the unit's
/// resolution: rounded to the unit, two ticks would share a label and name the wrong value.
fn compact(v: f64) -> String {
    let (value, unit, most) = if v >= 1e6 {
        (v / 1e6, "M", 6)
    } else if v >= 1e3 {
        (v / 1e3, "k", 3)
    } else {
        (v, "", 3)
    };
    let decimals = (0..most)
        .find(|&d| {
            let scaled = value * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(most);
    let text = format!("{value:.decimals$}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_format_from_extension() {
        assert_eq!(
            ImageFormat::from_path(Path::new("a/b.PNG")),
            Ok(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::from_path(Path::new("b.svg")),
            Ok(ImageFormat::Svg)
        );
        let err = ImageFormat::from_path(Path::new("b.jpg")).unwrap_err();
        assert!(err.to_string().contains(".png or .svg"), "{err}");
        assert!(ImageFormat::from_path(Path::new("plot")).is_err());
    }

    #[test]
    fn no_font_error_names_the_variable() {
        assert!(PlotError::NoFont.to_string().contains(FONT_VAR));
    }

    #[test]
    fn curves_opt_and_opt_bypass_told_apart_by_colour() {
        // Both optima were drawn in black: two black lines and two black legend entries.
        let outcome = |policy| Outcome {
            trace: 0,
            trace_name: "t".into(),
            policy,
            size: 10,
            percent: None,
            requests: 4,
            hits: 1,
            seconds: 0.0,
            cpu_seconds: None,
        };
        let outcomes = [outcome("lru"), outcome("opt"), outcome("opt-bypass")];
        let chart = Chart {
            traces: &[],
            outcomes: &outcomes,
            shown: &[0],
            grid: (1, 1),
            path: Path::new("t.svg"),
        };
        let curves = chart.curves(0, &["lru", "opt", "opt-bypass"]);
        let colours: Vec<RGBColor> = curves.iter().map(|c| c.color).collect();
        assert_eq!(colours.len(), 3);
        assert_eq!(colours[1], BLACK);
        assert!(
            colours[0] != colours[1] && colours[0] != colours[2] && colours[1] != colours[2],
            "{colours:?}"
        );
    }

    #[test]
    fn log_ticks_one_two_five_within_range() {
        assert_eq!(log_ticks(12.0, 600.0), [20.0, 50.0, 100.0, 200.0, 500.0]);
        assert_eq!(log_ticks(0.5, 3.0), [1.0, 2.0]);
    }

    #[test]
    fn compact_labels() {
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(1_000.0), "1k");
        assert_eq!(compact(1_500.0), "1.5k");
        assert_eq!(compact(1_000_000.0), "1M");
        assert_eq!(compact(31_533.0), "31.533k");
        assert_eq!(compact(3_153_310.0), "3.15331M");
    }

    #[test]
    fn compact_ticks_between_round_values_labelled_distinctly() {
        // A linear axis over sizes 10,000..12,000 has ticks every 500: they were labelled
        // `10k 10k 11k 12k 12k`; over sizes 1 and 2, every 0.5: `0 0 1 2 2 2 3`.
        assert_eq!(compact(10_500.0), "10.5k");
        assert_eq!(compact(11_500.0), "11.5k");
        assert_eq!(compact(1_050_000.0), "1.05M");
        assert_eq!(compact(1_500.0), "1.5k");
        assert_eq!(compact(1_250.0), "1.25k");
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(2.5), "2.5");
        assert_eq!(compact(0.1 + 0.2), "0.3");
    }

    #[test]
    fn curves_every_policy_at_once_distinct_colors() {
        // All 16 policies on one chart: with 10 colours for the 15 that are not `opt`, five
        // pairs (wtinylfu and s3fifo, lru and clock...) were drawn and listed alike.
        let traces = [Trace::from_keys(
            "t".into(),
            PathBuf::from("t.keys"),
            vec![1, 2, 1],
        )];
        let outcomes: Vec<Outcome> = crate::policy::POLICIES
            .iter()
            .map(|&policy| Outcome {
                trace: 0,
                trace_name: "t".into(),
                policy,
                size: 2,
                percent: None,
                requests: 3,
                hits: 1,
                seconds: 0.0,
                cpu_seconds: None,
            })
            .collect();
        let chart = Chart {
            traces: &traces,
            outcomes: &outcomes,
            shown: &[0],
            grid: (1, 1),
            path: Path::new("t.svg"),
        };
        let curves = chart.curves(0, crate::policy::POLICIES);
        assert_eq!(curves.len(), crate::policy::POLICIES.len());
        for (i, a) in curves.iter().enumerate() {
            for b in &curves[i + 1..] {
                let rgb = |c: &Curve| (c.color.0, c.color.1, c.color.2);
                assert_ne!(rgb(a), rgb(b), "{} and {}", a.policy, b.policy);
            }
        }
    }
}
