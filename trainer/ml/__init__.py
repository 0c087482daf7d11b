"""The ML core of training: tiny local models, example encoding, LoRA successors, the gate.

This subpackage is the torch adapter of ``trainer/``. Importing ``trainer.ml`` itself, or the
pure modules ``digest``, ``data`` (types only) and ``gate`` (decision only), does not import
torch, so a registry or API process without the ``train`` extra can still use the value
objects; torch, transformers and peft are imported where the work is done.
"""
