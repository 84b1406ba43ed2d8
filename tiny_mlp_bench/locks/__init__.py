"""Locks of the environments that are not this machine's (the CUDA images, the GPU kit) and the kit's wheels, resolved
on this machine's configured index. Standard library only: they run before any of the study's environments exist."""
