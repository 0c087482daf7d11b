"""Serving the mixture: an OpenAI-compatible endpoint over the registry's adapters.

``POST /v1/chat/completions`` resolves the request's ``model`` (a specialist, an alias,
a version, a digest, or ``auto``: the serving contract's router), serves it with the
adapter whose bytes the registry names (the pool is keyed by artifact digest), applies
the serving contract's harness configuration, and records the exchange through the
ingest path in the caller's tenant. docs/serving.md is the user's guide.

Pure modules: ``names``, ``openai_shapes``, ``prompting``, ``exchange``. I/O: ``choice``
(the registry), ``sessions`` (the log), ``gateway``; torch: ``pool``, ``batcher``;
HTTP: ``vllm``.
"""
