"""``--junitxml``: each case's verdict and one-line cause where CI systems show a test's
text. A failing case's is its failure message and a known issue's or a baseline failure's
its skipped (xfail) message, both written by ``check_verdict``; a passing case's (confirmed,
doc-drift, limit-rewritten, ...) is its testcase's ``system-out``, e.g. ``doc-drift:
<cause>``, which Jenkins and GitLab show beside a passed test, where pytest writes nothing
unless ``junit_logging`` is set (and then the test's captured output, not the verdict).

Under pytest-xdist the controller writes the XML from the workers' reports, which carry the
case's ``user_properties`` (``hil_record``), so this runs there.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

# pytest has no public way to add an element to a testcase; LogXML's reporter is the one
from _pytest.junitxml import LogXML, bin_xml_escape, xml_key

VERDICT = "verdict"  # the user_properties hil_record sets
CAUSE = "cause"


class VerdictsInJunit:
    """Adds a passing case's verdict line to its testcase in the XML being written."""

    def __init__(self, xml: LogXML) -> None:
        self.xml = xml

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if report.when != "call" or not report.passed or VERDICT not in properties:
            return
        out = ET.Element("system-out")
        out.text = bin_xml_escape(f"{properties[VERDICT]}: {properties.get(CAUSE, '')}")
        self.xml.node_reporter(report).append(out)


@pytest.hookimpl(trylast=True)  # after pytest's junitxml has made its LogXML
def pytest_configure(config: pytest.Config) -> None:
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        config.pluginmanager.register(VerdictsInJunit(xml), "npu-hil-junit")
