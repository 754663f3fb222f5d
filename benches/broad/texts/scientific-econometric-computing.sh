#!/usr/bin/env bash
# scientific-econometric-computing: five research papers on computational methods for
# econometrics and time series in R by Achim Zeileis and co-authors, in the order of their
# first publication: "strucchange: An R Package for Testing for Structural Change in Linear
# Regression Models" (Zeileis, Leisch, Hornik, Kleiber; Journal of Statistical Software 2002),
# "Econometric Computing with HC and HAC Covariance Matrix Estimators" (Zeileis; JSS 2004),
# "zoo: An S3 Class and Methods for Indexed Totally Ordered Observations" (Zeileis,
# Grothendieck; JSS 2005), "Object-Oriented Computation of Sandwich Estimators" (Zeileis; JSS
# 2006) and "Various Versatile Variances: An Object-Oriented Implementation of Clustered
# Covariances in R" (Zeileis, Köll, Graham; JSS 2020), each in the revised form that its
# package ships as a vignette. They argue from simulation studies and from economic data (US
# income and consumption, investment, patents, financial series). The LaTeX (Sweave) sources
# come from three Debian packages: r-cran-strucchange 1.5-3-1 (amd64), r-cran-sandwich 3.0-2-1
# and r-cran-zoo 1.8-11-1 (amd64) (GPL-2 or GPL-3, like the packages). A public-domain
# 19th-century scientific book was the first choice for this kind, but none ships in a Debian
# or PyPI package that could be found, so the scientific kind is served by modern research
# articles (this text and scientific-epidemic-surveillance, whose extractor this is too).
# The extraction keeps each paper's title, authors, abstract, keywords and sections, in prose:
# R code chunks, verbatim code, figures and tables (with their captions), appendices of R code,
# software versions and reference cards, and the bibliography are dropped; section, figure,
# table and equation references are resolved to the numbers LaTeX prints; citations become their
# bibliography keys in brackets ("[Z:Andrews:1993]"); values that R computes while the PDF is
# built (\Sexpr) become "[…]"; mathematics is kept as plain Unicode text ("y_i = x_iᵀ β_i +
# u_i"). Headings stand as paragraphs of their own; paragraphs are separated by blank lines.
# The conversion is benches/broad/latex_text.py, shared by the scientific texts.
set -euo pipefail

out=${1:?usage: scientific-econometric-computing.sh OUTDIR}
name=scientific-econometric-computing
strucchange=r-cran-strucchange_1.5-3-1_amd64.deb
sandwich=r-cran-sandwich_3.0-2-1_all.deb
zoo=r-cran-zoo_1.8-11-1_amd64.deb

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
mkdir -p "$out"
fetch "$name" "$strucchange" 0be3f44609be4e90be3f295880dbcaebf57e5a918b68eb11f18c0900b2a4874d \
    apt-get download "r-cran-strucchange:amd64=1.5-3-1"
fetch "$name" "$sandwich" a90e7d3c69c70a6d73e4bc63d1f20eae3b4a73866d5266246dd5b3d980c60d79 \
    apt-get download "r-cran-sandwich=3.0-2-1"
fetch "$name" "$zoo" 81f27bbee835d9d44d2a410211c813d2da6c2d71f1e37d71b019ab259e182b9b \
    apt-get download "r-cran-zoo:amd64=1.8-11-1"

extract_deb "$strucchange"
dpkg-deb -x "$cache/$sandwich" "$tmp"
dpkg-deb -x "$cache/$zoo" "$tmp"

python3 "$(dirname "$0")/../latex_text.py" "$name" "$tmp/usr/lib/R/site-library" "$out/$name.txt" 0 200 \
    strucchange/doc/strucchange-intro.Rnw sandwich/doc/sandwich.Rnw zoo/doc/zoo.Rnw \
    sandwich/doc/sandwich-OOP.Rnw sandwich/doc/sandwich-CL.Rnw

echo "$name: $(wc -w <"$out/$name.txt") words -> $out/$name.txt"
