#!/usr/bin/env bash
# cluster.sh: a throwaway KRaft Kafka cluster on 127.0.0.1 from Maven Central jars.
#
#   cluster.sh start [--brokers 1|3]   format (first time) and start; wait until ready
#   cluster.sh start-node ID           start one node of an existing cluster (no wait for the others)
#   cluster.sh stop [ID]               SIGTERM, then kill -9 after STOP_GRACE seconds
#   cluster.sh kill9 [ID]              kill -9 one broker, or every broker (the outage)
#   cluster.sh wait                    wait until every node of the cluster is up
#   cluster.sh wait-node ID            wait until node ID is up
#   cluster.sh wipe                    stop everything and delete the cluster's data
#   cluster.sh bootstrap               print the bootstrap servers
#   cluster.sh status                  print which nodes run
#
# Modes: --brokers 1 (default) runs one combined broker+controller, node 1, PLAINTEXT 19192.
# --brokers 3 runs a controller-only node 100 (CONTROLLER 19090) and brokers 1..3 on
# 19192, 19292, 19392 with RF 3 and min.insync.replicas 2 (the seed's cluster).
#
# Environment: KAFKA_VERSION (default 3.6.2; the classpath is built from pom.xml with
# -Dkafka.version), DRILL_WORK (default testdata/kafka/work), READY_TIMEOUT (90 s),
# STOP_GRACE (20 s), BROKER_HEAP (384m).
set -euo pipefail
set -f # the classpath wildcard is expanded by the JVM, not the shell

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KAFKA_VERSION=${KAFKA_VERSION:-3.6.2}
WORK=${DRILL_WORK:-$HERE/../work}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
CL=$WORK/cluster
READY_TIMEOUT=${READY_TIMEOUT:-90}
STOP_GRACE=${STOP_GRACE:-20}
BROKER_HEAP=${BROKER_HEAP:-384m}
LIB=$HERE/target/kafka-$KAFKA_VERSION/lib

die() { echo "cluster.sh: $*" >&2; exit 1; }

classpath() {
	if [[ ! -d $LIB ]]; then
		mvn -B -q -f "$HERE/pom.xml" -Dkafka.version="$KAFKA_VERSION" package >&2 ||
			die "build the broker classpath for Kafka $KAFKA_VERSION"
	fi
	echo "$LIB/*"
}

java_cmd() {
	echo java -Xms128m -Xmx"$BROKER_HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
		-Djava.awt.headless=true -Duser.timezone=UTC -Dlog4j.configuration=file:"$HERE/log4j.properties" -cp "$(classpath)"
}

mode() { cat "$CL/mode" 2>/dev/null || echo 1; }

# nodes prints every node id of the cluster, controller first.
nodes() { if [[ $(mode) == 3 ]]; then echo 100 1 2 3; else echo 1; fi; }
brokers() { if [[ $(mode) == 3 ]]; then echo 1 2 3; else echo 1; fi; }
# PORT_PREFIX (default 19) is the ports' first two digits: the bench harness runs its broker on
# 21192 (PORT_PREFIX=21) so that it never meets the drill's cluster.
PP=${PORT_PREFIX:-19}
port() { if [[ $1 == 100 ]]; then echo "${PP}090"; else echo "${PP}${1}92"; fi; }

bootstrap() {
	local out=() id
	for id in $(brokers); do out+=("127.0.0.1:$(port "$id")"); done
	(IFS=,; echo "${out[*]}")
}

# props writes node $1's server.properties.
props() {
	local id=$1 f=$CL/n$1.properties
	{
		echo "node.id=$id"
		echo "log.dirs=$CL/data/n$id"
		echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
		echo "controller.listener.names=CONTROLLER"
		if [[ $(mode) == 3 ]]; then
			echo "controller.quorum.voters=100@127.0.0.1:${PP}090"
			if [[ $id == 100 ]]; then
				echo "process.roles=controller"
				echo "listeners=CONTROLLER://127.0.0.1:${PP}090"
			else
				echo "process.roles=broker"
				echo "listeners=PLAINTEXT://127.0.0.1:$(port "$id")"
				echo "advertised.listeners=PLAINTEXT://127.0.0.1:$(port "$id")"
				echo "inter.broker.listener.name=PLAINTEXT"
			fi
			echo "default.replication.factor=3"
			echo "min.insync.replicas=2"
			echo "offsets.topic.replication.factor=3"
			echo "transaction.state.log.replication.factor=3"
			echo "transaction.state.log.min.isr=2"
			echo "broker.session.timeout.ms=3000"
			echo "broker.heartbeat.interval.ms=500"
			echo "replica.lag.time.max.ms=5000"
			echo "replica.socket.timeout.ms=1500"
			echo "controller.socket.timeout.ms=1500"
		else
			echo "process.roles=broker,controller"
			echo "controller.quorum.voters=1@127.0.0.1:${PP}193"
			echo "listeners=PLAINTEXT://127.0.0.1:${PP}192,CONTROLLER://127.0.0.1:${PP}193"
			echo "advertised.listeners=PLAINTEXT://127.0.0.1:${PP}192"
			echo "inter.broker.listener.name=PLAINTEXT"
			echo "default.replication.factor=1"
			echo "min.insync.replicas=1"
			echo "offsets.topic.replication.factor=1"
			echo "transaction.state.log.replication.factor=1"
			echo "transaction.state.log.min.isr=1"
		fi
		cat <<-EOF
			auto.create.topics.enable=false
			num.partitions=1
			offsets.topic.num.partitions=4
			transaction.state.log.num.partitions=4
			group.initial.rebalance.delay.ms=0
			num.network.threads=2
			num.io.threads=2
			background.threads=2
			num.recovery.threads.per.data.dir=1
			log.cleaner.dedupe.buffer.size=2097152
			log.cleaner.threads=1
			log.retention.check.interval.ms=1000
			log.segment.delete.delay.ms=1000
			log.flush.offset.checkpoint.interval.ms=5000
			transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
		EOF
	} >"$f"
	echo "$f"
}

pid_of() { cat "$CL/n$1.pid" 2>/dev/null || true; }
alive() { local p; p=$(pid_of "$1"); [[ -n $p ]] && kill -0 "$p" 2>/dev/null; }

format() {
	local id cid
	cid=$(cat "$CL/cluster-id" 2>/dev/null || true)
	if [[ -z $cid ]]; then
		# StorageTool's random-uuid never starts with '-' (argparse would read it as a flag).
		cid=$($(java_cmd) kafka.tools.StorageTool random-uuid)
		echo "$cid" >"$CL/cluster-id"
	fi
	for id in $(nodes); do
		[[ -f $CL/data/n$id/meta.properties ]] && continue
		$(java_cmd) kafka.tools.StorageTool format -t "$cid" -c "$(props "$id")" --ignore-formatted >"$CL/logs/format-n$id.log" 2>&1 ||
			{ tail -20 "$CL/logs/format-n$id.log" >&2; die "format node $id"; }
	done
}

start_node() {
	local id=$1
	if alive "$id"; then return 0; fi
	local f
	f=$(props "$id")
	echo "=== start $(date -u +%FT%TZ)" >>"$CL/logs/n$id.log"
	# setsid: the node gets its own process group, so a Ctrl-C of the caller does not reach it
	# and stop/kill9 address exactly this pid.
	setsid $(java_cmd) kafka.Kafka "$f" >>"$CL/logs/n$id.log" 2>&1 </dev/null &
	echo $! >"$CL/n$id.pid"
}

# wait_node polls node $1 until its startup line is logged after the last start and its port
# accepts connections; it fails with the log's tail after READY_TIMEOUT seconds.
wait_node() {
	local id=$1 p deadline=$((SECONDS + READY_TIMEOUT))
	p=$(port "$id")
	while ((SECONDS < deadline)); do
		alive "$id" || { tail -40 "$CL/logs/n$id.log" >&2; die "node $id exited during startup"; }
		if awk '/^=== start/{s=0} /Kafka Server started/{s=1} END{exit !s}' "$CL/logs/n$id.log" &&
			(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			return 0
		fi
		sleep 0.5
	done
	tail -40 "$CL/logs/n$id.log" >&2
	die "node $id not ready after ${READY_TIMEOUT}s"
}

wait_all() { local id; for id in $(nodes); do wait_node "$id"; done; }

# stop_node sends SIGTERM (controlled shutdown) and escalates to kill -9 after STOP_GRACE.
stop_node() {
	local id=$1 p deadline
	p=$(pid_of "$id")
	alive "$id" || { rm -f "$CL/n$id.pid"; return 0; }
	kill -TERM "$p"
	deadline=$((SECONDS + STOP_GRACE))
	while kill -0 "$p" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
	if kill -0 "$p" 2>/dev/null; then
		echo "cluster.sh: node $id ignored SIGTERM for ${STOP_GRACE}s, kill -9" >&2
		kill -KILL "$p"
	fi
	while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
	rm -f "$CL/n$id.pid"
}

kill9_node() {
	local id=$1 p
	p=$(pid_of "$id")
	alive "$id" || return 0
	kill -KILL "$p"
	while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
	rm -f "$CL/n$id.pid"
}

cmd=${1:-}
shift || true
case $cmd in
start)
	want=1
	if [[ ${1:-} == --brokers ]]; then want=${2:?--brokers needs 1 or 3}; fi
	[[ $want == 1 || $want == 3 ]] || die "--brokers must be 1 or 3"
	mkdir -p "$CL/logs" "$CL/data"
	if [[ -f $CL/mode && $(mode) != "$want" ]]; then die "a $(mode)-broker cluster exists in $CL: wipe it first"; fi
	echo "$want" >"$CL/mode"
	t0=$SECONDS
	format
	for id in $(nodes); do start_node "$id"; done
	wait_all
	echo "cluster.sh: $(mode)-broker Kafka $KAFKA_VERSION ready at $(bootstrap) in $((SECONDS - t0))s" >&2
	;;
start-node) mkdir -p "$CL/logs"; start_node "${1:?node id}" ;;
wait) wait_all ;;
wait-node) wait_node "${1:?node id}" ;;
stop)
	if [[ -n ${1:-} ]]; then stop_node "$1"; else
		for id in $(brokers); do stop_node "$id"; done
		[[ $(mode) == 3 ]] && stop_node 100
	fi
	;;
kill9)
	if [[ -n ${1:-} ]]; then kill9_node "$1"; else for id in $(brokers); do kill9_node "$id"; done; fi
	;;
wipe)
	if [[ -d $CL ]]; then
		for id in 1 2 3; do kill9_node "$id"; done
		kill9_node 100
		rm -rf "$CL"
	fi
	;;
bootstrap) bootstrap ;;
status) for id in $(nodes); do if alive "$id"; then echo "node $id up (pid $(pid_of "$id"))"; else echo "node $id down"; fi; done ;;
*) sed -n '2,23p' "$0" >&2; exit 2 ;;
esac
