"""``hil docs``: the vendor's operator documents as the catalogue reads them.

    hil docs show OP|--op T|--entry E [--platform P] [--version V]
                                                    an operator's whole entry: section, page,
                                                    description, notes, each limit's verbatim
                                                    text and structured reading, and the
                                                    platform-wide rules (chapter 4.1) that
                                                    apply
    hil docs diff V1 V2 [--platform P]              limits added, removed and changed
    hil docs stats                                  entries, structured and free-text limits

``--platform`` takes any target of a platform group (rk3566 and rk3568 both name 3.1; in any
case), ``--version`` the document version (V2.3.2 or 2.3.2; default the newest), OP the
document's name or the ONNX type (Conv shows Convolution). ``--op ONNX_TYPE`` and ``--entry
NAME`` select as ``pytest`` and ``hil probe`` do: the entries documenting exactly that ONNX
operator (no fused entry), or the entry headed so. Exit status: 0,
or for ``diff`` 0 when the versions do not differ and 1 when they do; 2 on bad input
(an unknown platform, version or operator).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from harness.cli.names import add_vendor_option, command_vendor, document_version, operator_names
from harness.documented.documents import Document, Entry, Group, diff, reading, stats
from harness.documented.limits import Limit
from harness.documented.selection import OperatorSelection, SelectionError, entries_naming
from harness.terminal import emit
from harness.vendors.base import Vendor

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


class _BadInput(Exception):
    pass


def register(subparsers: Subparsers) -> None:
    """Add ``hil docs`` (``show``, ``diff``, ``stats``) to the ``hil`` parser."""
    parser = subparsers.add_parser(
        "docs",
        help="the vendor's operator documents: limits, versions compared, coverage",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="docs_command", metavar="COMMAND", required=True)
    show = commands.add_parser("show", help="an operator's documented limits")
    show.add_argument(
        "op",
        nargs="?",
        help="operator as headed in the document, or its ONNX type (case-insensitive)",
    )
    show.add_argument(
        "--op",
        dest="onnx_types",
        action="append",
        default=[],
        metavar="ONNX_TYPE",
        help="the entries documenting this ONNX operator type (Conv: Convolution and "
        "Depthwise Convolution, no fused entry); repeatable",
    )
    show.add_argument(
        "--entry",
        dest="entries",
        action="append",
        default=[],
        metavar="NAME",
        help="this entry of the document, as headed; repeatable",
    )
    show.add_argument("--platform", help="any target of a platform group (default: every)")
    show.add_argument(
        "--version", type=document_version, help="document version, e.g. V2.3.2 or 2.3.2"
    )
    add_vendor_option(show)
    show.set_defaults(handler=_show)
    changes = commands.add_parser("diff", help="limits that changed between two versions")
    changes.add_argument("old", type=document_version, help="document version, e.g. V2.2.0")
    changes.add_argument("new", type=document_version, help="document version, e.g. V2.3.2")
    changes.add_argument("--platform", help="any target of a platform group (default: every)")
    add_vendor_option(changes)
    changes.set_defaults(handler=_diff)
    counts = commands.add_parser("stats", help="entries and structured limits per group")
    add_vendor_option(counts)
    counts.set_defaults(handler=_stats)


def _vendor(args: argparse.Namespace) -> Vendor:
    """The run's vendor, whose documents the command reads; ``--platform`` one of its own."""
    try:
        return command_vendor(args)
    except LookupError as error:
        raise _BadInput(str(error)) from None


def _version(docs: Mapping[str, Document], version: str | None) -> Document:
    if version is None:
        return docs[list(docs)[-1]]
    if version not in docs:
        raise _BadInput(f"unknown document version {version!r}; known: {', '.join(docs)}")
    return docs[version]


def _groups(doc: Document, platform: str | None) -> list[Group]:
    if platform is None:
        return list(doc.groups)
    try:
        return [doc.group(platform)]
    except LookupError as error:
        raise _BadInput(str(error)) from None


def _run(name: str, body: Callable[[list[str]], int]) -> int:
    """Run a subcommand that collects its lines; bad input is exit status 2 and nothing on
    stdout."""
    out: list[str] = []
    try:
        status = body(out)
    except _BadInput as error:
        emit(f"hil docs {name}: {error}\n", err=True)
        return 2
    emit("".join(f"{line}\n" for line in out))
    return status


def _limit_lines(limit: Limit) -> list[str]:
    mark = f"  INCONSISTENT: {limit.inconsistent}" if limit.inconsistent else ""
    page = f"  [p. {limit.page}]" if limit.page else ""  # a document without pages: none
    lines = [f"  {limit.id}{page}", f"    reading: {reading(limit)}{mark}"]
    return lines + [f"    | {line}" for line in limit.text.splitlines()]


def _show(args: argparse.Namespace) -> int:
    selection = OperatorSelection(tuple(args.onnx_types), tuple(args.entries))
    if bool(selection) == (args.op is not None):
        emit("hil docs show: give an operator, or --op ONNX_TYPE or --entry NAME\n", err=True)
        return 2

    def body(out: list[str]) -> int:
        vendor = _vendor(args)
        doc = _version(vendor.documents(), args.version)
        groups = [*_groups(doc, args.platform), doc.cpu]
        if selection:
            onnx_names = vendor.operator_names
            return _show_selected(doc, groups, selection, args.platform, onnx_names, out)
        documented = [name for group in groups for e in group.entries for name in e.names()]
        try:
            names = operator_names(args.op, documented, vendor.operator_names)
        except LookupError as error:
            what, hint = error.args
            where = f" for {args.platform}" if args.platform else ""
            raise _BadInput(f"{doc.version} documents {what}{where}{hint}") from None
        found = False
        platform_groups = groups[:-1]  # the chapter-3 groups; the CPU chapter is last
        for group in groups:
            for entry in filter(None, map(group.entry, names)):
                found = True
                targets = group.targets or tuple(t for g in platform_groups for t in g.targets)
                out.extend(_entry_lines(doc, group, entry, targets))
        if not found:
            where = f" for {args.platform}" if args.platform else ""
            raise _BadInput(f"{doc.version} documents no operator {args.op!r}{where}")
        return 0

    return _run("show", body)


def _show_selected(
    doc: Document,
    groups: list[Group],
    selection: OperatorSelection,
    platform: str | None,
    names: Mapping[str, tuple[str, ...]],
    out: list[str],
) -> int:
    """``--op``/``--entry``: each group's entries the selection names, as ``pytest`` and
    ``hil probe`` select their operators."""
    try:
        operators = selection.operators(groups, names)
    except SelectionError as error:
        raise _BadInput(str(error)) from None
    platform_groups = groups[:-1]
    for group in groups:
        targets = group.targets or tuple(t for g in platform_groups for t in g.targets)
        for entry in entries_naming(group, operators):
            out.extend(_entry_lines(doc, group, entry, targets))
    if not out:
        where = f" for {platform}" if platform else ""
        raise _BadInput(f"{doc.version} documents no entry {selection.describe()} names{where}")
    return 0


def _entry_lines(doc: Document, group: Group, entry: Entry, targets: tuple[str, ...]) -> list[str]:
    """The whole entry: heading, description, what it fuses and adopts, the unsupported
    marker, the platform-wide rules for ``targets``, each limit, the notes and the headings
    (the lines that state no rule of their own)."""
    out = [
        f"{entry.name}: {doc.title} {doc.version} § {entry.section} ({group.name})"
        + (f", p. {entry.page}" if entry.page else "")
    ]
    out += [f"  {line}" for line in entry.description.splitlines() if line.strip()]
    unsupported = [lim for lim in entry.limits if lim.kind == "absent"]
    if unsupported:
        out.append(f"  UNSUPPORTED on {group.name}: {unsupported[0].text}")
    if entry.fuses:
        out.append(f"  fuses: {' + '.join(entry.fuses)}")
    if entry.same_as:
        out.append(f"  limits: same as {entry.same_as} (§ {_section_of(group, entry.same_as)})")
    if entry.inconsistent:
        out.append(f"  INCONSISTENT: {entry.inconsistent}")
    out += _platform_rules(doc, entry, targets)
    for limit in entry.limits:
        out.extend(_limit_lines(limit))
    if entry.notes:
        out.append("  notes (no rule):")
        out += [f"    | {line}" for note in entry.notes for line in note.splitlines()]
    if entry.headings:
        out.append("  headings (no rule of their own):")
        out += [f"    | {line}" for line in entry.headings]
    return [*out, ""]


def _platform_rules(doc: Document, entry: Entry, targets: tuple[str, ...]) -> list[str]:
    """Chapter 4.1's CPU rules for the ``targets`` they name: none at all, or a list."""
    out = []
    for rule in doc.notes:
        named = [t for t in rule.rule.get("targets", ()) if t in targets]
        if not named:
            continue
        cpu = [str(v) for v in rule.values or ()]
        if not cpu:
            said = "no CPU operator runs there: a layer the NPU does not take cannot run"
        elif entry.name in cpu:
            said = f"{entry.name} is among the CPU operators it lists"
        else:
            said = f"{entry.name} is not among the CPU operators it lists"
        where = rule.source.rsplit("§ ", 1)[-1]
        out.append(f"  platform-wide rule (§ {where}; {', '.join(named)}): {said}")
        out.append(f"    | {rule.text}")
    return out


def _section_of(group: Group, name: str) -> str:
    entry = group.entry(name)
    return entry.section if entry else "not in this group"


def _diff(args: argparse.Namespace) -> int:
    def body(out: list[str]) -> int:
        docs = _vendor(args).documents()
        old, new = _version(docs, args.old), _version(docs, args.new)
        total = 0
        for group in _groups(new, args.platform):
            try:
                before = old.group(group.targets[0])
            except LookupError:
                out.append(f"{group.section} {group.name}: not in {old.version}")
                total += 1
                continue
            changes = diff(before, group)
            total += len(changes)
            counted = {
                k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "changed")
            }
            out.append(
                f"{group.section} {group.name}: {old.version} -> {new.version}: "
                + ", ".join(f"{n} {k}" for k, n in counted.items())
            )
            for change in changes:
                out.append(f"  {change.kind:8} {change.key}")
                if change.old is not None:
                    out.append(
                        f"    {old.version}: {reading(change.old)}  [§ {_where(change.old)}]"
                    )
                if change.new is not None:
                    out.append(
                        f"    {new.version}: {reading(change.new)}  [§ {_where(change.new)}]"
                    )
        return 1 if total else 0

    return _run("diff", body)


def _where(limit: Limit) -> str:
    section = limit.source.rsplit("§ ", 1)[-1]
    return f"{section}, p. {limit.page}" if limit.page else section


def _stats(args: argparse.Namespace) -> int:
    def body(out: list[str]) -> int:
        docs = _vendor(args).documents()
        header = (
            "version",
            "section",
            "group",
            "entries",
            "limits",
            "structured",
            "free-text",
            "share",
            "absent",
            "inconsistent",
        )
        rows = [header]
        for version, doc in docs.items():
            for group in [*doc.groups, doc.cpu, *doc.model_io]:
                c = stats(group)
                rows.append(
                    (
                        version,
                        group.section,
                        group.name,
                        str(c.entries),
                        str(c.limits),
                        str(c.structured),
                        str(c.free_text),
                        f"{c.share:.1%}",
                        str(c.absent),
                        str(c.inconsistent),
                    )
                )
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        return 0

    return _run("stats", body)
