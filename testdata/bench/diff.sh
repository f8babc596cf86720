#!/usr/bin/env bash
# Measures kaudit diff on a generated clean app of 3 × RECORDS source records
# (default 200,000) served by an in-process broker in another process:
# wall time and peak memory from /usr/bin/time -v.
#
#   testdata/bench/diff.sh [RECORDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
records=${1:-200000}
work=$(mktemp -d)
trap 'kill "$serve" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/kaudit" ./cmd/kaudit
go build -o "$work/serve" ./testdata/bench/serve
"$work/serve" -records "$records" -dir "$work" > "$work/ready" 2> "$work/serve.log" &
serve=$!
for _ in $(seq 1 1800); do
	grep -q '^ready' "$work/ready" 2>/dev/null && break
	kill -0 "$serve" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
	sleep 1
done
read -r _ bootstrap registry < "$work/ready"
cat "$work/serve.log" >&2
echo "kaudit diff on 3 x $records records (bootstrap $bootstrap):" >&2
set +e
[[ -n ${KAUDIT_PROFILE:-} ]] && rm -f "$KAUDIT_PROFILE.mem" "$KAUDIT_PROFILE.cpu" # written only as new files
/usr/bin/time -v "$work/kaudit" ${KAUDIT_PROFILE:+--memprofile "$KAUDIT_PROFILE.mem" --cpuprofile "$KAUDIT_PROFILE.cpu"} diff --bootstrap-server "$bootstrap" --schema-registry-url "$registry" \
	--spec "$work/kaudit.yaml" --format json --output "$work/report.json" "${@:2}" 2> "$work/time.txt"
rc=$?
set -e
grep -E 'Elapsed \(wall|Maximum resident|User time|System time' "$work/time.txt" >&2
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['summary']; print('verdict', s['verdict'], 'records', s.get('records'))" "$work/report.json" >&2
echo "exit $rc" >&2
