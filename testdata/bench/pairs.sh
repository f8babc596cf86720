#!/usr/bin/env bash
# pairs.sh: two kaudit commits against each other on one data set (see README.md here).
#
#   testdata/bench/pairs.sh OLD NEW [SIZE [N]]   OLD, NEW: commits; SIZE (default 1000000)
#                                                 total source records; N (default 5) pairs
#
# Run testdata/bench/run.sh once first: it installs what the bench needs and builds the
# generator and the registry, which this script reuses. It builds kaudit at OLD and NEW
# (git archive), starts the bench's broker and registry on 127.0.0.1, generates one data set
# and captures it, then runs N times, in turn, OLD's and NEW's c (kaudit diff, live) and d
# (kaudit diff --snapshot) as run.sh runs them, each under /usr/bin/time, and prints one line
# a run (wall s, user+sys CPU s, peak RSS MiB) and the medians. The machine's speed drifts:
# the same data and alternating binaries are what make the two comparable.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
(($# >= 2)) || { echo "usage: $0 OLD NEW [SIZE [N]]" >&2; exit 2; }
OLD=$1 NEW=$2 SIZE=${3:-1000000} N=${4:-5}
W=$ROOT/testdata/bench/work
P=$W/pairs
export DRILL_WORK=$W/kafka BROKER_HEAP=${BROKER_HEAP:-1g} KAFKA_VERSION=${KAFKA_VERSION:-3.6.2} PORT_PREFIX=21
BS=127.0.0.1:21192
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:21381}
CLUSTER=$ROOT/testdata/kafka/broker/cluster.sh
log() { echo "pairs.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ -x $W/gen && -x $W/registry && -x /usr/bin/time ]] || die "run testdata/bench/run.sh once first"
port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
port_open "$BS" && die "something listens on $BS already: stop it first"
port_open "$REGISTRY_ADDR" && die "something listens on $REGISTRY_ADDR already: set REGISTRY_ADDR"

rm -rf "$P" && mkdir -p "$P"
REGISTRY_PID= CLUSTER_UP=
cleanup() {
	local rc=$?
	set +e
	[[ -n $REGISTRY_PID ]] && kill "$REGISTRY_PID" 2>/dev/null
	[[ -n $CLUSTER_UP ]] && "$CLUSTER" wipe >/dev/null 2>&1
	rm -rf "$P/capture"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for rev in "$OLD" "$NEW"; do
	c=$(git rev-parse --short "$rev")
	[[ -x $P/kaudit-$c ]] && continue
	log "building kaudit $c"
	rm -rf "$P/src" && mkdir -p "$P/src"
	git archive "$rev" | tar -x -C "$P/src"
	(cd "$P/src" && go build -o "$P/kaudit-$c" ./cmd/kaudit)
done
rm -rf "$P/src"
OLDC=$(git rev-parse --short "$OLD") NEWC=$(git rev-parse --short "$NEW")

"$W/registry" -addr "$REGISTRY_ADDR" >"$P/registry.log" 2>&1 &
REGISTRY_PID=$!
for _ in $(seq 1 100); do port_open "$REGISTRY_ADDR" && break; sleep 0.2; done
"$CLUSTER" wipe
CLUSTER_UP=1
"$CLUSTER" start --brokers 1
log "generating $SIZE source records"
"$W/gen" -records "$SIZE" -brokers "$BS" -registry "http://$REGISTRY_ADDR" -dir "$P" -app-id bench >"$P/generate.out" 2>&1 ||
	{ tail -20 "$P/generate.out" >&2; die "the generator failed"; }
TOPICS=()
while read -r t _; do [[ $t == total ]] || TOPICS+=(--topic "$t"); done <"$P/counts.txt"
"$P/kaudit-$NEWC" capture --app-id bench --bootstrap-server "$BS" --out "$P/capture" --schemas "$P/schemas" "${TOPICS[@]}" \
	>"$P/capture.out" 2>&1 || die "kaudit capture failed (see $P/capture.out)"

# measure NAME CMD…: one line, NAME wall CPU RSS
measure() {
	local name=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$P/time" "$@" >/dev/null 2>"$P/$name.err" || die "$name failed (see $P/$name.err)"
	read -r w u s r <"$P/time"
	echo "$name $w $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }') $((r / 1024))" | tee -a "$P/runs.txt"
}
echo "# step commit wall-s cpu-s rss-mib ($SIZE source records, $(nproc) cores, $(uptime | sed 's/.*load average/load average/'))"
: >"$P/runs.txt"
for _ in $(seq 1 "$N"); do
	for c in "$OLDC" "$NEWC"; do
		# the last round's reports: kaudit replaces a file only with --force, which an old commit lacks
		rm -f "$P/c-$c.json" "$P/d-$c.json"
		measure "c $c" "$P/kaudit-$c" diff --bootstrap-server "$BS" --schema-registry-url "http://$REGISTRY_ADDR" \
			--spec "$P/kaudit.yaml" --format json --output "$P/c-$c.json"
		measure "d $c" "$P/kaudit-$c" diff --snapshot "$P/capture" --spec "$P/kaudit.yaml" --format json --output "$P/d-$c.json"
	done
done
"$W/gen" check "$P/c-$OLDC.json" "$P/d-$OLDC.json" "$P/c-$NEWC.json" "$P/d-$NEWC.json" >&2 ||
	die "the data does not audit clean with both commits"
echo "# medians of $N: step commit wall-s cpu-s rss-mib"
for s in c d; do
	for c in "$OLDC" "$NEWC"; do
		awk -v s="$s" -v c="$c" 'BEGIN { n = 0 } $1 == s && $2 == c { w[n] = $3; u[n] = $4; r[n] = $5; n++ }
			function med(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2 }
			END { printf "%s %s %.2f %.2f %d\n", s, c, med(w, n), med(u, n), med(r, n) }' "$P/runs.txt"
	done
done
