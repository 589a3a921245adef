#!/usr/bin/env bash
# KRaft quorum phase of the capture (called by capture.sh; can be run alone after it
# has fetched jars and made the venv):
#
#   tools/capture/quorum.sh RUN_DIR
#
# Starts three controller-only nodes forming a dynamic quorum (kraft.version 1,
# formatted with --initial-controllers), every controller listener behind the
# recording proxy, and provokes the Raft RPCs a single combined node never sends:
# Vote (incl. pre-vote), BeginQuorumEpoch, raft Fetch, UpdateRaftVoter,
# EndQuorumEpoch (graceful leader shutdown), AddRaftVoter / RemoveRaftVoter
# (MetadataQuorumCommand add-controller / remove-controller with a fourth node),
# DescribeQuorum. Frames go to RUN_DIR/raw.jsonl. Loopback only, bounded in time.
set -euo pipefail

RUN="$1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="$ROOT/tools/capture"
JARS="$ROOT/target/kafka-jars"
VENV="$ROOT/target/capture-venv"
CLUSTER_ID="a3JhZnRkLXF1b3J1bS0x"

log() { printf '[quorum %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
ours() { local pid="$1"; [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$RUN"; }
stop_pidfile() {
  local f="$1" grace="$2" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((grace * 4))); do ours "$pid" || break; sleep 0.25; done
    if ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$f"
}
cleanup() {
  for n in 1 2 3 4; do stop_pidfile "$RUN/node$n.pid" 30; done
  stop_pidfile "$RUN/proxy.pid" 10
}
jrun() {
  local t="$1"; shift
  timeout "$t" java -Xmx256m -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$TOOLS/log4j2-tools.properties" -Dkraftd.capture.run="$RUN" \
    -cp "$JARS/*" "$@"
}

[ -d "$RUN" ] && cleanup
rm -rf "$RUN"
mkdir -p "$RUN"
trap cleanup EXIT
trap 'exit 130' INT TERM

# 8 ports: kafka controller listeners K1..K4, proxy ports P1..P4
read -r K1 K2 K3 K4 P1 P2 P3 P4 < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(8)]
[s.bind(("127.0.0.1", 0)) for s in ss]
print(*[s.getsockname()[1] for s in ss])')
K=("" "$K1" "$K2" "$K3" "$K4"); P=("" "$P1" "$P2" "$P3" "$P4")
# fixed directory ids: base64url("kraftd-dir-0000N")
DIR=("" "a3JhZnRkLWRpci0wMDAwMQ" "a3JhZnRkLWRpci0wMDAwMg" "a3JhZnRkLWRpci0wMDAwMw" "a3JhZnRkLWRpci0wMDAwNA")
BOOT="127.0.0.1:$P1,127.0.0.1:$P2,127.0.0.1:$P3"
INITIAL="1@127.0.0.1:$P1:${DIR[1]},2@127.0.0.1:$P2:${DIR[2]},3@127.0.0.1:$P3:${DIR[3]}"

for n in 1 2 3 4; do
  mkdir -p "$RUN/node$n/logs"
  cat >"$RUN/node$n/server.properties" <<EOF
process.roles=controller
node.id=$n
listeners=CONTROLLER://127.0.0.1:${K[$n]}
advertised.listeners=CONTROLLER://127.0.0.1:${P[$n]}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT
controller.quorum.bootstrap.servers=$BOOT
log.dirs=$RUN/node$n/data
# client.id is only read by MetadataQuorumCommand add-controller (which takes this file)
client.id=javatools-add-controller
EOF
  # meta.properties directory.id must match the one in --initial-controllers
  if [ "$n" -le 3 ]; then
    jrun 120 kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$RUN/node$n/server.properties" \
      --initial-controllers "$INITIAL" >"$RUN/node$n/format.log" 2>&1
  else
    jrun 120 kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$RUN/node$n/server.properties" \
      --no-initial-controllers >"$RUN/node$n/format.log" 2>&1
  fi
done
# --initial-controllers takes directory ids from the voter string for nodes 1-3; node 4
# got a random one: read it back for remove-controller.
DIR4="$(sed -n 's/^directory.id=//p' "$RUN/node4/data/meta.properties")"

timeout 900 "$VENV/bin/python" "$TOOLS/proxy.py" --out "$RUN/raw.jsonl" \
  --map "c1:$P1:$K1" --map "c2:$P2:$K2" --map "c3:$P3:$K3" --map "c4:$P4:$K4" \
  --ready-file "$RUN/proxy.ready" --max-seconds 850 >"$RUN/proxy.log" 2>&1 &
echo $! >"$RUN/proxy.pid"
for _ in $(seq 1 40); do [ -f "$RUN/proxy.ready" ] && break; sleep 0.25; done

start_node() {
  local n="$1"
  timeout 900 java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dkafka.logs.dir="$RUN/node$n/logs" -Dlog4j2.configurationFile="$TOOLS/log4j2.properties" \
    -cp "$JARS/*" kafka.Kafka "$RUN/node$n/server.properties" >"$RUN/node$n/out.log" 2>&1 &
  echo $! >"$RUN/node$n.pid"
}
quorum() {  # quorum BOOTSTRAP_PORT ARGS...
  local port="$1"; shift
  printf 'client.id=javatools-quorum\n' >"$RUN/quorum-client.properties"
  jrun 60 org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "127.0.0.1:$port" \
    --command-config "$RUN/quorum-client.properties" "$@"
}
leader_id() { quorum "$1" describe --status 2>/dev/null | sed -n 's/^LeaderId:[[:space:]]*//p'; }

log "starting 3 controllers (dynamic quorum, kraft.version 1)"
for n in 1 2 3; do start_node "$n"; done
leader=""
for _ in $(seq 1 30); do
  leader="$(leader_id "$P1" || true)"
  [ -n "$leader" ] && [ "$leader" != "-1" ] && break
  sleep 1
done
[ -n "$leader" ] && [ "$leader" != "-1" ] || { log "no leader elected"; exit 1; }
log "leader is node $leader"
sleep 3
quorum "$P2" describe --replication >"$RUN/describe-1.txt" 2>&1 || true

log "adding controller 4 (AddRaftVoter)"
start_node 4
sleep 6
quorum "$P1" --command-config "$RUN/node4/server.properties" add-controller >"$RUN/add.txt" 2>&1 \
  || log "add-controller failed: $(tail -1 "$RUN/add.txt")"
sleep 3
quorum "$P1" describe --replication >"$RUN/describe-2.txt" 2>&1 || true
log "removing controller 4 (RemoveRaftVoter)"
quorum "$P1" remove-controller --controller-id 4 --controller-directory-id "$DIR4" >"$RUN/remove.txt" 2>&1 \
  || log "remove-controller failed: $(tail -1 "$RUN/remove.txt")"
sleep 2
stop_pidfile "$RUN/node4.pid" 30

log "stopping leader $leader gracefully (EndQuorumEpoch, then a new election)"
stop_pidfile "$RUN/node$leader.pid" 30
other=1; [ "$leader" = 1 ] && other=2
new_leader=""
for _ in $(seq 1 30); do
  new_leader="$(leader_id "${P[$other]}" || true)"
  [ -n "$new_leader" ] && [ "$new_leader" != "-1" ] && [ "$new_leader" != "$leader" ] && break
  sleep 1
done
log "new leader: ${new_leader:-none}"
log "restarting node $leader (rejoins as follower)"
start_node "$leader"
sleep 8
quorum "${P[$other]}" describe --replication >"$RUN/describe-3.txt" 2>&1 || true
cleanup
log "done: $(grep -c '"dir":"req"' "$RUN/raw.jsonl") requests captured"
