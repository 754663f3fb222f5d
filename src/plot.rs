//! `seamcut plot`: one document's similarity curve (cosine between neighbouring sentences)
//! with each chunker's cuts marked and a threshold drawn, as SVG, and as PNG through resvg.
//!
//! Hand-written SVG rather than plotters: plotters lays out text through system fonts
//! (font-kit) and fails without them, and a headless machine may have none; this is a
//! polyline, some markers and a legend. Every cut is one `<path class="cut cut-NAME">`, so a
//! test (or a script) can count them. [`png`] rasterises that same SVG, so the two never
//! disagree; its text uses the system's sans-serif font, and where no font is installed the
//! PNG still has the curve and the cuts, without labels.

use std::fmt::Write;

/// One chunker's cuts: chunk starts (sentence indices), as rules return them.
#[derive(Debug, Clone)]
pub struct Cuts {
    pub name: String,
    pub starts: Vec<usize>,
}

const COLORS: [&str; 6] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Render the plot. `sims[i]` is the similarity between sentence `i − 1` and `i`
/// (`sims[0]` is not drawn); `threshold` is drawn as a dashed line with its label.
#[must_use]
pub fn svg(title: &str, sims: &[f64], cuts: &[Cuts], threshold: Option<(f64, &str)>) -> String {
    let n = sims.len().max(2);
    let (w, h) = (1200.0_f64, 520.0_f64);
    let (left, right, top) = (96.0, 20.0, 40.0);
    let lanes = cuts.len() as f64 * 16.0;
    let bottom = 60.0 + lanes;
    let (pw, ph) = (w - left - right, h - top - bottom);
    let (lo, hi) =
        sims.iter().skip(1).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    let (lo, hi) = if lo.is_finite() {
        (lo.min(0.0).min(threshold.map_or(lo, |t| t.0)), hi.max(1.0))
    } else {
        (0.0, 1.0)
    };
    let x = |i: f64| left + pw * i / (n - 1) as f64;
    let y = |v: f64| top + ph * (1.0 - (v - lo) / (hi - lo).max(1e-9));
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let _ = writeln!(s, r#"<text x="{left}" y="22" font-size="15">{}</text>"#, esc(title));
    // Axes and a few gridlines.
    for k in 0..=4 {
        let v = lo + (hi - lo) * f64::from(k) / 4.0 + 0.0; // + 0.0 turns -0.0 into 0.0
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#dddddd"/>"##,
            left + pw,
            y(v),
            y(v)
        );
        let _ =
            writeln!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{v:.2}</text>"#, left - 6.0, y(v) + 4.0);
    }
    let _ =
        writeln!(s, r#"<text x="{}" y="{}" text-anchor="middle">sentence</text>"#, left + pw / 2.0, h - 8.0);
    let _ = writeln!(
        s,
        r#"<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">cosine(previous, sentence)</text>"#,
        top + ph / 2.0,
        top + ph / 2.0
    );
    // The curve.
    let pts: Vec<String> =
        sims.iter().enumerate().skip(1).map(|(i, &v)| format!("{:.1},{:.1}", x(i as f64), y(v))).collect();
    let _ = writeln!(
        s,
        r##"<polyline class="similarity" fill="none" stroke="#333333" stroke-width="1" points="{}"/>"##,
        pts.join(" ")
    );
    if let Some((t, label)) = threshold {
        let _ = writeln!(
            s,
            r##"<line class="threshold" x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#777777" stroke-dasharray="6 4"/>"##,
            left + pw,
            y(t),
            y(t)
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{:.1}" text-anchor="end" fill="#555555">{} ({t:.3})</text>"##,
            left + pw,
            y(t) - 4.0,
            esc(label)
        );
    }
    // One lane of markers per chunker under the plot, and a faint line at each cut.
    for (c, cut) in cuts.iter().enumerate() {
        let color = COLORS[c % COLORS.len()];
        let lane = top + ph + 24.0 + c as f64 * 16.0;
        let class = esc(&cut.name.replace(' ', "-"));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end" fill="{color}">{}</text>"#,
            left - 6.0,
            lane + 4.0,
            esc(&cut.name)
        );
        for &st in cut.starts.iter().filter(|&&st| st > 0) {
            let cx = x(st as f64 - 0.5);
            let _ = writeln!(
                s,
                r#"<line x1="{cx:.1}" x2="{cx:.1}" y1="{top}" y2="{:.1}" stroke="{color}" stroke-opacity="0.25"/>"#,
                top + ph
            );
            let _ = writeln!(
                s,
                r#"<path class="cut cut-{class}" d="M{cx:.1},{:.1} l-4,8 h8 z" fill="{color}"/>"#,
                lane - 4.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Rasterise an SVG from [`svg`] to PNG bytes at `scale` (1.0 = the SVG's own size).
pub fn png(svg: &str, scale: f32) -> crate::Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // fontdb maps the generic `sans-serif` to Arial, which Linux machines seldom have: use
    // the first common sans family installed, else any family at all.
    let installed: Vec<String> =
        db.faces().flat_map(|f| f.families.iter().map(|(name, _)| name.clone())).collect();
    let sans = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica", "FreeSans"]
        .iter()
        .map(|s| (*s).to_string())
        .find(|s| installed.contains(s))
        .or_else(|| installed.first().cloned());
    if let Some(family) = sans {
        db.set_sans_serif_family(family);
    }
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| crate::Error::Internal(format!("SVG: {e}")))?;
    let size = tree.size().to_int_size().scale_by(scale).ok_or_else(|| {
        crate::Error::Config(format!("PNG scale {scale} gives an empty or oversized image"))
    })?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| crate::Error::Config(format!("cannot allocate a {size:?} PNG")))?;
    resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| crate::Error::Internal(format!("PNG: {e}")))
}

/// The plot of one document: the curve of neighbouring-sentence similarity under `base`'s
/// model, and the cuts of the chunker each spec builds. Returns the SVG and the cuts.
///
/// # Errors
/// A chunker's build or model error.
pub fn document(
    title: &str,
    text: &str,
    base: &crate::spec::ChunkerSpec,
    specs: &[crate::spec::ChunkerSpec],
) -> crate::Result<(String, Vec<Cuts>)> {
    use crate::chunkers::ChunkerKind;
    let seg = crate::segment::Segmenter::default();
    let sentences = seg.sentences(text);
    let starts: Vec<usize> = sentences.iter().map(|s| s.start).collect();
    let model = base.load_model()?;
    let texts: Vec<&str> = sentences.iter().map(|s| s.text(text)).collect();
    let (emb, _) = crate::embed::embed_texts(model.embedder.as_ref(), &texts, Default::default())?;
    let band = crate::similarity::band(&emb.data, emb.dim, 1, &base.compute()?)?;
    let sims: Vec<f64> =
        (0..texts.len()).map(|i| if i == 0 { 0.0 } else { f64::from(band.sim(i, i - 1)) }).collect();
    let mut cuts = Vec::new();
    for spec in specs {
        let c = spec.build()?;
        let chunk_starts: Vec<usize> = c.chunk(text)?.iter().map(|s| s.start).collect();
        let units = crate::eval::segmentation::unit_starts_of(&chunk_starts, &starts);
        cuts.push(Cuts { name: c.name().to_string(), starts: units });
    }
    let threshold = match specs.iter().find(|s| s.chunker == ChunkerKind::Maxmin) {
        Some(s) => Some((
            s.resolved_hard_thr()? / s.maxmin.init_const,
            "Max–Min first-pair threshold hard_thr/init_const",
        )),
        None => None,
    };
    let title = format!(
        "{title} — {}, {}",
        crate::wording::plural(texts.len() as u64, "sentence"),
        model.embedder.describe()
    );
    Ok((svg(&title, &sims, &cuts, threshold), cuts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_is_the_svg_rasterised() {
        let sims: Vec<f64> = (0..40).map(|i| 0.5 + 0.4 * (f64::from(i) / 3.0).sin()).collect();
        let cuts = [Cuts { name: "maxmin".into(), starts: vec![0, 10, 25] }];
        let s = svg("test", &sims, &cuts, Some((0.4, "threshold")));
        let bytes = png(&s, 1.0).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // The IHDR chunk holds width and height, big-endian.
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((w, h), (1200, 520));
        let big = png(&s, 2.0).unwrap();
        assert_eq!(u32::from_be_bytes(big[16..20].try_into().unwrap()), 2400);
        // A cut marker is drawn in its colour: decode and look for that red.
        let pixmap = resvg::tiny_skia::Pixmap::decode_png(&bytes).unwrap();
        let red = pixmap.pixels().iter().filter(|p| p.red() > 200 && p.green() < 60 && p.blue() < 60).count();
        assert!(red > 20, "{red} red pixels");
        assert!(png(&s, 0.0).is_err());
    }
}
