#!/usr/bin/env bash
# The jobs of the one tox environment `hil` (docs/getting-started.md), so that switching between
# them reuses the environment instead of reinstalling it:
#   tox                          the project's checks: their system parts (tools/provision.sh), ruff,
#                                ruff format, mypy, lint-imports, the documentation site
#                                (mkdocs build --strict into site/), then the tests with their
#                                coverage of harness/ held to a floor (SDK 2.3.2, for
#                                the matrix tests, is installed by them on first use:
#                                tests/conftest.py)
#   tox -- checks [PYTEST ARGS]  the same, with arguments for pytest (paths narrow it; default tests/)
#   tox -- suites [PYTEST ARGS]  the constraint suites into $HIL_RESULTS (default results), then
#                                the report, written even when cases fail; the shipped known
#                                issues keep the job green while the SDK behaves as recorded
#                                (HIL_KNOWN_ISSUES=off: judge every case afresh; docs/nightly.md)
#   tox -- sdk-matrix [PYTEST ARGS]  the suites on every rknn-toolkit2 release with a recipe
#                                (installs the missing SDK environments first: hil sdk install
#                                all, ~40 s each from the index) into $HIL_RESULTS (default
#                                results-sdk-matrix), then one report with the releases side by
#                                side; no known issues (their entries are pinned to 2.5.0), the
#                                slow tier only with `--tier full`
set -uo pipefail
# The suites into $results, then the report, written even when cases fail; the exit status
# is pytest's, else the report's.
suites_then_report() {
    pytest suites --results "$results" "$@"
    local status=$?
    case " $* " in  # nothing ran: no report (the directory may hold an earlier run's)
        *" --collect-only "* | *" --co "*) exit $status ;;
    esac
    hil report "$results"
    local report=$?
    exit $((status != 0 ? status : report))
}

job=${1:-checks}
shift || true
case "$job" in
    checks)
        # the system parts again (installed as root, else named): the set-up ran it first, but
        # tox may be run without it
        # the documentation site: strict, so a broken link or a page left out of the nav fails
        # the whole test run (no arguments) also measures the package's line coverage and fails
        # below pyproject's floor ([tool.coverage.report] fail_under); a narrowed run does not.
        # coverage starts before pytest, so the lines the npu-hil plugin (an entry point pytest
        # imports before any plugin of its own could start measuring) runs on import count.
        tests=(pytest "$@")
        [ $# -eq 0 ] && tests=(coverage run -m pytest)
        bash tools/provision.sh && ruff check . && ruff format --check . && mypy && lint-imports \
            && NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet && "${tests[@]}" || exit $?
        # the files not wholly covered and the total; exit 2 below the floor. An `if`, not
        # `[ ... ] &&`: a narrowed run's false test would be the job's exit status.
        if [ $# -eq 0 ]; then
            coverage report --skip-covered --skip-empty
        fi
        ;;
    suites)
        results=${HIL_RESULTS:-results}
        known=${HIL_KNOWN_ISSUES:-vendor}  # the vendor's shipped file (--known-issues vendor)
        suites_then_report --known-issues "$known" "$@"
        ;;
    sdk-matrix)
        results=${HIL_RESULTS:-results-sdk-matrix}
        hil sdk install all || exit $?
        suites_then_report --sdk all "$@"
        ;;
    *)
        echo "tox -- JOB: JOB is 'checks', 'suites' or 'sdk-matrix', not '$job'" >&2
        exit 2
        ;;
esac
