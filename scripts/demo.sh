#!/usr/bin/env bash
# The main job, embedded: no services, nothing downloaded at run time.
#
#   bash scripts/demo.sh [--sessions N]
#
# Builds .venv (python3.11) if missing, installs the project with the training extra
# (torch, peft, transformers from PyPI), then runs `hcp demo`: harness traffic is recorded
# in a SQLite log under ./hcp-data, scored under the example HCP contract, specialists are
# trained from a tiny model built locally, gated, registered with lineage, and audited.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v python3.11 >/dev/null || { echo "demo.sh: python3.11 not found" >&2; exit 1; }
[ -x .venv/bin/python ] || python3.11 -m venv .venv
.venv/bin/python -m pip install -q -e '.[train]'
exec .venv/bin/hcp demo "$@"
