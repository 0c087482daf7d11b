#!/usr/bin/env bash
# The embedded engine on a CUDA GPU in bf16, in one call of at most 8 minutes: the chat
# gateway on the GPU, a gate on the GPU (hcp demo --model tiny --device cuda), greedy
# answers against the CPU engine's first tokens, and tokens/s of one adapter, a 4-adapter
# mixed batch and bare transformers generate (scripts/gpu_check.py says what each checks).
# Needs: a CUDA GPU and the project installed with its train extra (torch, transformers,
# peft); no network, no vLLM. Prints PASS/FAIL lines; exit 0 only if all pass.
#   bash scripts/gpu_check.sh [--model-dir DIR] [--repeats N]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
exec timeout 480 "$PY" scripts/gpu_check.py "$@"
