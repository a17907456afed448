"""The rknn-toolkit2 simulator target: worker processes and a result cache.

    with SimulatorPool(workers=1, timeout_s=120, cache=SimCache(path)) as pool:
        observation = pool.run(Job(model=onnx_bytes, inputs=[x], target_platform="rk3562"))

Importing this package does not import the toolkit; only the worker processes do.
"""

from harness.vendors.rknn.toolkit.simulator.cache import SimCache
from harness.vendors.rknn.toolkit.simulator.pool import SimulatorPool

__all__ = ["SimCache", "SimulatorPool"]
