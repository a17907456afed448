"""The "How to run" section of an RKNN case's repro bundle README (``Vendor.how_to_run``)."""

from __future__ import annotations


def how_to_run(platform: str) -> list[str]:
    """What ``reproduce.py`` needs and how it is run, for a case of ``platform``."""
    return [
        "Needs python3, numpy and rknn-toolkit2 (the version under versions above).",
        "",
        "```",
        "python3 reproduce.py                                  # the toolkit's simulator",
        f"python3 reproduce.py --target {platform} --device-id ID   # a board (adb id)",
        "python3 reproduce.py --board BOARD.yaml   # an npu-hil board over SSH (needs npu-hil)",
        "```",
        "",
        "It builds model.onnx with toolkit.json's settings (the user's own RKNN.config() and",
        "RKNN.build() arguments among them) in a temporary folder (nothing is written here),",
        "runs inputs/*.npy and compares the whole observation with the one recorded in",
        "case.json: outcome (outputs or the stage that failed), placement and precision per op",
        "type, and whether the outputs match reference/*.npy within the recorded tolerance. It",
        "prints the document's line and the recorded wrong layer with its numbers where the",
        "bundle has them. Exit status: 0 reproduced (the recorded verdict), 1 not reproduced",
        "(what differs is printed), 2 could not run (no toolkit, a damaged bundle, no board",
        "answering --target or --board). `--log FILE` keeps the toolkit's output.",
    ]
