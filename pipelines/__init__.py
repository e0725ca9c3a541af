"""The Liger benchmark warehouse."""

from pipelines.core import allocator

# Before any module of the package imports polars: its allocator reads the environment once, when it loads.
allocator.configure()
