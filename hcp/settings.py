"""The one place configuration is read. Every variable has the prefix ``HCP_``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from integrations.webhooks.targets import parse_allowlist
from kernel.json_input import JsonLimits

DEFAULT_DATA_DIR = Path("hcp-data")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HCP_", extra="ignore")

    environment: str = Field(
        "development", description="`development` or `production`; production refuses unsafe defaults"
    )
    data_dir: Path = Field(DEFAULT_DATA_DIR, description="Where embedded mode keeps its files")
    database_url: str = Field(
        "", description="SQLAlchemy URL; empty means a SQLite file under data_dir (embedded mode)"
    )
    kafka_bootstrap: str = Field(
        "", description="Kafka bootstrap servers; empty means the database log replaces Kafka"
    )
    topic_prefix: str = Field(
        "hcp", description="Topics are <prefix>.events, <prefix>.rewards and <prefix>.checkpoints")
    kafka_producer: Literal["confluent-kafka", "kafka-python"] = Field(
        "confluent-kafka", description="The relay's Kafka client: librdkafka, or pure-Python kafka-python"
    )
    relay_fallback_s: float = Field(
        1.0, gt=0, description="PostgreSQL: how long an idle relay waits for a commit's "
        "notification before reading anyway (what a lost notification costs at most)")
    relay_linger_s: float = Field(
        0.01, ge=0, description="PostgreSQL: how long the relay lets commits gather after a "
        "notification before it reads them (fewer, larger Kafka requests for a little latency)")
    relay_poll_s: float = Field(
        0.05, gt=0, description="SQLite (no notifications): how often an idle relay reads")
    redis_url: str = Field(
        "", description="Celery broker URL; empty means training tasks run in-process"
    )
    artifact_dir: Path | None = Field(
        None, description="Content-addressed adapter store; default <data_dir>/artifacts"
    )
    max_batch_events: int = Field(500, description="Most events one POST /v1/events may carry")
    max_payload_bytes: int = Field(262_144, description="Largest payload of one event, as JSON")
    max_page_bytes: int = Field(
        8_388_608, ge=1, description="Most bytes of events in one page of GET /v1/events or "
        "/v1/streams/{id} (at least one event; next_after says where the page stopped)")
    checkpoint_key_file: Path | None = Field(
        None, description="Ed25519 key that signs checkpoints (`hcp audit keygen`); keep it out of the repo"
    )
    checkpoint_key_name: str = Field(
        "", description="The key's name (the log's origin) when the key file is PEM or OpenSSH"
    )
    max_error_rate: float = Field(
        0.05, ge=0.0, le=1.0, description="Largest share of applicable subjects a dry run, the "
        "publish check or a re-evaluation may fail to score before it fails (or is degraded)")
    publish_check_subjects: int = Field(
        500, ge=0, le=10_000, description="Recent subjects a version is dry-run on before it is "
        "published (0: no check)")
    max_body_bytes: int = Field(
        16_777_216, ge=1, description="Largest request body; larger ones get 413 unread")
    max_json_depth: int = Field(64, ge=1, description="Deepest nesting of an event payload")
    max_json_object_keys: int = Field(1000, ge=1, description="Most keys in one payload object")
    max_json_string_chars: int = Field(
        131_072, ge=1, description="Longest string (or key) in a payload, in characters")
    auth_failure_burst: int = Field(
        20, ge=1, description="Failed authentications a client address (or key id) may make "
        "before 429; per API process")
    auth_failure_per_second: float = Field(
        1.0, gt=0, description="How fast that allowance refills, failures per second")
    health_timeout_s: float = Field(
        1.5, gt=0, description="How long /healthz waits for each dependency")
    unavailable_retry_after_s: int = Field(
        5, ge=1, description="Retry-After of a 503 when the database is unreachable")
    models_dir: Path | None = Field(
        None, description="The only directory base models may be registered from; "
                          "default <data_dir>/models"
    )
    key_cache_seconds: float = Field(
        5.0, ge=0, description="How long a process trusts an authenticated key without SQL; "
                               "a revocation elsewhere takes effect within this time"
    )
    subject_budget_seconds: float = Field(
        1.0, gt=0, description="Most wall time one subject's evaluation under one contract "
                               "version may take (split across its expressions)"
    )
    reevaluation_chunk_positions: int = Field(
        2000, ge=1, le=1_000_000, description="Log positions a re-evaluation scores and commits "
        "at a time: its progress steps, and the share one process claims (processes sharing a "
        "job must agree on it)")
    dry_run_budget_seconds: float = Field(
        120.0, gt=0, description="Most wall time one dry run may score for; it then reports "
                                 "the subjects scored so far"
    )
    dry_run_wait_seconds: float = Field(
        5.0, ge=0, description="How long POST .../dry-run waits for the result before "
                               "answering 202 with a job to poll"
    )
    api_host: str = Field("127.0.0.1", description="Default host for `hcp serve`")
    api_port: int = Field(8000, description="Default port for `hcp serve`")
    api_workers: int = Field(1, ge=1, description="API processes of `hcp serve` (each a "
                                                  "uvicorn worker; docs/scaling.md)")
    console_secret: str = Field(
        "", description="Key that signs console session cookies; empty: a random one per "
        "process (sessions end when it restarts; set it when several processes serve)")
    console_session_minutes: int = Field(
        30, ge=1, le=720, description="How long a console sign-in lasts")
    unsafe_run_model_code_without_sandbox: bool = Field(
        False, description="Run model-written code (the coding checks, the gate) where "
        "bubblewrap cannot make its namespaces, behind only an in-process hook and rlimits: "
        "UNSAFE, the code can then reach the network and read what this user can")
    openlineage_namespace: str = Field(
        "hcp", description="OpenLineage namespace of the exported jobs and datasets")
    openlineage_transport: dict[str, Any] = Field(
        default_factory=dict,
        description='openlineage-python transport config as JSON, e.g. {"type": "file", '
                    '"log_file_path": "ol.jsonl", "append": true}, {"type": "http", "url": …} or '
                    '{"type": "kafka", "topic": …, "config": {"bootstrap.servers": …}}')
    serving_contract: str = Field(
        "default", description="The contract whose serving versions configure POST "
        "/v1/chat/completions: system prompts, skills, tools, router, generation limits")
    serving_backend: Literal["embedded", "vllm"] = Field(
        "embedded", description="Who generates chat answers: `embedded` (PEFT in the API or "
        "`hcp gateway` process) or `vllm` (a vLLM OpenAI server at HCP_VLLM_URL)")
    serving_device: str = Field(
        "", description="The embedded backend's device (cpu, cuda, cuda:1); empty: CUDA when present")
    serving_precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="The embedded base's dtype: auto is bf16 on CUDA, fp32 on a CPU; "
        "bf16 on a CPU without bf16 products (AVX2 only) is fp32")
    serving_batch_window_ms: float = Field(
        5.0, ge=0, le=1000, description="How long a chat request waits for others to share "
        "its decoding batch (mixed adapters decode together)")
    serving_max_batch_rows: int = Field(32, ge=1, le=1024, description="Most requests one "
                                        "decoding batch holds")
    serving_max_adapters: int = Field(16, ge=1, description="Adapters the embedded pool keeps "
                                      "loaded per base model (least recently used go first)")
    serving_timeout_s: float = Field(300.0, gt=0, description="Longest a chat generation may "
                                     "take, queueing included")
    vllm_url: str = Field("", description="The vLLM OpenAI server the vllm backend forwards to, "
                          "started with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True")
    webhook_key_file: Path | None = Field(
        None, description="Key file that encrypts webhook secrets at rest (made on first use, "
        "mode 0600; every API and deliverer process must read the same one); default "
        "<data_dir>/webhook.key")
    webhook_timeout_s: float = Field(10.0, gt=0, le=120, description="The whole of one webhook "
                                     "delivery attempt (resolving, connecting, sending, the answer's "
                                     "status): cut at this deadline, and a failed attempt's outcome "
                                     "is recorded only when it has passed")
    webhook_allowed_targets: list[str] = Field(
        default_factory=list, description='Internal webhook receivers the operator allows, as a '
        'JSON list of networks and host names, e.g. ["10.20.0.0/16", "hooks.internal"]; '
        "empty: only hosts whose every address is public (loopback, private, link-local, "
        "shared and unique-local addresses are refused)")
    webhook_max_subscriptions: int = Field(20, ge=1, le=1000, description="Webhook "
                                           "subscriptions one tenant may have (each is a "
                                           "delivery lane of its own)")
    webhook_redeliveries_per_hour: int = Field(30, ge=1, le=10_000, description="Redeliveries "
                                               "one webhook subscription may queue in any hour")
    webhook_max_attempts: int = Field(12, ge=1, le=100, description="Failed attempts in a row "
                                      "at one event before its subscription is disabled")
    webhook_backoff_s: float = Field(1.0, gt=0, description="Wait after a subscription's first "
                                     "failed delivery; doubled after each further failure")
    webhook_backoff_max_s: float = Field(300.0, gt=0, description="Longest wait between two "
                                         "attempts of a failing webhook delivery")
    otlp_max_spans: int = Field(
        8192, ge=1, le=1_000_000, description="Most spans one POST /v1/traces may carry (413 "
        "past it, counted before the body is decoded)")
    otlp_max_items: int = Field(
        262_144, ge=1, le=10_000_000, description="Most protobuf messages (spans, attributes, "
        "events, values), or JSON objects and arrays, one POST /v1/traces may carry (413 past it, "
        "counted before the body is decoded)")
    otlp_evaluations_endpoint: str = Field(
        "", description="OTLP/HTTP logs endpoint (e.g. http://collector:4318/v1/logs) that "
        "every reward record is exported to as a gen_ai.evaluation.result log record; empty: "
        "no export")
    judge_endpoints: dict[str, dict[str, str]] = Field(
        default_factory=dict, description='OpenAI-compatible endpoints serving judge models, '
        'by the weights digest contracts name them by, as JSON: {"sha256:…": {"url": '
        '"http://judge:8000/v1", "model": "…", "api_key": "…"}}; a judge model with no '
        "endpoint here must be a registered base model the server can load")
    judge_timeout_s: float = Field(60.0, gt=0, le=600, description="How long one judge call "
                                   "may take before the subject waits and is asked again later")
    otlp_evaluations_headers: dict[str, str] = Field(
        default_factory=dict, description='Headers of that export as JSON, e.g. '
        '{"Authorization": "Bearer …"}')

    @field_validator("data_dir", "artifact_dir", "models_dir", "checkpoint_key_file",
                     "webhook_key_file")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        # Resolved once, here: every core sees absolute paths only, so a root joined with a
        # path that already starts with it (a relative one) cannot happen downstream.
        return None if path is None else path.expanduser().resolve()

    @field_validator("judge_endpoints")
    @classmethod
    def _judge_endpoints(cls, entries: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for digest, entry in entries.items():
            if not digest.startswith("sha256:") or len(digest) != 71:
                raise ValueError(f"judge endpoint key {digest!r} is not a sha256:<64 hex> digest")
            if not str(entry.get("url", "")).startswith(("http://", "https://")):
                raise ValueError(f"judge endpoint for {digest} needs a url (http:// or https://)")
        return entries

    @field_validator("webhook_allowed_targets")
    @classmethod
    def _allowlist(cls, entries: list[str]) -> list[str]:
        parse_allowlist(entries)  # refuses a URL, a port or a wildcard, naming it
        return entries

    @model_validator(mode="after")
    def _refuse_embedded_in_production(self) -> Settings:
        # An embedded SQLite file is fine for a laptop, never for the system of record.
        if self.environment == "production" and not self.database_url:
            raise ValueError("HCP_DATABASE_URL must be set when HCP_ENVIRONMENT=production")
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'hcp.sqlite3'}"

    @property
    def json_limits(self) -> JsonLimits:
        return JsonLimits(self.max_json_depth, self.max_json_object_keys, self.max_json_string_chars)

    @property
    def embedded(self) -> bool:
        return not self.kafka_bootstrap

    @property
    def events_topic(self) -> str:
        return f"{self.topic_prefix}.events"

    @property
    def rewards_topic(self) -> str:
        return f"{self.topic_prefix}.rewards"

    @property
    def checkpoints_topic(self) -> str:
        return f"{self.topic_prefix}.checkpoints"

    @property
    def resolved_artifact_dir(self) -> Path:
        return self.artifact_dir or self.data_dir / "artifacts"

    @property
    def resolved_models_dir(self) -> Path:
        return self.models_dir or self.data_dir / "models"

    @property
    def resolved_webhook_key_file(self) -> Path:
        return self.webhook_key_file or self.data_dir / "webhook.key"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
