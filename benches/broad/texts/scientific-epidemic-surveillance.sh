#!/usr/bin/env bash
# scientific-epidemic-surveillance: seven research papers on the statistical monitoring and
# modelling of infectious disease surveillance data, by the authors of the R package
# surveillance (Michael Höhle, Andrea Riebler, Michaela Paul, Valentin Wimmer, Maëlle Salmon,
# Dirk Schumacher, Sebastian Meyer, Leonhard Held): "Getting started with outbreak detection"
# (2007), "algo.glrnb: Count data regression charts using the generalized likelihood ratio
# statistic" (2008), "Monitoring Count Time Series in R: Aberration Detection in Public Health
# Surveillance" (Journal of Statistical Software 70(10), 2016; includes the Robert Koch
# Institute's detection system), "hhh4: An endemic-epidemic modelling framework for infectious
# disease counts" (2016), and three parts of Meyer, Held and Höhle's JSS article on
# spatio-temporal epidemic modelling: hhh4 for areal counts (measles in Weser-Ems), twinstim for
# point patterns (invasive meningococcal disease in Germany) and twinSIR for a fixed population
# (the 1861 Hagelloch measles outbreak). They argue from surveillance data and simulations.
# They ship as the LaTeX (Sweave/knitr) sources of the package's vignettes in Debian's
# r-cran-surveillance 1.20.3-1 (amd64; GPL-2 like the package), in the order above. A
# public-domain 19th-century scientific book was the first choice for this kind, but none ships
# in a Debian or PyPI package that could be found, so the scientific kind is served by modern
# research articles (this text and scientific-econometric-computing, which shares the extractor).
# The extraction keeps each paper's title, authors, abstract, keywords and sections, in prose:
# R code chunks, verbatim code, figures and tables (with their captions), appendices of R code
# and the bibliography are dropped; section, figure, table and equation references are resolved
# to the numbers LaTeX prints; citations become their bibliography keys in brackets
# ("[hoehle-2007]"); values that R computes while the PDF is built (\Sexpr) become "[…]";
# mathematics is kept as plain Unicode text ("Y_t ~ Po(μ_t)"). Headings stand as paragraphs of
# their own; paragraphs are separated by blank lines.
# The conversion is benches/broad/latex_text.py, shared by the scientific texts.
set -euo pipefail

out=${1:?usage: scientific-epidemic-surveillance.sh OUTDIR}
name=scientific-epidemic-surveillance
pkg=r-cran-surveillance
ver=1.20.3-1
deb=${pkg}_${ver}_amd64.deb
sha=a8c2260f22dab80a8a6a6ad212bed8166c555dbbab49eb719a674649667f5f18

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$deb" "$sha" apt-get download "$pkg:amd64=$ver"

extract_deb "$deb"

python3 "$(dirname "$0")/../latex_text.py" "$name" "$tmp/usr/lib/R/site-library/surveillance/doc" "$out/$name.txt" 0 200 \
    surveillance.Rnw glrnb.Rnw monitoringCounts.Rnw hhh4.Rnw hhh4_spacetime.Rnw twinstim.Rnw \
    twinSIR.Rnw

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
