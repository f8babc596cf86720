#!/usr/bin/env bash
# broker.sh: the one-node Apache Kafka 3.6.2 broker of the commit-history measurement
# (main.go), from the drill's Maven Central classpath (../broker, built on first use):
# __consumer_offsets in 256 KiB segments so that a roll and a cleaning happen within a
# minute, the log cleaner every 2 s, and INFO for kafka.log and the group coordinator
# so that "Incremented log start offset" and the cleaner's lines reach the log.
#
#   broker.sh start | stop | wipe     (WORK: default ../work/history; port 23192)
set -euo pipefail
set -f # the classpath wildcard is expanded by the JVM, not the shell
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${WORK:-$HERE/../work/history}
LIB=$HERE/../broker/target/kafka-3.6.2/lib
mkdir -p "$WORK/logs"
if [[ ! -d $LIB ]]; then
	mvn -B -q -f "$HERE/../broker/pom.xml" -Dkafka.version=3.6.2 package >&2
fi
J="java -Xms128m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true -Dlog4j.configuration=file:$HERE/log4j.properties -cp $LIB/*"
sed "s|^log.dirs=.*|log.dirs=$WORK/data|" "$HERE/server.properties" >"$WORK/server.properties"
case ${1:-} in
start)
	if [[ ! -f $WORK/data/meta.properties ]]; then
		$J kafka.tools.StorageTool format -t "$($J kafka.tools.StorageTool random-uuid)" -c "$WORK/server.properties" >"$WORK/logs/format.log" 2>&1
	fi
	echo "=== start $(date -u +%FT%TZ)" >>"$WORK/logs/server.log"
	setsid $J kafka.Kafka "$WORK/server.properties" >>"$WORK/logs/server.log" 2>&1 </dev/null &
	echo $! >"$WORK/broker.pid"
	for _ in $(seq 1 180); do
		if [[ $(awk '/^=== start/{s=0} /Kafka Server started/{s=1} END{print s}' "$WORK/logs/server.log") == 1 ]]; then exit 0; fi
		sleep 0.5
	done
	echo "broker.sh: not started; see $WORK/logs/server.log" >&2
	exit 1
	;;
stop)
	p=$(cat "$WORK/broker.pid")
	kill -TERM "$p"
	while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
	rm -f "$WORK/broker.pid"
	;;
wipe) rm -rf "$WORK" ;;
*)
	echo "usage: broker.sh start|stop|wipe" >&2
	exit 2
	;;
esac
