#!/usr/bin/env bash
# What a job needs besides Python's packages, named before anything is built:
#   tools/provision.sh suites|sdk-matrix   Python 3.11 and its venv module (Debian's
#                                          python3.11-venv), which the set-up (tools/setup.sh)
#                                          and tox make their virtual environments with
#   tools/provision.sh [checks]            those, and what the tests need
#                                          (docs/getting-started.md): sshd, because the SSH
#                                          tests start their own OpenSSH servers on 127.0.0.1,
#                                          Chromium, because the report's browser test renders
#                                          report.html headless, and PostgreSQL, because the
#                                          results store's tests start a throwaway cluster on
#                                          127.0.0.1 (docs/history.md). Optional: the ARM cross
#                                          compilers and qemu-user, for the C runner's tests on
#                                          emulated ARM (docs/boards.md), which skip without them.
# The set-up runs it first, and the checks job (tools/tox-job.sh) again.
#
# Missing ones are installed through apt-get when run as root on a Debian/Ubuntu machine
# (apt-get update first, non-interactive, quiet); otherwise, or when that fails, it stops at
# once with one line naming what to install. The optional ones never stop it: a line names
# them with their install line, and the tests that need them skip. Exit status: 0 all
# required present, 1 not, 2 an unknown job.
#
# A tool is found as the tests find it: on PATH, else in the folders of HIL_TOOL_DIRS
# (default /usr/sbin /usr/bin: sshd is in /usr/sbin, off a normal user's PATH). PostgreSQL's
# initdb is found in the folders of HIL_POSTGRES_BINS (default /usr/lib/postgresql/*/bin,
# where Debian keeps it, off PATH). Python is the python3.11 on PATH, the one the set-up and
# tox (tox.ini's base_python) take.
set -uo pipefail

tool_dirs=${HIL_TOOL_DIRS-/usr/sbin /usr/bin}
postgres_bins=${HIL_POSTGRES_BINS-/usr/lib/postgresql/*/bin}

have() {
    local found dir
    found=$(command -v "$1") && [ -x "$found" ] && return 0
    for dir in $tool_dirs; do
        [ -x "$dir/$1" ] && return 0
    done
    return 1
}

have_postgres() {
    local dir
    # shellcheck disable=SC2086  # the default is a glob
    for dir in $postgres_bins; do
        [ -x "$dir/initdb" ] && return 0
    done
    return 1
}

# Debian's python3.11 lacks ensurepip, without which venv makes no environment, until
# python3.11-venv is installed.
missing_python() {
    if ! command -v python3.11 >/dev/null 2>&1; then
        echo python3.11 python3.11-venv
    elif ! python3.11 -c "import ensurepip" >/dev/null 2>&1; then
        echo python3.11-venv
    fi
}

missing_packages() {
    local packages
    read -ra packages <<<"$(missing_python)"
    if [ "$job" = checks ]; then
        have sshd || packages+=(openssh-server)
        have chromium || packages+=(chromium)
        have_postgres || packages+=(postgresql)
    fi
    echo "${packages[@]}"
}

# The libc headers too: --no-install-recommends leaves them out of the compilers' packages.
missing_optional() {
    local packages=()
    [ "$job" = checks ] || return 0
    have arm-linux-gnueabihf-gcc || packages+=(gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)
    have aarch64-linux-gnu-gcc || packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
    { have qemu-arm-static && have qemu-aarch64-static; } || packages+=(qemu-user-static)
    echo "${packages[@]}"
}

# One line for the optional ones still missing; never a failure.
note_optional() {
    local optional
    optional=$(missing_optional)
    [ -z "$optional" ] || echo "npu-hil tests: the C runner's ARM tests skip without $optional (Debian/Ubuntu: sudo apt-get install $optional)" >&2
}

# $1: the packages, one word each. apt-get's output is shown only when it fails.
apt_install() {
    local log status
    echo "npu-hil: installing $1 (apt-get)" >&2
    log=$(mktemp)
    # shellcheck disable=SC2086  # one word per package
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends $1; } >"$log" 2>&1
    status=$?
    [ "$status" = 0 ] || tail -n 5 "$log" >&2
    rm -f "$log"
    return "$status"
}

job=${1:-checks}
case "$job" in
    checks | suites | sdk-matrix) ;;
    *)
        echo "tools/provision.sh JOB: JOB is 'checks', 'suites' or 'sdk-matrix', not '$job'" >&2
        exit 2
        ;;
esac
needs="npu-hil's $job job needs"
missing=$(missing_packages)
optional=$(missing_optional)
[ -z "$missing$optional" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    note_optional
    [ -z "$missing" ] && exit 0
    echo "$needs $missing: install first (Debian/Ubuntu: sudo apt-get install $missing), or run as root to have it done" >&2
    exit 1
fi
if [ -n "$missing" ]; then
    if ! apt_install "$missing"; then
        echo "$needs $missing: apt-get could not install it; install first and run again" >&2
        exit 1
    fi
    missing=$(missing_packages)
    if [ -n "$missing" ]; then
        echo "$needs $missing: still missing after apt-get; install first and run again" >&2
        exit 1
    fi
fi
# Apart, so that a failure here costs only the tests that skip without them.
optional=$(missing_optional)
[ -z "$optional" ] || apt_install "$optional"
note_optional
