"""The RKNN platforms: toolkit names, which have the Python runtime, NPU cores and core masks."""

# RKNN.config(target_platform=...) of rknn-toolkit2 2.5.0.
PLATFORMS = (
    "rk3562",
    "rk3566",
    "rk3568",
    "rk3576",
    "rk3588",
    "rv1103",
    "rv1106",
    "rv1103b",
    "rv1106b",
    "rk2118",
    "rv1126b",
)
# What a run targets without --platform: the platform of the operator tables (seed 001).
DEFAULT_PLATFORM = "rk3562"
# rknn-toolkit-lite2 (the on-board Python runtime) exists for these only; the rest need a C runner.
LITE2_PLATFORMS = ("rk3562", "rk3566", "rk3568", "rk3576", "rk3588", "rv1126b")
# Platforms whose only runtime is librknnmrt.so, which has no rknn_set_core_mask.
MRT_PLATFORMS = ("rv1103", "rv1106", "rv1103b", "rv1106b", "rk2118")
NPU_CORES = {"rk3588": 3, "rk3576": 2}  # other platforms have one core and no mask to choose
CORE_MASKS = ("auto", "all", "0", "1", "2", "0_1", "0_1_2")
