#!/usr/bin/env bash
# run.sh: kaudit against kcat on a real Kafka broker (see README.md here).
#
#   testdata/bench/run.sh [SIZES]        SIZES: total source records, comma-separated
#                                        (default 1000000,3000000,10000000)
#
# For each size it starts a fresh one-node Kafka (testdata/kafka/broker/cluster.sh) and the
# drill's Schema Registry on 127.0.0.1, writes a clean exactly-once Streams app with
# testdata/bench/gen, then measures under /usr/bin/time -v, one after the other:
#   a  kcat reading every topic of the app once (read_committed)
#   a2 the same with fetch.wait.max.ms=10 (a waits 500 ms at the end of every topic)
#   b  kaudit ledger of every topic
#   c  kaudit diff, live, end to end
#   -  kaudit capture of the app (measured, no ratio)
#   d  kaudit diff --snapshot of that capture
#   e0 SHARDS (default 4) shards of the live diff at once (--shard I/N), merged (not by default)
#   e  the same, the shards handing each other their inputs (--exchange; not by default)
# checks that c, d and the merged shards say clean and name the same findings, and prints a Markdown table
# (also appended to testdata/bench/work/results.md).
#
# Environment: KAUDIT_FLAGS (extra flags for b, c, d and capture), KAUDIT_PROFILE=DIR
# (--cpuprofile/--memprofile of c into DIR/SIZE-diff.{cpu,mem}), KAUDIT_TRACE=DIR (an
# execution trace of c into DIR/SIZE-diff.trace, for go tool trace), GEN_FLAGS (extra flags of
# the generator, e.g. "-keys 3000"), BROKER_HEAP (default 1g), KAFKA_VERSION (default 3.6.2),
# REGISTRY_ADDR (default 127.0.0.1:21381), KCAT_LOCAL=1 (unpack kcat under work/ even as root),
# KAUDIT_REV=REV (build kaudit from that commit, not from the working tree), STEPS (default
# a,a2,b,c,d: a subset skips the others; d includes the capture), RSS_LIMIT_MIB (a measured
# command past it is killed; default 80 % of RAM).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
W=$ROOT/testdata/bench/work
mkdir -p "$W"
SIZES=${1:-1000000,3000000,10000000}
export DRILL_WORK=$W/kafka
export BROKER_HEAP=${BROKER_HEAP:-1g}
export KAFKA_VERSION=${KAFKA_VERSION:-3.6.2}
CLUSTER=$ROOT/testdata/kafka/broker/cluster.sh
export PORT_PREFIX=21 # the broker on 21192 (cluster.sh), apart from the drill's 19xxx ports
BS=127.0.0.1:21192
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:21381}
REG=http://$REGISTRY_ADDR
APP=bench
read -r -a KFLAGS <<<"${KAUDIT_FLAGS:-}"
read -r -a GFLAGS <<<"${GEN_FLAGS:-}"
KCAT=kcat
STEPS=${STEPS:-a,a2,b,c,d}
SHARDS=${SHARDS:-4}
SHARE=$(($(nproc) / SHARDS))
((SHARE >= 1)) || SHARE=1
STEPS_NOTE=
[[ $STEPS == a,a2,b,c,d ]] || STEPS_NOTE="; STEPS=$STEPS"
# a measured command whose processes together pass this RSS is killed (the machine is shared)
RSS_LIMIT_MIB=${RSS_LIMIT_MIB:-$(awk '/^MemTotal/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)}

exec 9>&2 # the script's stderr, also from inside a measured command's redirections
log() { echo "run.sh: $*" >&9; }
die() { log "$*"; exit 1; }

# --- cleanup: every process this script started, by pid ---------------------------------
REGISTRY_PID= CHILD= DOG= CLUSTER_UP=
# killtree PID [SIGNAL]: PID and its descendants, children first
killtree() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null || true); do killtree "$c" "${2:-TERM}"; done
	kill -"${2:-TERM}" "$1" 2>/dev/null || true
}
cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	if [[ -n $DOG ]]; then kill "$DOG" 2>/dev/null; fi
	if [[ -n $CHILD ]]; then killtree "$CHILD"; fi
	if [[ -n $REGISTRY_PID ]]; then killtree "$REGISTRY_PID"; fi
	if [[ -n $CLUSTER_UP ]]; then "$CLUSTER" wipe; fi
	rm -rf "$W/capture"
	((rc == 0)) || log "failed (exit $rc); logs under $W"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# treerss PID: the summed RSS (MiB) of PID and its descendants
treerss() {
	local kb=0 p
	for p in $(pgrep -P "$1" 2>/dev/null || true); do kb=$((kb + $(treerss "$p") * 1024)); done
	p=$(awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0)
	echo $(((kb + ${p:-0}) / 1024))
}

# bg runs a command in the background and waits for it, so that a signal reaches the trap
# at once and the trap can end the command; a watchdog ends it past RSS_LIMIT_MIB.
bg() {
	"$@" &
	CHILD=$!
	local rc=0
	(
		while kill -0 "$CHILD" 2>/dev/null; do
			if (($(treerss "$CHILD") > RSS_LIMIT_MIB)); then
				log "${BG_NAME:-$1} passed ${RSS_LIMIT_MIB} MiB RSS: killed"
				for c in $(pgrep -P "$CHILD"); do killtree "$c" KILL; done
				exit
			fi
			sleep 1
		done
	) &
	DOG=$!
	wait "$CHILD" || rc=$?
	kill "$DOG" 2>/dev/null || true
	wait "$DOG" 2>/dev/null || true
	CHILD= DOG=
	return "$rc"
}

# --- what the harness needs on a fresh machine ------------------------------------------
apt_install() {
	[[ $(id -u) == 0 ]] || die "need $* (not root: install it, or run as root)"
	log "installing $* (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >"$W/apt.log" 2>&1 ||
		{ apt-get update -q >>"$W/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>"$W/apt.log" 2>&1; } ||
		{ tail -20 "$W/apt.log" >&2; die "apt-get install $* failed"; }
}

command -v go >/dev/null || die "need Go (go.mod says which)"
[[ -x /usr/bin/time ]] || apt_install time
command -v java >/dev/null || apt_install default-jre-headless
command -v mvn >/dev/null || apt_install maven
if [[ -z ${KCAT_LOCAL:-} ]] && command -v kcat >/dev/null; then
	:
elif [[ -z ${KCAT_LOCAL:-} && $(id -u) == 0 ]]; then
	apt_install kcat
else
	# not root: the Debian packages unpacked under work/kcat, run with LD_LIBRARY_PATH
	K=$W/kcat
	if [[ ! -x $K/root/usr/bin/kcat ]]; then
		log "unpacking kcat into $K"
		rm -rf "$K" && mkdir -p "$K/deb" "$K/root"
		(cd "$K/deb" && apt-get download kcat librdkafka1 libyajl2 >"$K/download.log" 2>&1) ||
			{ cat "$K/download.log" >&2; die "apt-get download kcat failed"; }
		for d in "$K"/deb/*.deb; do dpkg -x "$d" "$K/root"; done
	fi
	KCAT=$K/root/usr/bin/kcat
	libs=$(find "$K/root" -name 'librdkafka.so*' -printf '%h\n' | sort -u | paste -sd:)
	export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
"$KCAT" -V >/dev/null || die "kcat does not run"

log "building kaudit${KAUDIT_REV:+ $KAUDIT_REV}, the generator and the registry"
if [[ -n ${KAUDIT_REV:-} ]]; then
	# a committed kaudit, when the working tree is mid-edit
	rm -rf "$W/src" && mkdir -p "$W/src"
	git archive "$KAUDIT_REV" | tar -x -C "$W/src"
	(cd "$W/src" && go build -o "$W/kaudit" ./cmd/kaudit)
	KAUDIT_COMMIT=$(git rev-parse --short "$KAUDIT_REV")
else
	go build -o "$W/kaudit" ./cmd/kaudit
	KAUDIT_COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- cmd audit report go.mod go.sum || echo ' + uncommitted changes')
fi
go build -o "$W/gen" ./testdata/bench/gen
go build -o "$W/registry" ./testdata/kafka/registry
KAUDIT=$W/kaudit
GEN=$W/gen

port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
port_open "$BS" && die "something listens on $BS already (the drill?): stop it first"
port_open "$REGISTRY_ADDR" && die "something listens on $REGISTRY_ADDR already: set REGISTRY_ADDR"

"$W/registry" -addr "$REGISTRY_ADDR" >"$W/registry.log" 2>&1 &
REGISTRY_PID=$!
for _ in $(seq 1 100); do port_open "$REGISTRY_ADDR" && break; sleep 0.2; done
port_open "$REGISTRY_ADDR" || die "the registry did not start (see $W/registry.log)"

# --- measuring ------------------------------------------------------------------------
# measure NAME CMD…: runs CMD under /usr/bin/time -v into $RUN/NAME.time, its stdout and
# stderr into $RUN/NAME.out and .err; sets RC, WALL, CPU, RSS (MiB).
measure() {
	local name=$1
	shift
	RC=0
	BG_NAME=$name
	bg /usr/bin/time -v -o "$RUN/$name.time" "$@" >"$RUN/$name.out" 2>"$RUN/$name.err" || RC=$?
	read -r WALL CPU RSS < <(awk -F': ' '
		/Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
		/User time/ { c += $2 } /System time/ { c += $2 }
		/Maximum resident set size/ { r = $2 / 1024 }
		END { printf "%.2f %.2f %.0f\n", w, c, r }' "$RUN/$name.time")
}

# exited: " (exit N)" when the last measure failed; 137 is a kill -9 (the out-of-memory
# killer, or the RSS watchdog)
exited() { ((RC == 0)) || echo " (exit $RC)"; }

# kcat_all ID [KCAT ARGS…]: measure kcat reading every topic once, read_committed, with the
# extra arguments; a failure is recorded in FAIL.
kcat_all() {
	local id=$1
	shift
	# shellcheck disable=SC2016
	measure "$id-kcat" bash -c 'k=$1 bs=$2 n=$3; shift 3; x=("${@:1:n}"); shift "$n"; for t; do "$k" -b "$bs" -X isolation.level=read_committed "${x[@]}" -C -e -o beginning -q -t "$t" >/dev/null || exit; done' \
		_ "$KCAT" "$BS" "$#" "$@" "${TOPICS[@]}"
	((RC == 0)) || FAIL+=("kcat exited $RC (see $RUN/$id-kcat.err)")
}

ROWS=()
# row STEP RECORDS [RATIOS]: one table row of the last measure; RATIOS says whether to add
# its wall time over a's and a2's
row() {
	local rate ra=- ra2=-
	rate=$(awk -v n="$2" -v w="$WALL" 'BEGIN { if (w > 0) printf "%.0f", n / w; else print "-" }')
	if [[ -n ${3:-} ]]; then ra=$(ratio "$WALL" "$A_WALL") ra2=$(ratio "$WALL" "$A2_WALL"); fi
	ROWS+=("| $SIZE | $1 | $WALL | $CPU | $RSS | $2 | $rate | $ra | $ra2 |")
}
var() { local n=${1^^}_$2; echo "${!n}"; } # var a2 WALL: $A2_WALL
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

machine() {
	local cpu mem
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	echo "machine: $(nproc) cores, ${cpu:-unknown CPU}, $mem RAM; kaudit $KAUDIT_COMMIT; Kafka $KAFKA_VERSION (1 node, heap $BROKER_HEAP); kcat $("$KCAT" -V 2>&1 | sed -n 's/.*Version \([^ ]*\).*librdkafka \([^ ]*\).*/\1 (librdkafka \2)/p' | head -1)"
}

IFS=, read -r -a sizes <<<"$SIZES"
MACHINE=$(machine)
log "$MACHINE"
step() { [[ ,$STEPS, == *,$1,* ]]; }
for SIZE in "${sizes[@]}"; do
	[[ $SIZE =~ ^[0-9]+$ ]] || die "size $SIZE is not a number"
	RUN=$W/$SIZE
	CAP=$W/capture
	rm -rf "$RUN" "$CAP"
	mkdir -p "$RUN"
	ROWS=() FAIL=()
	E_WALL=0 E_CPU=0 E0_WALL=0 E0_CPU=0
	A_WALL=0 A_CPU=0 A_RSS=0 A2_WALL=0 A2_CPU=0 A2_RSS=0 B_WALL=0 B_CPU=0 B_RSS=0 C_WALL=0 C_CPU=0 C_RSS=0
	LOAD=$(uptime | sed 's/.*load average/load average/')
	log "size $SIZE: $LOAD"
	"$CLUSTER" wipe
	CLUSTER_UP=1
	"$CLUSTER" start --brokers 1

	log "size $SIZE: generating"
	measure generate "$GEN" -records "$SIZE" -brokers "$BS" -registry "$REG" -dir "$RUN" -app-id "$APP" "${GFLAGS[@]}"
	((RC == 0)) || { tail -20 "$RUN/generate.err" >&2; die "the generator failed (exit $RC)"; }
	cat "$RUN/generate.out" >&2
	SPEC=$RUN/kaudit.yaml
	TOTAL=$(awk '$1 == "total" { print $2 }' "$RUN/counts.txt")
	TOPICS=()
	while read -r t _; do [[ $t == total ]] || TOPICS+=("$t"); done <"$RUN/counts.txt"
	row "generate" "$TOTAL"

	if step a; then
		log "size $SIZE: a. kcat"
		kcat_all a
		A_WALL=$WALL A_CPU=$CPU A_RSS=$RSS
		row "a. kcat, every topic" "$TOTAL"
	fi

	if step a2; then
		# kcat spends most of a's time waiting fetch.wait.max.ms (500 ms) at the end of each
		# topic before -e sees end of partition; a2 is the same read without that wait
		log "size $SIZE: a2. kcat, fetch.wait.max.ms=10"
		kcat_all a2 -X fetch.wait.max.ms=10
		A2_WALL=$WALL A2_CPU=$CPU A2_RSS=$RSS
		row "a2. kcat, every topic, fetch.wait.max.ms=10" "$TOTAL"
	fi

	if step b; then
		log "size $SIZE: b. kaudit ledger"
		# shellcheck disable=SC2016
		measure b-ledger bash -c 'k=$1 bs=$2 n=$3; shift 3; f=("${@:1:n}"); shift "$n"; for t; do "$k" ledger --bootstrap-server "$bs" --topic "$t" --format json "${f[@]}" || { echo "ledger $t: exit $?" >&2; exit 1; }; done' \
			_ "$KAUDIT" "$BS" "${#KFLAGS[@]}" "${KFLAGS[@]}" "${TOPICS[@]}"
		((RC == 0)) || FAIL+=("kaudit ledger exited $RC (see $RUN/b-ledger.err)")
		B_WALL=$WALL B_CPU=$CPU B_RSS=$RSS
		row "b. kaudit ledger, every topic" "$TOTAL" ratios
	fi

	REPORTS=()
	if step c; then
		log "size $SIZE: c. kaudit diff (live)"
		PROF=()
		if [[ -n ${KAUDIT_PROFILE:-} ]]; then
			mkdir -p "$KAUDIT_PROFILE"
			# kaudit writes a profile only as a new file
			rm -f "$KAUDIT_PROFILE/$SIZE-diff.cpu" "$KAUDIT_PROFILE/$SIZE-diff.mem"
			PROF=(--cpuprofile "$KAUDIT_PROFILE/$SIZE-diff.cpu" --memprofile "$KAUDIT_PROFILE/$SIZE-diff.mem")
		fi
		if [[ -n ${KAUDIT_TRACE:-} ]]; then
			mkdir -p "$KAUDIT_TRACE"
			rm -f "$KAUDIT_TRACE/$SIZE-diff.trace"
			PROF+=(--trace "$KAUDIT_TRACE/$SIZE-diff.trace")
		fi
		measure c-diff "$KAUDIT" "${PROF[@]}" diff --bootstrap-server "$BS" --schema-registry-url "$REG" --spec "$SPEC" \
			--format json --output "$RUN/diff-live.json" "${KFLAGS[@]}"
		((RC == 0)) || FAIL+=("kaudit diff (live) exited $RC (see $RUN/c-diff.err)")
		C_WALL=$WALL C_CPU=$CPU C_RSS=$RSS
		row "c. kaudit diff, live$(exited)" "$TOTAL" ratios
		REPORTS+=("$RUN/diff-live.json")
	fi

	# e0, e: SHARDS shards of the live audit run at once (--shard I/N) and merged, each reading
	# every source partition (e0), or handing each other their inputs (e, --exchange): the
	# shards' CPU together against c's; the merged report must say what c says, row for row
	for e in e0 e; do
		step $e || continue
		log "size $SIZE: $e. $SHARDS shards of kaudit diff (live)$([[ $e == e ]] && echo ', --exchange'), merged"
		rm -rf "$RUN/$e" && mkdir -p "$RUN/$e"
		XFLAGS=()
		# the exchange's folder exists before the shards start (kaudit creates none above its run's)
		[[ $e == e ]] && mkdir -p "$RUN/$e/exchange" && XFLAGS=(--exchange "$RUN/$e/exchange")
		# shellcheck disable=SC2016
		# each shard gets its share of the cores, as SHARDS pods of their own would (GOMAXPROCS):
		# four Go runtimes of two threads each on two cores spend a third more CPU preempting and
		# spinning (runtime.asyncPreempt 16 % of a shard's samples against 8 %)
		measure "$e-shards" env GOMAXPROCS=$((SHARE)) bash -c 'k=$1 n=$2 dir=$3 nx=$4; shift 4; x=("${@:1:nx}"); shift "$nx"
			for ((i = 0; i < n; i++)); do "$k" diff --shard "$i/$n" --run-id bench "${x[@]}" "$@" --format json --output "$dir/shard-$i.json" >"$dir/shard-$i.out" 2>"$dir/shard-$i.err" & done
			rc=0; for ((i = 0; i < n; i++)); do wait -n || rc=1; done
			((rc == 0)) || { echo "a shard failed: $(tail -3 "$dir"/shard-*.err)" >&2; exit 1; }
			"$k" merge "$dir"/shard-*.json --format json --output "$dir/merged.json"' \
			_ "$KAUDIT" "$SHARDS" "$RUN/$e" "${#XFLAGS[@]}" "${XFLAGS[@]}" --bootstrap-server "$BS" --schema-registry-url "$REG" --spec "$SPEC" "${KFLAGS[@]}"
		((RC == 0)) || FAIL+=("$e: the shards or their merge exited $RC (see $RUN/$e-shards.err and $RUN/$e/)")
		printf -v "${e^^}_WALL" %s "$WALL"
		printf -v "${e^^}_CPU" %s "$CPU"
		row "$e. $SHARDS shards at once$([[ $e == e ]] && echo ' exchanging inputs'), GOMAXPROCS=$SHARE each, merged$(exited)" "$TOTAL" ratios
		if ((RC == 0)); then
			REPORTS+=("$RUN/$e/merged.json")
			if step c && ! cmp -s <("$KAUDIT" merge "$RUN/diff-live.json" --format csv) <("$KAUDIT" merge "$RUN/$e/merged.json" --format csv); then
				FAIL+=("$e: the merged shards' findings differ from c's")
			fi
		fi
		rm -rf "$RUN/$e/exchange"
	done

	if step d; then
		log "size $SIZE: kaudit capture"
		CAPTOPICS=()
		for t in "${TOPICS[@]}"; do CAPTOPICS+=(--topic "$t"); done
		measure capture "$KAUDIT" capture --app-id "$APP" --bootstrap-server "$BS" --out "$CAP" --schemas "$RUN/schemas" \
			"${CAPTOPICS[@]}" "${KFLAGS[@]}"
		if ((RC != 0)); then
			FAIL+=("kaudit capture exited $RC (see $RUN/capture.err)")
			row "kaudit capture$(exited)" 0
		else
			CAPREC=$("$GEN" records "$CAP/manifest.json")
			row "kaudit capture, $(du -sm "$CAP" | cut -f1) MiB" "$CAPREC"
			log "size $SIZE: d. kaudit diff --snapshot"
			measure d-diff-snapshot "$KAUDIT" diff --snapshot "$CAP" --spec "$SPEC" --format json --output "$RUN/diff-snapshot.json" "${KFLAGS[@]}"
			((RC == 0)) || FAIL+=("kaudit diff (snapshot) exited $RC (see $RUN/d-diff-snapshot.err)")
			row "d. kaudit diff, snapshot$(exited)" "$CAPREC" ratios
			REPORTS+=("$RUN/diff-snapshot.json")
		fi
	fi

	rm -rf "$CAP"
	"$CLUSTER" wipe
	CLUSTER_UP=

	{
		echo
		echo "### $SIZE source records ($(date -u +%FT%TZ))"
		echo
		echo "$MACHINE"
		echo "before the run: $LOAD${KAUDIT_FLAGS:+; KAUDIT_FLAGS=$KAUDIT_FLAGS}${GEN_FLAGS:+; GEN_FLAGS=$GEN_FLAGS}${STEPS_NOTE}"
		echo
		echo "| size | step | wall s | CPU s | peak RSS MiB | records | records/s | wall / a | wall / a2 |"
		echo "|---|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${ROWS[@]}"
		echo
		for base in a a2; do
			step $base || continue
			line=
			step b && line+=" b/$base wall $(ratio "$B_WALL" "$(var "$base" WALL)"), CPU $(ratio "$B_CPU" "$(var "$base" CPU)"), RSS $(ratio "$B_RSS" "$(var "$base" RSS)");"
			step c && line+=" c/$base wall $(ratio "$C_WALL" "$(var "$base" WALL)"), CPU $(ratio "$C_CPU" "$(var "$base" CPU)"), RSS $(ratio "$C_RSS" "$(var "$base" RSS)");"
			for e in e0 e; do
				step $e && step c && line+=" $e/c CPU $(ratio "$(var $e CPU)" "$C_CPU");"
			done
			[[ -n $line ]] && echo "ratios to kcat ($base):${line%;}"
		done
		true
	} | tee -a "$W/results.md"

	# the harness measures the wrong thing unless the data audits clean
	for r in "${REPORTS[@]}"; do [[ -f $r ]] || FAIL+=("no report $r"); done
	if ((${#REPORTS[@]} > 0)) && ! "$GEN" check "${REPORTS[@]}" >&2; then
		FAIL+=("the generated data does not audit clean, or live and snapshot disagree: the bench measures the wrong thing")
	fi
	if ((${#FAIL[@]} > 0)); then
		printf 'run.sh: size %s: %s\n' "$SIZE" "${FAIL[@]}" >&2
		for f in c-diff capture d-diff-snapshot; do [[ -s $RUN/$f.err ]] && { echo "--- $f stderr:"; tail -5 "$RUN/$f.err"; } >&2; done
		die "size $SIZE failed"
	fi
done
