#!/usr/bin/env bash
# gen.sh VERSION: regenerate kafka-VERSION-logdir/, a real broker's log dir for the offline
# decoders' golden tests (committed offsets, transactions, metadata log, checkpoints).
#
#   audit/segment/testdata/real/gen.sh 3.6.2
#   audit/segment/testdata/real/gen.sh 4.1.1
#
# It builds the broker classpath from Maven Central jars (gen/pom.xml; 3.x logs with reload4j,
# 4.x with log4j2), formats and starts a one-node KRaft broker on 127.0.0.1:29192/29193 with its
# data under /tmp/kaudit-logdir-gen/VERSION, runs gen/main.go against it (which saves what the
# live broker answers in live.json), stops the broker with SIGTERM (a clean shutdown) and
# copies the log dir here. Tests never need a broker: they read the copy.
set -euo pipefail
set -f
V=${1:?usage: gen.sh KAFKA_VERSION}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
W=/tmp/kaudit-logdir-gen/$V
LIB=/tmp/kaudit-logdir-gen/target/kafka-$V/lib
OUT=$HERE/kafka-$V-logdir
case $V in
3.*) PROFILE=reload4j ;;
*) PROFILE='log4j2,!reload4j' ;;
esac
[[ -d $LIB ]] || mvn -B -q -f "$HERE/gen/pom.xml" package -Dkafka.version="$V" -P "$PROFILE"
rm -rf "$W"
mkdir -p "$W/data"
cat >"$W/log4j.properties" <<'P'
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
P
cat >"$W/log4j2.properties" <<'P'
rootLogger.level=WARN
rootLogger.appenderRef.stdout.ref=STDOUT
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
P
cat >"$W/n1.properties" <<P
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:29193
listeners=PLAINTEXT://127.0.0.1:29192,CONTROLLER://127.0.0.1:29193
advertised.listeners=PLAINTEXT://127.0.0.1:29192
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$W/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=2
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
background.threads=2
log.cleaner.dedupe.buffer.size=2097152
metadata.log.max.snapshot.interval.ms=5000
P
J=(java -Xms128m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true
	-Dlog4j.configuration=file:$W/log4j.properties -Dlog4j2.configurationFile=$W/log4j2.properties -cp "$LIB/*")
ID=$("${J[@]}" kafka.tools.StorageTool random-uuid)
"${J[@]}" kafka.tools.StorageTool format -t "$ID" -c "$W/n1.properties" --ignore-formatted
"${J[@]}" kafka.Kafka "$W/n1.properties" >"$W/n1.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
(cd "$ROOT" && go run ./audit/segment/testdata/real/gen -bootstrap 127.0.0.1:29192 -out "$W/live.json" -version "$V")
kill -TERM $PID
for _ in $(seq 120); do kill -0 $PID 2>/dev/null || break; sleep 0.5; done
kill -0 $PID 2>/dev/null && { echo "gen.sh: the broker did not stop" >&2; exit 1; }
trap - EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
# the whole log dir but its lock (a clean shutdown leaves trimmed indexes and producer snapshots)
cp -a "$W/data/." "$OUT/"
rm -f "$OUT/.lock"
# a deleted topic's dir awaiting removal holds 10 MiB preallocated indexes: its name is evidence enough
find "$OUT" -path '*-delete/*' \( -name '*.index' -o -name '*.timeindex' \) -delete
cp "$W/live.json" "$OUT/live.json"
echo "gen.sh: wrote $OUT ($(du -sh "$OUT" | cut -f1))"
