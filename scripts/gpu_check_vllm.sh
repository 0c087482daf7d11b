#!/usr/bin/env bash
# The vLLM backend on a GPU machine: `hcp serve` with HCP_SERVING_BACKEND=vllm forwarding
# to a vLLM OpenAI server (--enable-lora, runtime LoRA loading), against the embedded
# backend on the same GPU. Checks, with the stock OpenAI client:
#   1. each adapter is loaded into vLLM by digest and answers under its own name;
#   2. greedy answers of vLLM and of the embedded PEFT pool agree per adapter (same
#      rendered token ids, bf16 both: the first 8 tokens must match);
#   3. every exchange is recorded with the digest that answered;
#   4. an alias move is followed on the next request.
# Needs: a CUDA GPU, vllm importable in this environment (pip install vllm; the device
# machine has no network, so it must already be there), the project installed
# (pip install -e '.[dev,train]'). Prints PASS/FAIL lines; exit 0 only if all pass.
#   bash scripts/gpu_check_vllm.sh [workdir]
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="${1:-$(mktemp -d)}"
PY="${PYTHON:-python}"
"$PY" -c "import vllm, torch; assert torch.cuda.is_available()" || {
  echo "FAIL: needs a CUDA GPU and vllm importable"; exit 2; }
export HCP_DATA_DIR="$WORK/data" HCP_MODELS_DIR="$WORK/models" HCP_SERVING_CONTRACT=serve
export HCP_DATABASE_URL="sqlite:///$WORK/hcp.sqlite3" HCP_CONSOLE_SECRET=gpu-check
mkdir -p "$HCP_DATA_DIR" "$HCP_MODELS_DIR"
# The world: the serving contract, the tiny Llama base (vLLM runs Llama), two adapters.
"$PY" - "$WORK" <<'PYEOF'
import json, sys
from pathlib import Path
from access.keys import create_key
from hcp import migrate
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.serving_world import CONTRACT, build_world, train_adapter
from tests.unit.trainer_core.factories import seed_reward
from tests.unit.trainer_core.fixtures import RecordingDispatcher
work = Path(sys.argv[1]); url = f"sqlite:///{work / 'hcp.sqlite3'}"
migrate.upgrade(url)
c = Container(settings=Settings(database_url=url, data_dir=work / "data", models_dir=work / "models",
                                serving_contract=CONTRACT),
              engine=make_engine(url), dispatch_to=RecordingDispatcher())
build_world(c, work / "models", hidden_size=256, num_layers=4, num_heads=4)
seed_reward(c.engine, c.store, "coding", "seed", "seed", 1.0,
            contract=(CONTRACT, 1, c.contracts.get(CONTRACT, 1).content_hash))
a = [train_adapter(c, "coding", s, f"gpu {s}")[0] for s in (1, 2)]
c.aliases.move("coding", "production", a[0].adapter_id, "gpu-check", "start")
(work / "world.json").write_text(json.dumps({
    "key": create_key(c.engine, ["chat:write"], "gpu", tenant="gpu"),
    "base": c.registry.base_model("tiny").path,
    "adapters": [[x.adapter_id, x.artifact_sha256] for x in a]}))
PYEOF
BASE=$("$PY" -c "import json;print(json.load(open('$WORK/world.json'))['base'])")
VLLM_ALLOW_RUNTIME_LORA_UPDATING=True "$PY" -m vllm.entrypoints.openai.api_server \
  --model "$BASE" --enable-lora --max-lora-rank 16 --max-loras 4 --dtype bfloat16 \
  --port 8101 --max-model-len 512 >"$WORK/vllm.log" 2>&1 &
VLLM_PID=$!
HCP_SERVING_BACKEND=embedded HCP_SERVING_PRECISION=bf16 "$PY" -m cli.main serve --port 8102 \
  --no-run-workers >"$WORK/embedded.log" 2>&1 &
EMB_PID=$!
HCP_SERVING_BACKEND=vllm HCP_VLLM_URL=http://127.0.0.1:8101 "$PY" -m cli.main serve \
  --port 8103 --no-run-workers >"$WORK/gateway.log" 2>&1 &
GW_PID=$!
trap 'kill $VLLM_PID $EMB_PID $GW_PID 2>/dev/null || true' EXIT
"$PY" - "$WORK" <<'PYEOF'
import json, sys, time
from pathlib import Path
import httpx, openai
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
work = Path(sys.argv[1]); world = json.loads((work / "world.json").read_text())
for port in (8101, 8102, 8103):
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/{'health' if port == 8101 else 'healthz'}").status_code < 500:
                break
        except httpx.TransportError:
            pass
        time.sleep(1)
    else:
        print(f"FAIL: port {port} did not come up"); sys.exit(1)
clients = {name: openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=world["key"], max_retries=0)
           for name, port in (("embedded", 8102), ("vllm", 8103))}
ok = True
def check(what, cond):
    global ok
    ok &= bool(cond); print(("PASS: " if cond else "FAIL: ") + what)
msgs = [{"role": "user", "content": "def add(a, b):"}]
seen = {}
for adapter_id, digest in world["adapters"]:
    for name, client in clients.items():
        raw = client.chat.completions.with_raw_response.create(model=adapter_id, messages=msgs,
                                                                max_tokens=8, temperature=0)
        seen[name, digest] = raw.parse().choices[0].message.content
        check(f"{name} {adapter_id}: served by digest {digest[:12]}", raw.headers["x-hcp-adapter-digest"] == digest)
    check(f"{adapter_id}: vLLM and embedded agree ({seen['vllm', digest]!r} / {seen['embedded', digest]!r})",
          seen["vllm", digest] == seen["embedded", digest])
loaded = httpx.get("http://127.0.0.1:8101/v1/models").json()["data"]
check("vLLM holds each adapter under a<sha256>", {f"a{d}" for _, d in world["adapters"]} <= {m["id"] for m in loaded})
c = Container(settings=Settings(), engine=make_engine(Settings().resolved_database_url))
second = world["adapters"][1]
c.aliases.move("coding", "production", second[0], "gpu-check", "flip")
raw = clients["vllm"].chat.completions.with_raw_response.create(model="coding", messages=msgs, max_tokens=8, temperature=0)
check("an alias move is followed on the next request", raw.headers["x-hcp-adapter-digest"] == second[1])
said = [e for e in c.store.read_all(0, 5000, tenant="gpu") if e.type == "turn.assistant"]
check(f"every exchange recorded with its digest ({len(said)})",
      len(said) == 5 and all(e.payload["adapter_digest"] in {d for _, d in world["adapters"]} for e in said))
sys.exit(0 if ok else 1)
PYEOF
