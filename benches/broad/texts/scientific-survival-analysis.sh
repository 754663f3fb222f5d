#!/usr/bin/env bash
# scientific-survival-analysis: Terry M. Therneau's documentation of survival analysis (time-to-
# event statistics in medical research) for the R package survival, nine papers written at the
# Mayo Clinic, three of them with Cynthia Crowson and Elizabeth Atkinson, in this order: "A
# package for survival analysis in R" (the long overview, in chapters: survival curves, Kaplan-
# Meier and Aalen-Johansen estimates, Cox models, accelerated failure time models, tied event
# times, multi-state models, and an appendix of changes in version 3), "Using Time Dependent
# Covariates and Time Dependent Coefficients in the Cox Model", "Multi-state models and
# competing risks", "Adjusted Survival Curves", "Population contrasts", "Concordance", "Software
# validation", "Spline terms in a Cox model" and "Discrimination and Calibration", about 61k
# words. They argue from clinical data (Mayo Clinic studies of monoclonal gammopathy, primary
# biliary cirrhosis and free light chains, a myeloid leukaemia trial, the Stanford heart
# transplant data). The LaTeX (Sweave) sources are the vignettes in Debian's r-cran-survival
# 3.5-3-1 (amd64) package (GPL-2, as Debian's copyright file says). This is a different field,
# author and package from the two other scientific texts (epidemic surveillance, econometric
# computing); a public-domain classic science book was looked for, but none ships in a Debian or
# PyPI package found here. The extraction is benches/broad/latex_text.py, the LaTeX-to-text
# converter of the three scientific texts, with the report class of the overview (chapters, with sections, figures,
# tables and equations numbered within chapters: "2.3", "figure 2.2"). It keeps each paper's
# title, authors, abstract and sections, in prose: R code chunks, verbatim code, figures and
# tables (with their captions) and the bibliography are dropped; section, figure, table and
# equation references are resolved to the numbers LaTeX prints (one reference whose label the
# source lacks reads "??", as LaTeX prints it); citations become their bibliography keys in
# brackets ("[Escobar92]"); values that R computes while the PDF is built (\Sexpr) become "[…]";
# mathematics is kept as plain Unicode text ("Ŝ_KM(t)"). Headings stand as paragraphs of their
# own; paragraphs are separated by blank lines.
set -euo pipefail

out=${1:?usage: scientific-survival-analysis.sh OUTDIR}
name=scientific-survival-analysis
pkg=r-cran-survival
ver=3.5-3-1
deb=${pkg}_${ver}_amd64.deb
sha=f7b474e37620b54bd0112b3847bbad0a6b75b9c2121d6936548dd74ebd4003d5

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg:amd64=$ver"

extract_deb "$deb"

python3 "$(dirname "$0")/../latex_text.py" "$name" "$tmp/usr/lib/R/library/survival/doc" "$out/$name.txt" 1 1000 \
    survival.Rnw timedep.Rnw compete.Rnw adjcurve.Rnw population.Rnw concordance.Rnw \
    validate.Rnw splines.Rnw discrim.Rnw

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
