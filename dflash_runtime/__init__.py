"""DFlash reference training runtime (the method: shared/reference/dflash.md).

A Qwen3 target from transformers (tiny presets are trained briefly on a generated Markov
chain so they are predictable), the DFlash block-diffusion drafter, flex_attention or a
dense sdpa mask, weighted cross entropy, AdamW, speculative-decoding evaluation, and the
placement of T target models and D drafter workers as threads or torchrun processes.

    python -m dflash_runtime train --preset tiny --steps 60 --attention flex --summary s.json
    python -m dflash_runtime decode --preset tiny --load CKPT_DIR
    python -m dflash_runtime save-target DIR     # then: train --target-path DIR
    torchrun --nproc-per-node 2 -m dflash_runtime train --steps 20

Modules, in data-flow order: config, data, target, masks, drafter, train, decode,
placement, checkpoint, cli. This package never imports triage (nor the reverse).
"""
