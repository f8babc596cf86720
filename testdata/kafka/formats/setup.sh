#!/usr/bin/env bash
# setup.sh WORK: the formats scenario's Python producer (produce.py) in a venv under WORK/venv,
# with Confluent's Python client and its serializers from PyPI, pinned in requirements.txt. The
# drill runs it before the formats scenario; it does nothing when the venv already holds exactly
# these requirements.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${1:?usage: setup.sh WORK}
venv=$work/venv
stamp=$venv/.requirements
if [[ -x $venv/bin/python ]] && cmp -s "$here/requirements.txt" "$stamp"; then
	exit 0
fi
command -v python3 >/dev/null || { echo "setup.sh: python3 is not installed" >&2; exit 2; }
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
echo "setup.sh: $("$venv/bin/python" -c 'import confluent_kafka; print("confluent-kafka", confluent_kafka.version()[0])') in $venv" >&2
