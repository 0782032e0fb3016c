#!/usr/bin/env bash
# The official MCP conformance suite against two servers on loopback:
#
#   - SERVER (examples/conformance_server.rs): every server scenario (`--suite all`);
#   - PLEACH (`pleach mcp --http`): the protocol-level scenarios, which ask for no tool, resource
#     or prompt of the suite's own.
#
# Usage: CONFORMANCE_DIR=DIR run.sh SERVER PLEACH
#
# DIR holds an `npm install` of `@modelcontextprotocol/conformance` (and of `node@22` when the
# system's node is older: the suite needs `fs.globSync`); this script installs nothing. Each server
# listens on a free port it picks and is stopped however the script ends. A scenario fails the run
# when any of its checks is a FAILURE or a WARNING, except the scenarios the suite itself marks
# pending (`--suite pending`), whose results are shown only, and those `expected-failures` (beside
# this script) lists with the reason; one listed there that passes fails the run too, so the list
# stays true. Results stay in $CONFORMANCE_OUT (a temporary directory unless set).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: CONFORMANCE_DIR=DIR $0 SERVER PLEACH" >&2
    exit 2
fi
server_bin=$1
pleach_bin=$2
suite_dir=${CONFORMANCE_DIR:?CONFORMANCE_DIR: the directory of an npm install of @modelcontextprotocol/conformance}
export PATH="$suite_dir/node_modules/.bin:$PATH"
command -v conformance >/dev/null || { echo "no conformance in $suite_dir/node_modules/.bin" >&2; exit 2; }

out=${CONFORMANCE_OUT:-$(mktemp -d)}
mkdir -p "$out"
pids=()
stop_servers() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

# Starts "$@" with its output in $out/$name.log and sets $url to the endpoint it announces
# (`listening on http://…/mcp`, on stdout or stderr).
start() {
    local name=$1
    shift
    "$@" >"$out/$name.log" 2>&1 &
    pids+=($!)
    url=
    for _ in $(seq 100); do
        url=$(grep -o 'listening on http://[^ ]*' "$out/$name.log" | head -1 | cut -d' ' -f3) || true
        [[ -n $url ]] && return 0
        kill -0 "${pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "$name did not start listening:" >&2
    cat "$out/$name.log" >&2
    exit 1
}

# Runs the suite's scenarios ($3: `--suite X` or `--scenario X`) against $2 into $out/$1.
run() {
    local dir=$out/$1 url=$2
    shift 2
    mkdir -p "$dir"
    # The exit status says nothing of warnings: the checks below decide.
    conformance server --url "$url" "$@" -o "$dir" >"$dir.log" 2>&1 || true
}

# Prints each scenario of the result directories given ($2…) with its checks' counts, and the checks
# that failed or warned; fails when any of those is in a scenario neither in $pending nor listed
# for server $1 in `expected-failures`, or when a listed one passes.
judge() {
    PENDING="$pending" EXPECTED="$(dirname "$0")/expected-failures" node --input-type=module - "$@" <<'JS'
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
const [server, ...dirs] = process.argv.slice(2);
const pending = new Set(process.env.PENDING.split(' ').filter(Boolean));
// `server scenario  # why`, one a line.
const expected = new Set(readFileSync(process.env.EXPECTED, 'utf8').split('\n')
  .map((line) => line.replace(/#.*/, '').trim().split(/\s+/))
  .filter(([name, scenario]) => name === server && scenario)
  .map(([, scenario]) => scenario));
let bad = 0;
for (const dir of dirs) {
  for (const run of readdirSync(dir).sort()) {
    const scenario = run.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
    const checks = JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8'));
    const count = (status) => checks.filter((check) => check.status === status).length;
    const wrong = checks.filter((check) => check.status === 'FAILURE' || check.status === 'WARNING');
    const excused = pending.has(scenario) ? 'pending' : expected.has(scenario) ? 'expected' : null;
    const passed = wrong.length === 0;
    const mark = passed ? (expected.has(scenario) ? 'PASSES' : 'ok') : excused ?? 'FAILED';
    console.log(`${mark.padEnd(8)} ${scenario}: ${count('SUCCESS')} passed, ${count('FAILURE')} failed, ${count('WARNING')} warnings`
      + (mark === 'PASSES' ? ` (listed in expected-failures for ${server}: take it out)` : ''));
    for (const check of wrong) console.log(`           ${check.status} ${check.id}: ${check.errorMessage ?? ''}`);
    if ((!passed && !excused) || mark === 'PASSES') bad += 1;
  }
}
process.exit(bad > 0 ? 1 : 0);
JS
}

status=0

start conformance_server "$server_bin" 127.0.0.1:0
# The suite's own split of `--suite all`: what it runs by default, and what it marks pending.
run active "$url" --suite active
run pending "$url" --suite pending
pending=$(ls "$out/pending" | sed -e 's/^server-//' -e 's/-[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T.*$//' | tr '\n' ' ')
echo "== $server_bin: --suite all (pending: ${pending:-none})"
judge conformance_server "$out/active" "$out/pending" || status=1

start pleach "$pleach_bin" mcp --http 127.0.0.1:0
for scenario in server-initialize ping tools-list logging-set-level dns-rebinding-protection \
    server-sse-multiple-streams server-sse-polling; do
    run pleach "$url" --scenario "$scenario"
done
echo "== $pleach_bin mcp --http: protocol-level scenarios"
judge pleach "$out/pleach" || status=1

echo "results: $out"
exit $status
