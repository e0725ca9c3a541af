"""The benchmark tools: how close the pipeline runs to what the machine allows, and the choices measured.

They sit above the library (they import `pipelines`; `pipelines` never imports them) and outside the wheel;
run them from the repository root, e.g. `python -m bench --rows N` (see docs/performance.md).
"""
