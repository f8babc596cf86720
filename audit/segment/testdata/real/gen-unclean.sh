#!/usr/bin/env bash
# gen-unclean.sh [VERSION]: regenerate kafka-VERSION-unclean/ (default 3.6.2), the log dirs of a
# KRaft controller (node 100) and two brokers after an unclean leader election, for the replica
# comparison's real test:
#   1. topic u.orders, one partition on brokers 1 and 2 (min.insync.replicas=1); 5 records on both;
#   2. broker 2 stopped (SIGTERM: it leaves the ISR); 4 records on broker 1 only;
#   3. broker 1 killed -9; broker 2 started and elected uncleanly (ElectLeaders UNCLEAN);
#      2 records on broker 2 at the new epoch, over offsets broker 1 also holds;
#   4. broker 2 and the controller stopped (SIGTERM); broker 1 never comes back, so its dir
#      still holds offsets 5-8 that the elected leader's log does not.
# Ports 29193 (controller), 29192 and 29292 (brokers) on 127.0.0.1; data under
# /tmp/kaudit-logdir-gen/VERSION-unclean. Tests never need a broker: they read the copy.
set -euo pipefail
set -f
V=${1:-3.6.2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
W=/tmp/kaudit-logdir-gen/$V-unclean
LIB=/tmp/kaudit-logdir-gen/target/kafka-$V/lib
OUT=$HERE/kafka-$V-unclean
case $V in
3.*) PROFILE=reload4j ;;
*) PROFILE='log4j2,!reload4j' ;;
esac
[[ -d $LIB ]] || mvn -B -q -f "$HERE/gen/pom.xml" package -Dkafka.version="$V" -P "$PROFILE"
rm -rf "$W"
mkdir -p "$W"
printf 'log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\nlog4j.appender.stdout.layout=org.apache.log4j.PatternLayout\nlog4j.appender.stdout.layout.ConversionPattern=[%%d] %%p %%m (%%c)%%n\n' >"$W/log4j.properties"
common() {
	cat <<P
controller.quorum.voters=100@127.0.0.1:29193
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$W/n$1
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=2
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
num.network.threads=2
num.io.threads=2
background.threads=2
log.cleaner.dedupe.buffer.size=2097152
broker.session.timeout.ms=3000
broker.heartbeat.interval.ms=500
replica.lag.time.max.ms=5000
P
}
{ echo "process.roles=controller"; echo "node.id=100"; echo "listeners=CONTROLLER://127.0.0.1:29193"; common 100; } >"$W/n100.properties"
for id in 1 2; do
	{ echo "process.roles=broker"; echo "node.id=$id"; echo "listeners=PLAINTEXT://127.0.0.1:29${id}92"
		echo "advertised.listeners=PLAINTEXT://127.0.0.1:29${id}92"; echo "inter.broker.listener.name=PLAINTEXT"; common $id; } >"$W/n$id.properties"
done
J=(java -Xms128m -Xmx320m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true
	-Dlog4j.configuration=file:$W/log4j.properties -cp "$LIB/*")
ID=$("${J[@]}" kafka.tools.StorageTool random-uuid)
for id in 100 1 2; do "${J[@]}" kafka.tools.StorageTool format -t "$ID" -c "$W/n$id.properties" --ignore-formatted >/dev/null; done
declare -A PID
start() { "${J[@]}" kafka.Kafka "$W/n$1.properties" >>"$W/n$1.log" 2>&1 & PID[$1]=$!; }
stop() { kill -TERM "${PID[$1]}"; for _ in $(seq 120); do kill -0 "${PID[$1]}" 2>/dev/null || return 0; sleep 0.5; done; echo "gen-unclean.sh: node $1 did not stop" >&2; exit 1; }
cleanup() { for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
cd "$ROOT"
go build -o "$W/unclean" ./audit/segment/testdata/real/gen/unclean
U=("$W/unclean")
start 100
start 1
start 2
"${U[@]}" 127.0.0.1:29192 wait 2
"${U[@]}" 127.0.0.1:29192 create
sleep 2
"${U[@]}" 127.0.0.1:29192 produce 5 "wave 1"
stop 2
sleep 6 # broker 2 out of the ISR
"${U[@]}" 127.0.0.1:29192 produce 4 "wave 2"
kill -9 "${PID[1]}"
wait "${PID[1]}" 2>/dev/null || true
sleep 6 # broker.session.timeout.ms=3000: the controller fences broker 1
start 2
"${U[@]}" 127.0.0.1:29292 wait 1
"${U[@]}" 127.0.0.1:29292 elect
sleep 2
"${U[@]}" 127.0.0.1:29292 produce 2 "wave 3"
stop 2
stop 100
trap - EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
for id in 100 1 2; do
	cp -a "$W/n$id" "$OUT/n$id"
	rm -f "$OUT/n$id/.lock"
done
# a killed broker's active indexes stay preallocated (10 MiB): keep their first 4 KiB (whole
# entries) when the rest is zeros, which the reader skips either way
while IFS= read -r f; do
	keep=4096
	[[ $f == *.timeindex ]] && keep=4092
	size=$(stat -c %s "$f")
	if tail -c +$((keep + 1)) "$f" | cmp -s - <(head -c $((size - keep)) /dev/zero); then
		truncate -s $keep "$f"
	else
		echo "gen-unclean.sh: $f holds entries past $keep bytes: kept whole" >&2
	fi
done < <(find "$OUT" \( -name '*.index' -o -name '*.timeindex' \) -size +1M)
echo "gen-unclean.sh: wrote $OUT ($(du -sh "$OUT" | cut -f1))"
