"""The embedded engine: PEFT in this process, CPU or CUDA (bf16), one pool per base.

- ``pool``: one base model (verified) and its adapters by artifact digest; every forward
  pass goes through its lock, which says which adapter is active.
- ``offline``: k samples per prompt, batched, seeded (the harness, the gate, the demo).
- ``online``: a running mixed-adapter batch that requests join and leave (the gateway);
  ``batcher``: the thread that feeds it.
- ``engine``: ``EmbeddedEngine``, the ``Engine`` port over all of them, and the base's
  representation of a text (the learned router's features).
"""
