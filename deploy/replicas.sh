#!/usr/bin/env bash
# Starts N `pleach mcp --http` replicas on loopback behind nginx (round robin). Prints
# `url <nginx URL>` and each replica's pid and port once all are up, then reads commands on stdin
# (each answered with a `done …` line):
#   restart I   rolling restart of replica I: out of nginx's rotation (marked down, nginx
#               reloaded), SIGTERM (it drains: running calls finish), started again, healthy,
#               back in rotation
#   kill I      SIGKILL replica I (its running calls fail), then it is started again
#   quit        stop everything (so do EOF on stdin, SIGTERM and SIGINT)
# Usage: deploy/replicas.sh PATH/TO/pleach [N] [-- extra `pleach mcp` flags]
# Needs nginx (Debian: `apt-get install nginx-light`) and python3 (to pick free ports).
set -euo pipefail

pleach="${1:?usage: deploy/replicas.sh PATH/TO/pleach [N] [-- pleach mcp flags]}"
shift
count=2
if [[ $# -gt 0 && $1 != "--" ]]; then count="$1"; shift; fi
[[ $# -gt 0 && $1 == "--" ]] && shift
extra=("$@")
here="$(cd "$(dirname "$0")" && pwd)"
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
work="$(mktemp -d)"
mkdir -p "$work"/{client_body,proxy,fastcgi,uwsgi,scgi}

free_ports() {
    python3 -c 'import socket,sys
socks=[socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1",0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}
read -r -a ports <<<"$(free_ports $((count + 1)))"
nginx_port="${ports[$count]}"
declare -a pids down
for ((i = 0; i < count; i++)); do down[i]=0; done

log() { echo "replicas: $*" >&2; }

write_config() {
    local upstreams="" user=""
    for ((i = 0; i < count; i++)); do
        local mark=""
        [[ ${down[i]} == 1 ]] && mark=" down"
        upstreams+="        server 127.0.0.1:${ports[i]} max_fails=1 fail_timeout=10s${mark};"$'\n'
    done
    [[ $(id -u) == 0 ]] && user="user root;"
    python3 - "$here/nginx.conf.template" "$work/nginx.conf" "$work" "127.0.0.1:$nginx_port" "$user" "$upstreams" <<'PY'
import sys
template, out, prefix, listen, user, upstreams = sys.argv[1:]
text = open(template).read()
for key, value in (("@PREFIX@", prefix), ("@LISTEN@", listen), ("@USER@", user), ("@UPSTREAMS@", upstreams.rstrip("\n"))):
    text = text.replace(key, value)
open(out, "w").write(text)
PY
}

healthy() {
    python3 -c 'import sys,urllib.request
try: sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=1).status == 200 else 1)
except Exception: sys.exit(1)' "http://127.0.0.1:$1/healthz"
}

start_replica() {
    local i="$1"
    "$pleach" mcp --http "127.0.0.1:${ports[i]}" "${extra[@]}" 2>>"$work/replica-$i.log" &
    pids[i]=$!
    for _ in $(seq 200); do
        healthy "${ports[i]}" && return 0
        kill -0 "${pids[i]}" 2>/dev/null || break
        sleep 0.05
    done
    log "replica $i did not come up:"; tail -5 "$work/replica-$i.log" >&2
    return 1
}

workers() { pgrep -P "$nginx_pid" | sort | tr '\n' ' '; }

# Reloads nginx with the current rotation, and returns once the workers of the old configuration
# have exited: they exit only when every request they took has been answered, so from then on no
# request can reach a replica taken out of rotation.
reload_nginx() {
    local old
    old="$(workers)"
    write_config
    "$nginx_bin" -p "$work" -c "$work/nginx.conf" -s reload
    for _ in $(seq 600); do
        local now left=0
        now="$(workers)"
        for pid in $old; do
            [[ " $now " == *" $pid "* ]] && left=1
        done
        [[ $left == 0 && -n $now ]] && return 0
        sleep 0.05
    done
    log "the old nginx workers did not exit within 30 s"
}

stop_all() {
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    [[ -n ${nginx_pid:-} ]] && kill -QUIT "$nginx_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap stop_all EXIT INT TERM

for ((i = 0; i < count; i++)); do start_replica "$i"; done
write_config
"$nginx_bin" -p "$work" -c "$work/nginx.conf" -g 'daemon off;' 2>>"$work/nginx.stderr" &
nginx_pid=$!
for _ in $(seq 200); do
    healthy "$nginx_port" && break
    sleep 0.05
done
healthy "$nginx_port" || { log "nginx did not come up:"; cat "$work/nginx.stderr" "$work/error.log" >&2; exit 1; }
echo "url http://127.0.0.1:$nginx_port/mcp"
for ((i = 0; i < count; i++)); do echo "replica $i pid ${pids[i]} port ${ports[i]}"; done

# Waits for replica I to end (at most 60 s), then starts it again.
replace() {
    local i="$1" status=0
    for _ in $(seq 1200); do
        kill -0 "${pids[i]}" 2>/dev/null || break
        sleep 0.05
    done
    wait "${pids[i]}" || status=$?
    start_replica "$i"
    echo "replica $i exited $status, restarted pid ${pids[i]}"
}

while read -r command index; do
    case "$command" in
        restart)
            down[index]=1; reload_nginx
            kill -TERM "${pids[index]}"
            replace "$index"
            down[index]=0; reload_nginx
            echo "done restart $index" ;;
        kill) kill -KILL "${pids[index]}"; replace "$index"; echo "done kill $index" ;;
        quit) break ;;
        "") ;;
        *) log "unknown command: $command" ;;
    esac
done
