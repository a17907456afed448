"""Acme X1 NPU as npu-hil sees it: a stub vendor (``acme_npu.vendor.VENDOR``)."""
