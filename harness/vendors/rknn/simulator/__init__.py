"""The rknn-toolkit2 simulator backend: worker processes, a result cache, the request contract.

    with SimulatorPool(workers=1, timeout_s=120, cache=SimCache(path)) as pool:
        observation = pool.run(SimRequest(model=onnx_bytes, inputs=[x], target_platform="rk3562"))

Importing this package does not import the toolkit; only the worker processes do.
"""

from harness.vendors.rknn.simulator.cache import SimCache
from harness.vendors.rknn.simulator.pool import SimulatorPool
from harness.vendors.rknn.simulator.request import (
    SimRequest,
    toolkit_calls,
    toolkit_version,
    write_dataset,
)

__all__ = [
    "SimCache",
    "SimRequest",
    "SimulatorPool",
    "toolkit_calls",
    "toolkit_version",
    "write_dataset",
]
