"""npu-hil: documented NPU constraints turned into tiny models, run on boards or the simulator."""

__version__ = "0.1.0"
