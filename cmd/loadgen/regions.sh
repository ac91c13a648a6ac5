#!/usr/bin/env bash
# regions.sh: fdbstore under loadgen on a two-region FoundationDB cluster that
# loses its primary datacenter (make test-regions; docs/scaling.md#multi-region).
#
# Six fdbserver processes on 127.0.0.1, in FoundationDB's multi-region layout:
#   dc1   2 processes, the primary datacenter (priority 1)
#   dc1s  1 process, class log, the primary region's satellite: the synchronous
#         copy of the mutation log (satellite_logs 1, one_satellite_single)
#   dc2   3 processes, the remote region (priority 0 once it holds a replica),
#         one of them the only coordinator, so the coordinators outlive dc1
# configured `single memory`, usable_regions=2.
#
# Two scenarios, each on a fresh cluster, each a `loadgen --verify --op-timeout`
# run with every process of the lost datacenters SIGKILLed mid-run:
#   satellite   dc1 lost, the satellite kept. FoundationDB promises the remote
#               region recovers from the satellite's logs without losing a
#               commit, so the script asserts: the cluster recovers with its
#               master in dc2, appends are acknowledged after the kill, and
#               --verify passes (nothing acknowledged lost, fencing held).
#   nosatellite dc1 and dc1s lost together. Replication to dc2 is asynchronous,
#               so the last commits may be gone and the cluster does not
#               recover on its own; the script forces it to dc2
#               (`force_recovery_with_data_loss dc2`) and asserts only that it
#               recovers there and that loadgen gets through; what --verify
#               finds (acknowledged appends lost) is reported, not asserted.
#
# Usage: regions.sh [satellite|nosatellite|all]   (default all)
# Environment: FDB_SH (default ../shared/fdb/fdb.sh from the repository root),
# REGIONS_DURATION (load per scenario, default 75s: the write gap with stock
# knobs reached 41 s here, and an append must be acknowledged after it),
# REGIONS_KILL_AT (seconds into the load, default 10), REGIONS_KEEP=1 keeps
# the data directory, REGIONS_SERVER_ARGS adds arguments to every fdbserver
# (knobs, say).
# Without FDB_SH it prints why and exits 0. Every process it starts is killed
# on exit, failure included; every wait is bounded.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
fdbsh=${FDB_SH:-$root/../shared/fdb/fdb.sh}
scenarios=${1:-all}
duration=${REGIONS_DURATION:-75s}
kill_at=${REGIONS_KILL_AT:-10}
case $scenarios in all) scenarios="satellite nosatellite" ;; satellite | nosatellite) ;; *)
  echo "usage: $0 [satellite|nosatellite|all]" >&2; exit 2 ;;
esac

if [ ! -x "$fdbsh" ]; then
  echo "regions: SKIP: no FoundationDB here ($fdbsh is absent; set FDB_SH to a copy of shared/fdb/fdb.sh)"
  exit 0
fi
eval "$("$fdbsh" env)"

work=$(mktemp -d "${TMPDIR:-/tmp}/regions.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${REGIONS_KEEP:-}" = 1 ]; then echo "regions: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "regions: $(date -u +%T) $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
dur_s() { python3 -c 'import re, sys; m = re.fullmatch(r"(\d+)(s|m)", sys.argv[1]); print(int(m[1]) * (60 if m[2] == "m" else 1))' "$1"; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

echo "regions: building loadgen (-tags fdb)" >&2
(cd "$root" && go build -tags fdb -o "$work/loadgen" ./cmd/loadgen)

# The layout: name dc class. p4 (dc2) is the coordinator.
names=(p1 p2 p3 p4 p5 p6)
dcs=(dc1 dc1 dc1s dc2 dc2 dc2)
classes=(unset unset log unset unset unset)

# regions_json PRIORITY_OF_DC2
regions_json() {
  cat <<EOF
{"regions": [
  {"datacenters": [{"id": "dc1", "priority": 1}, {"id": "dc1s", "priority": 1, "satellite": 1}],
   "satellite_logs": 1, "satellite_redundancy_mode": "one_satellite_single"},
  {"datacenters": [{"id": "dc2", "priority": $1}]}
]}
EOF
}

cli() { # cluster-file timeout command
  fdbcli -C "$1" --timeout "$2" --exec "$3"
}

# status_field CF EXPR: evaluate a Python expression on `status json` (s);
# prints nothing when the status can't be read.
status_field() {
  cli "$1" 5 "status json" 2>/dev/null | python3 -c "
import json, sys
try:
    s = json.load(sys.stdin)
    print($2)
except Exception:
    pass" || true
}

# master_dc CF: the datacenter of the process holding the master role.
master_dc() {
  status_field "$1" "[p['locality'].get('dcid') for p in s['cluster']['processes'].values() if any(r['role'] == 'master' for r in p.get('roles', []))][0]"
}

wait_for() { # description seconds command...
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  while [ $SECONDS -lt $deadline ]; do
    if "$@"; then return 0; fi
    sleep 1
  done
  return 1
}

available() { cli "$1" 3 "status minimal" 2>/dev/null | grep -qx "The database is available."; }
dc2_master() { [ "$(master_dc "$1")" = dc2 ]; }

# rss_kb PID: the process's peak resident set (VmHWM), in KiB.
rss_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

start_cluster() { # dir
  local dir=$1 i
  declare -ga ports=() ppids=()
  for i in "${!names[@]}"; do ports+=("$(freeport)"); done
  echo "regions$RANDOM:id$RANDOM@127.0.0.1:${ports[3]}" >"$dir/fdb.cluster"
  for i in "${!names[@]}"; do
    local n=${names[$i]} p=${ports[$i]}
    mkdir -p "$dir/$n/data" "$dir/$n/logs"
    fdbserver --cluster-file "$dir/fdb.cluster" --public-address "127.0.0.1:$p" --listen-address "127.0.0.1:$p" \
      --datadir "$dir/$n/data" --logdir "$dir/$n/logs" --class "${classes[$i]}" \
      --locality-dcid "${dcs[$i]}" --locality-zoneid "z$((i + 1))" --locality-machineid "m$((i + 1))" \
      ${REGIONS_SERVER_ARGS:-} >"$dir/$n/out.log" 2>&1 &
    pids+=($!)
    ppids+=($!)
    disown $! # no job notice when it is killed
  done
  local cf=$dir/fdb.cluster
  # dc2 starts at priority -1: fdbcli refuses usable_regions=2 while two
  # regions have a priority >= 0. Creating the database with its regions and
  # usable_regions=2 in one command puts no data in dc2 before it has a region
  # (data placed there would first have to move to dc1) and waits for data
  # distribution to start once, not three times (~30 s each here).
  local regions
  regions=$(regions_json -1 | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["regions"], separators=(",", ":")).replace(chr(34), chr(92) + chr(34)))')
  # configure new fails until the processes have met the coordinator.
  wait_for "configure new" 60 cli "$cf" 10 "configure new single memory usable_regions=2 regions=$regions" >/dev/null 2>&1 ||
    available "$cf" || fail "configure new single memory usable_regions=2 did not succeed within 60 s"
  wait_for "available" 60 available "$cf" || fail "the database did not become available"
  log "available: single memory, usable_regions=2, dc2 at priority -1"
  # dc2 may become primary (priority 0) once it holds a full replica: fdbcli
  # refuses the change until then, which is the wait.
  regions_json 0 >"$dir/regions0.json"
  wait_for "failover priority" 180 cli "$cf" 10 "fileconfigure $dir/regions0.json" >/dev/null 2>&1 ||
    fail "fileconfigure (dc2 at priority 0) was refused for 180 s: dc2 never held a full replica"
  log "dc2 holds a replica; priority 0"
  local m; m=$(master_dc "$cf")
  [ "$m" = dc1 ] || fail "the master is in '$m' before the fault, not dc1"
}

# run_scenario NAME INDEXES_TO_KILL...
run_scenario() {
  local name=$1; shift
  local dir=$work/$name
  mkdir -p "$dir"
  local t0; t0=$(now)
  start_cluster "$dir"
  local cf=$dir/fdb.cluster setup; setup=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  log "$name: six processes up, both regions hold a replica, master in dc1 (setup ${setup} s)"

  local lstart; lstart=$(now)
  "$work/loadgen" --store "fdb:$cf" --verify --op-timeout 10s --duration "$duration" \
    --workers 4 --threads 16 --lease 30s --json --quiet >"$dir/loadgen.json" 2>"$dir/loadgen.err" &
  local lg=$!
  pids+=("$lg")
  sleep "$kill_at"
  local i rss_before="" killed=""
  for i in "${!names[@]}"; do rss_before+="${names[$i]}(${dcs[$i]})=$(($(rss_kb "${ppids[$i]}") / 1024))MiB "; done
  local tkill; tkill=$(now)
  for i in "$@"; do kill -9 "${ppids[$i]}"; killed+="${names[$i]}(${dcs[$i]}) "; done
  log "$name: SIGKILLed ${killed}at $(awk -v a="$lstart" -v b="$tkill" 'BEGIN { printf "%.1f", b - a }') s"

  local forced=no
  if [ "$name" = nosatellite ]; then
    # Without the satellite's logs no region holds every commit: FoundationDB
    # waits for the lost logs. Give it 15 s, then force dc2 to be primary.
    if ! wait_for "recovery" 15 dc2_master "$cf"; then
      log "$name: no recovery in 15 s; force_recovery_with_data_loss dc2"
      wait_for "force" 30 cli "$cf" 10 "force_recovery_with_data_loss dc2" >/dev/null 2>&1 || fail "force_recovery_with_data_loss dc2 failed"
      forced=yes
    fi
  fi
  wait_for "recovery in dc2" 90 dc2_master "$cf" || fail "$name: the master did not move to dc2 within 90 s of the kill"
  local trec; trec=$(now)
  log "$name: master in dc2 $(awk -v a="$tkill" -v b="$trec" 'BEGIN { printf "%.1f", b - a }') s after the kill (forced: $forced)"

  local rc=0
  # loadgen's load ends at --duration; the sweep and --verify follow. Bound the wait.
  local deadline=$((SECONDS + 300))
  while kill -0 "$lg" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 1; done
  kill -0 "$lg" 2>/dev/null && fail "$name: loadgen still running 300 s after the kill"
  wait "$lg" || rc=$?
  local rss_after=""
  for i in "${!names[@]}"; do
    kill -0 "${ppids[$i]}" 2>/dev/null && rss_after+="${names[$i]}(${dcs[$i]})=$(($(rss_kb "${ppids[$i]}") / 1024))MiB "
  done
  [ -s "$dir/loadgen.json" ] || { cat "$dir/loadgen.err" >&2; fail "$name: loadgen printed no result (exit $rc)"; }

  python3 - "$dir/loadgen.json" "$name" "$rc" "$(awk -v a="$lstart" -v b="$tkill" 'BEGIN { print b - a }')" "$forced" "$rss_before" "$rss_after" <<'EOF'
import json, sys
path, name, rc, kill_s, forced, rss_before, rss_after = sys.argv[1:]
r = json.load(open(path))
v = r.get("verify") or {}
st = r["longestStall"]
errs, samples = {}, {}
for o in r["ops"]:
    for c, n in (o.get("errorCodes") or {}).items():
        errs[c] = errs.get(c, 0) + n
        samples.setdefault(c, f"{o['op']}: {(o.get('errorSamples') or {}).get(c, '')}")
lost = sum(1 for p in v.get("problems", []) if p.startswith("lost acknowledged append"))
print(f"regions {name}: loadgen exit {rc}; {r['appends']} appends in {r['elapsedNs']/1e9:.1f} s "
      f"({r['appendsPerSec']:.0f}/s); SIGKILL at {float(kill_s):.1f} s after loadgen started; forced recovery: {forced}")
print(f"regions {name}: write gap (the longest stall: no append acknowledged from the last before the kill to the first after it): "
      f"{st['durationNs']/1e9:.2f} s, from {st['startNs']/1e9:.2f} s into the load")
print(f"regions {name}: errors by code: {json.dumps(errs, sort_keys=True) if errs else 'none'}")
for c in sorted(samples):
    print(f"regions {name}:   first {c}: {samples[c][:300]}")
print(f"regions {name}: verify ok={v.get('ok')} acknowledged={v.get('acknowledgedAppends')} "
      f"deletedByUndoOrPrune={v.get('deletedByUndoOrPrune')} unchecked={v.get('uncheckedUnknownOutcome')} "
      f"problems={v.get('problemCount')} (lost acknowledged appends listed: {lost})")
for p in v.get("problems", [])[:10]:
    print(f"regions {name}:   {p}")
tot = lambda s: sum(int(x.split("=")[1][:-3]) for x in s.split())
print(f"regions {name}: fdbserver peak RSS before the kill: {rss_before}(total {tot(rss_before)} MiB)")
print(f"regions {name}: fdbserver peak RSS of the survivors at the end: {rss_after}(total {tot(rss_after)} MiB)")
EOF

  # The recovery as the survivors' traces tell it: when each recovery state
  # was reached after the kill, and when the satellite's log was locked.
  python3 - "$dir" "$tkill" <<'EOF2' || true
import glob, re, sys
d, tkill = sys.argv[1], float(sys.argv[2])
seen = []
for f in glob.glob(d + "/p*/logs/*.xml"):
    for line in open(f, errors="replace"):
        if 'Type="MasterRecoveryState"' not in line and 'Type="TLogLocked"' not in line:
            continue
        t = float(re.search(r' Time="([0-9.]+)"', line)[1])
        if t < tkill:
            continue
        st = re.search(r' Status="([^"]*)"', line)
        seen.append((t - tkill, st[1] if st else "tlog locked"))
steps = {}
for t, what in sorted(seen):
    if what == "tlog locked":
        steps[what] = t  # the last old log locked
    else:
        steps.setdefault(what, t)  # the first time each state was reached
print("regions recovery after the kill: " + ", ".join(f"{w} {t:.1f} s" for w, t in sorted(steps.items(), key=lambda x: x[1])))
EOF2

  local ok appends_after
  ok=$(python3 -c 'import json,sys; print((json.load(open(sys.argv[1])).get("verify") or {}).get("ok"))' "$dir/loadgen.json")
  # Appends acknowledged after the kill: the stall that covers the kill must end
  # before the load does, or the workload never carried on.
  appends_after=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); st = r["longestStall"]
print(st["startNs"] + st["durationNs"] < float(sys.argv[2]) * 1e9 - 1e8)' "$dir/loadgen.json" "$(dur_s "$duration")")
  [ "$appends_after" = True ] || fail "$name: no append was acknowledged after the kill (the longest stall runs to the end of the load)"
  if [ "$name" = satellite ]; then
    [ "$forced" = no ] || fail "$name: the cluster needed a forced recovery"
    [ "$rc" = 0 ] && [ "$ok" = True ] || { cat "$dir/loadgen.err" >&2; fail "$name: --verify failed with the satellite's logs kept (exit $rc)"; }
  fi
  log "$name: PASS"
  # Stop this cluster before the next scenario (its processes are also in pids for the trap).
  for i in "${!ppids[@]}"; do kill -9 "${ppids[$i]}" 2>/dev/null || true; done
}

t_all=$SECONDS
for s in $scenarios; do
  case $s in
  satellite) run_scenario satellite 0 1 ;;
  nosatellite) run_scenario nosatellite 0 1 2 ;;
  esac
done
log "all passed in $((SECONDS - t_all)) s"
