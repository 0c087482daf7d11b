#!/usr/bin/env bash
# THE test command, for CI and for a newcomer on a fresh machine:
#
#   bash scripts/ci.sh
#
# It builds .venv (python3.11) if missing, installs the project with its dev and train
# extras, starts PostgreSQL, Redis and Kafka (scripts/services.sh up, which leaves them
# running for the next run), then runs ruff, mypy and the whole pytest suite.
# Exit status is non-zero if any step fails, and also if pytest collected no tests: a
# suite that silently ran nothing must not look green.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }
die() { echo "ci.sh: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ------------------------------------------------------------------ environment
PYTHON="python3.11"
command -v "$PYTHON" >/dev/null || die "$PYTHON not found; the project targets Python 3.11"

if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
# Activate by hand (PATH, not `source`, which trips `set -u` in some versions): the e2e
# tests start the `hcp`, `celery` and `alembic` entry points as subprocesses.
export VIRTUAL_ENV="$PWD/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"

# Always run, even on a reused venv: pip is quick when everything is satisfied, and it
# brings an old venv back in line with pyproject.toml after dependency changes.
# requirements.lock pins every dependency to the versions the figures and tests were made with.
step "pip install -c requirements.lock -e '.[dev,train]' -e clients/python"
python -m pip install -q -c requirements.lock -e '.[dev,train]' -e clients/python  # hcp_client: the e2e tests and docs/client.md use it

# The coding checks run model-written code behind bubblewrap, under a seccomp filter that
# libseccomp builds (pyseccomp loads libseccomp.so.2), with setpriv (util-linux) dropping
# to nobody between the two bubblewraps; tests/redteam/ attacks it.
if ! command -v bwrap >/dev/null || ! command -v setpriv >/dev/null \
    || ! ldconfig -p | grep 'libseccomp\.so\.2 ' >/dev/null; then
  step "apt-get install bubblewrap libseccomp2 util-linux (the coding checks' sandbox)"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap libseccomp2 util-linux
fi

# The console's browser tests drive Chromium from Debian's packages through Playwright's
# Python package (never `playwright install`, which would download a browser).
if [ ! -x /usr/bin/chromium ]; then
  step "apt-get install chromium chromium-driver (for the console's browser tests)"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver
fi

step "scripts/services.sh up"
bash scripts/services.sh up
# services.sh is the single source of the HCP_TEST_* values the tests read.
eval "$(bash scripts/services.sh env)"
export HCP_TEST_POSTGRES_URL HCP_TEST_KAFKA_BOOTSTRAP HCP_TEST_REDIS_URL
# In CI a missing service is a failure, never a silent skip.
export HCP_TEST_REQUIRE_SERVICES=1
# Test artifacts (the console's page screenshots land in $HCP_TEST_ARTIFACTS/console/).
export HCP_TEST_ARTIFACTS="${HCP_TEST_ARTIFACTS:-$PWD/tests/artifacts}"

# ------------------------------------------------------------------ checks
# All three checks run even if an earlier one fails, so one CI run reports every
# problem; the summary at the end decides the exit status.
results=()
failed=0

check() {
  local name=$1; shift
  step "$*"
  local t0=$SECONDS rc=0
  "$@" || rc=$?
  local verdict="ok"
  if [ "$name" = pytest ] && [ "$rc" = 5 ]; then
    verdict="FAILED (pytest collected no tests)"
  elif [ "$rc" != 0 ]; then
    verdict="FAILED (exit $rc)"
  fi
  [ "$verdict" = ok ] || failed=1
  results+=("$(printf '%-7s %-40s %4ss' "$name" "$verdict" $((SECONDS - t0)))")
}

check ruff ruff check .
check mypy mypy kernel events contract evaluators trainer audit access inference harness integrations serving migrations hcp console api cli
# --durations: the slowest tests are named in every CI log, so a suite that grows past its
# time is traced to its cause from the log alone.
check pytest pytest -q -p no:cacheprovider --durations=30 tests

step "summary"
printf '  %s\n' "${results[@]}"
echo "  artifacts: $HCP_TEST_ARTIFACTS"
if [ "$failed" != 0 ]; then
  echo "ci: FAILED"
  exit 1
fi
echo "ci: all green"
