#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each): `fuzz/run.sh [SECONDS]`.
# cargo-fuzz needs nightly features; on a stable toolchain RUSTC_BOOTSTRAP=1 unlocks them.
# Findings land in fuzz/artifacts/<target>/; each becomes a regression test (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
export RUSTC_BOOTSTRAP="${RUSTC_BOOTSTRAP:-1}"
for target in tool_arguments stream_json provider_streams parse_structured; do
    echo "== $target (${seconds} s)"
    cargo fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=4096 2>&1 | tail -n 4
done
