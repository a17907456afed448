"""The run's vendor and platforms: ``--vendor`` and ``--platform``, resolved once, as the run
configuration (``harness.plugin.configure.RunConfig``) reads them. The vendor comes first
(``harness.vendors.run_vendor``: the option, ``HIL_VENDOR``, the project's pin found from the
rootdir, the one installed vendor that can run cases); the platforms are that vendor's."""

from __future__ import annotations

import pytest

from harness.vendors import ALL_PLATFORMS, run_platforms, run_vendor, vendor_help
from harness.vendors.base import Vendor


def add_vendor_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--vendor",
        default=None,
        metavar="NAME",
        help=vendor_help("the rootdir"),
    )
    group.addoption(
        "--platform",
        default=None,
        metavar="P[,P...]|all",
        help="target platforms of the run's vendor, in any case (default: the vendor's "
        "first); 'all': every one of the vendor",
    )


def the_vendor(config: pytest.Config) -> Vendor:
    """The run's vendor; none chosen, or an unknown one, is a usage error saying why."""
    try:
        return run_vendor(config.getoption("vendor"), config.rootpath)
    except LookupError as exc:
        raise pytest.UsageError(f"--vendor: {exc}") from None


def the_platforms(config: pytest.Config, vendor: Vendor) -> tuple[str, str, list[str]]:
    """``--platform`` as given (or the vendor's default), as the vendor spells it (one
    platform, several, or "all"), and the run's platforms, each once; an unknown name, or one
    of another vendor, is a usage error."""
    given = str(config.getoption("platform") or vendor.default_platform)
    try:
        platform = run_platforms(vendor, given)
    except LookupError as exc:
        raise pytest.UsageError(f"--platform: {exc}") from None
    if platform == ALL_PLATFORMS:
        return given, platform, list(vendor.platforms)
    return given, platform, list(dict.fromkeys(platform.split(",")))
