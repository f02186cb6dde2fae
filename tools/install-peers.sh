#!/usr/bin/env sh
# The published peers that pip cannot install through the `[peers]` extra (docs/conform.md, "Built-in targets"), each
# pinned and installed without its dependencies (the extra lists what their imports need), into the active
# environment. Run after `pip install -e '.[report,test,peers]'` (the README's first command does):
#
#   lrnnx 1.0.0.post1          an sdist whose build imports torch: --no-build-isolation (with isolation pip would
#                              fetch another torch to build it)
#   recurrentgemma 1.0.1       it pins numpy<2.4: --no-deps
#   mamba-ssm 2.3.2.post1      without its CUDA build (MAMBA_SKIP_CUDA_BUILD): its selective_scan_ref runs on the CPU
#                              (`linrnn conform mamba-ssm-ref`); its fused kernel still needs CUDA
#
#   sh tools/install-peers.sh            a peer that does not install is one warning line; the others go on, and the
#                                        report shows its stored finding instead (docs/conform.md, "In the report")
#   sh tools/install-peers.sh --strict   the first that does not install stops the script with its status (CI)
set -u

strict=0
case "${1:-}" in
    "") ;;
    --strict) strict=1 ;;
    *) echo "install-peers.sh: expected no argument or --strict, found '$1'" >&2; exit 2 ;;
esac
if [ -z "${VIRTUAL_ENV:-}" ] && [ -z "${CONDA_PREFIX:-}" ]; then
    echo "install-peers.sh: expected an active virtual environment (. .venv/bin/activate), found none" >&2
    exit 2
fi

failed=""
peer() {   # peer NAME [ENV=VALUE ...] -- PIP ARGUMENTS
    name=$1; shift
    err="${TMPDIR:-/tmp}/install-peers.$$.err"
    env "$@" >/dev/null 2>"$err" && { rm -f "$err"; return 0; }
    status=$?
    echo "install-peers.sh: $name did not install (pip exit $status): $(grep -v '^ *$' "$err" | grep -iv 'is ignored' | tail -n 1)" >&2
    rm -f "$err"
    [ "$strict" = 1 ] && exit "$status"
    failed="$failed $name"
}

peer lrnnx python -m pip install --quiet --no-deps --no-build-isolation lrnnx==1.0.0.post1
peer recurrentgemma python -m pip install --quiet --no-deps recurrentgemma==1.0.1
peer mamba-ssm MAMBA_SKIP_CUDA_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE \
    python -m pip install --quiet --no-deps --no-build-isolation mamba-ssm==2.3.2.post1

if [ -n "$failed" ]; then
    echo "install-peers.sh: not installed:$failed; the report shows their stored findings (linrnn conform --peers)" >&2
fi
exit 0
