#!/usr/bin/env bash
# Regenerates out/<kafka-version>/<name>.txt: the Topology#describe() text of
# every topology built by Describe.java with Kafka Streams 3.6.2 and 4.x
# (profile kafka4), and of the seed alone (Seed.java) with 2.x (profile
# kafka2). Needs Java 17 and mvn; no broker.
set -euo pipefail
cd "$(dirname "$0")"
mvn -B -q package -DskipTests
java -cp 'target/classes:target/lib/*' kaudit.describe.Describe out/3.6
mvn -B -q -P kafka4 package -DskipTests
java -cp 'target-kafka4/classes:target-kafka4/lib/*' kaudit.describe.Describe out/4.0
mvn -B -q -P kafka2 package -DskipTests
java -cp 'target-kafka2/classes:target-kafka2/lib/*' kaudit.describe.Seed out/2.8
