"""One model runtime: a model version, named by its registry identity or its bytes,
answers with text.

Every model call of the product goes through here: the chat gateway (``serving``), the
task harness and its probe sets (``harness``), the gate's rollouts (given to the trainer
by the composition root), the router's representation of a turn, and the demo. Training
stays in ``trainer.ml``.

- ``types``: the request and result values (pure): a ``Target`` is a base model by its
  weights digest plus an adapter by its artifact digest (or none), a ``Request`` the
  messages, limits, decoding settings and stop rule of one online answer, a ``SampleJob``
  the prompts, k and seed of an offline one.
- ``names``: what a model name spells (``auto``, ``coding``, ``coding@staging``,
  ``coding@3``, ``sha256:<digest>``); ``resolve``: the one resolver from such a name to
  the registry's bytes; ``verify``: the one function every base model load goes through
  (its weights hashed against the registry once per process).
- ``stops``: stop rules (where an answer is complete).
- ``engine``: the ``Engine`` port (online: continuous batching, streaming, an adapter per
  row; offline: k samples per prompt, seeded; the base's representation of a text).
  Behind it: ``embedded`` (PEFT in this process, CPU or CUDA in bf16, one pool per base)
  and ``vllm`` (a vLLM OpenAI server).
- ``memo``: answers already generated, by what determines them, so none is generated twice.
- ``rollouts``: the gate's text rollout harness on the port.

Layer: above ``trainer`` (it reads the registry and the artifact store), below ``harness``,
``serving`` and the entry points.
"""
