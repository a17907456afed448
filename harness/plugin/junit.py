"""``--junitxml``: each case's verdict and one-line cause where CI systems show a test's
text. A failing case's is its failure message and a known issue's or a baseline failure's
its skipped (xfail) message, both written by ``check_verdict``; a passing case's (confirmed,
doc-drift, limit-rewritten, ...) is its testcase's ``system-out``, e.g. ``doc-drift:
<cause>``, which Jenkins and GitLab show beside a passed test, where pytest writes nothing
unless ``junit_logging`` is set (and then the test's captured output, not the verdict).

A testcase's time is that case's own: cases run in batches (``harness.scheduler``) while the
first case of each batch waits in its set-up (the ``hil_record`` fixture), so pytest's set-up
times are the batch's, all on that one case, and the last case's teardown closes the session's
simulator or boards. In the XML a case's time is its own share, its record's ``duration_s``
(preparing, running and judging it), plus its test's call.

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
DURATION = "duration_s"


class VerdictsInJunit:
    """Adds a passing case's verdict line to its testcase in the XML being written, and gives
    each case its own time."""

    def __init__(self, xml: LogXML) -> None:
        self.xml = xml

    @pytest.hookimpl(tryfirst=True)  # before LogXML adds the phase's duration, and writes it
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if report.when != "call" and DURATION in properties:
            if self.xml.report_duration == "total":  # set-up: the batch; teardown: the session's
                own = float(str(properties[DURATION])) if report.when == "setup" else 0.0
                self.xml.node_reporter(report).duration += own - report.duration
            return
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
