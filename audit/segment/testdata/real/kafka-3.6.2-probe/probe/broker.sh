#!/bin/bash
set -f
LIB=/work/main/testdata/kafka/broker/target/lib-3.6.2
J="java -Xms128m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true -Dlog4j.configuration=file:/work/main/testdata/kafka/broker/log4j.properties -cp $LIB/*"
case $1 in
format) ID=$($J kafka.tools.StorageTool random-uuid); $J kafka.tools.StorageTool format -t "$ID" -c /tmp/segprobe/n1.properties --ignore-formatted ;;
start) $J kafka.Kafka /tmp/segprobe/n1.properties > /tmp/segprobe/n1.log 2>&1 & echo $! > /tmp/segprobe/n1.pid ;;
esac
