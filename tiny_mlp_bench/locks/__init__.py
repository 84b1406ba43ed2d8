"""Locks of the environments that are not this machine's (the CUDA images, the GPU kit) and the GPU
kit's wheels, ``tiny-mlp-bench locks``, resolved on the package index this machine's
pip is configured with (pip_index). Standard library only: they run before any of the study's
environments exist.
"""
