#!/usr/bin/env bash
# The one script for a GPU machine (docs/gpu.md, "What a GPU machine needs"): `linrnn gpucheck`, then the page.
#
#   OUT=DIR bash tools/gpucheck.sh [gpucheck's options]
#
# The GPU machine may reach no package index: its python3 must already hold a CUDA PyTorch with Triton, JAX
# with its CUDA plugin and every dependency of linrnn. Nothing is downloaded here. Installed:
#   - linrnn itself, without pip: a package folder whose sub-packages link to this checkout's areas, plus
#     the metadata `importlib.metadata.version("linrnn")` reads (no build backend, no network);
#   - every wheel in .whl/ (carried with the checkout; --no-index): the peers s5-pytorch and LRU-pytorch,
#     pure-Python wheels made where there is network with
#     `pip download --no-deps -d .whl LRU-pytorch==0.1.3 s5-pytorch==0.2.1` (the sdist built by `pip wheel`);
#     without them the sweep records the peers as not available. mamba-ssm (the gpucheck step "mamba") has no such
#     wheel: its build compiles CUDA; a wheel built for the machine's torch / CUDA / Python, put in .whl/, is
#     installed with the others, and without it the step reads "skipped: mamba_ssm is not installed (it needs CUDA
#     to build)".
# Results: $OUT/gpu/{gpucheck.json, gpucheck.log, report.html, ledger.txt}. The command's own deadline is
# --budget-s (420 s); `timeout` stops it at GPUCHECK_TIMEOUT (480 s) whatever happens, and what it
# had saved stays in gpucheck.json.
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpucheck-out}
mkdir -p "$OUT/gpu"
SITE=/tmp/linrnn-site
VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' linrnn/__init__.py)
rm -rf "$SITE" && mkdir -p "$SITE/linrnn" "$SITE/linrnn-$VERSION.dist-info"
cp linrnn/*.py "$SITE/linrnn/"
for area in impls theory tasks experiments reports; do ln -s "$PWD/$area" "$SITE/linrnn/$area"; done
printf 'Metadata-Version: 2.1\nName: linrnn\nVersion: %s\n' "$VERSION" > "$SITE/linrnn-$VERSION.dist-info/METADATA"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl \
        || echo "gpucheck.sh: the peers' wheels did not install; the sweep will say so" >&2
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '-')
[ -n "$gpu" ] && export LINRNN_MACHINE_LABEL=${LINRNN_MACHINE_LABEL:-$gpu}     # else the host name
timeout --kill-after=15 "${GPUCHECK_TIMEOUT:-480}" python3 -m linrnn gpucheck --out "$OUT/gpu" --budget-s 420 "$@" 2>&1 \
    | tee "$OUT/gpu/gpucheck.log"
status=$?
python3 -m linrnn report --from "$OUT/gpu" 2>&1 | grep -v "^  skipped .*: missing$"   # the other sections'
exit $status
