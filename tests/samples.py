"""Log text several test files use: torch 2.13's CUDA OOM message and a log ending in it."""

from __future__ import annotations

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 1.02 GiB is free. Including non-PyTorch memory, "
    "this process has 78.12 GiB memory in use. Of the allocated memory 71.02 GiB is "
    "allocated by PyTorch, and 4.53 GiB is reserved by PyTorch but unallocated. If reserved "
    "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
    "expandable_segments:True to avoid fragmentation.  See documentation for Memory "
    "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
OOM_LOG = (
    "step 10 loss 2.3100\n"
    "Traceback (most recent call last):\n"
    '  File "/work/train.py", line 88, in <module>\n'
    "    loss = model(**batch).loss\n"
    f"{OOM}\n"
)
OOM_LINE = 5  # the line of OOM_LOG the OOM is on
