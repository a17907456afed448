"""The extracted text of an operator-list PDF as pages, sections and bullet trees.

``pdftotext -layout`` separates pages with form feeds and ends each page with its printed
page number; every page but the chapter openers starts with a running header. Section
headings stand at the left margin (``3.2.62 Transpose``), bullets are ``•`` (level 1),
``–`` (level 2), ``*`` (level 3) and ``·`` (level 4); a few entries use ``‑ **…**``
markdown leftovers for level-2 bullets. Lines without a bullet either continue the wrapped
line above or, after a line ending in a colon, start a statement of their own
(``设置 pad 时注意:`` and the rules under it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_PAGE_NUMBER = re.compile(r"^\s*(\d+|[ivx]+)\s*$")
# Running headers, chapter openers, and the chapter-3 contents box that closes its last page.
_RUNNING_HEADER = re.compile(r"^(Chapter \d+\.|文档内容:|.*OP 规格介绍\s*$)")
CHAPTER = re.compile(r"^\s*CHAPTER\s+\d+\s*$")  # a chapter opener ends the last section
# A heading's number starts at 1 and its title with a letter (``3.2.62 Transpose``, ``4.1 注:``).
# A formula's line is neither: RV1103B's exGelu writes its LaTeX over two lines, ``$y=`` and
# ``0.5 * x * (1 + Tanh(…)) $``, and the second, read as section 0.5, ended the entry there.
HEADING = re.compile(r"^(?P<number>[1-9]\d*(?:\.\d+)+) (?P<title>[^\W\d_].*?)\s*$")
_BULLETS = {"•": 1, "–": 2, "*": 3, "·": 4}
_BULLET = re.compile(r"^(?P<indent>\s*)(?P<mark>[•–*·])\s+(?P<text>.*)$")
_MARKDOWN_BULLET = re.compile(r"^(?P<indent>\s*)‑\s+(?:\*\*(?P<bold>.*)\*\*|(?P<text>.*))$")
# An unbulleted line that states a rule of its own rather than continuing the line above.
_STATEMENT = re.compile(r"^(不支持|仅支持|当|不同|设置|要求|注|目前)")
_ENDS_HEADER = re.compile(r"[:：]\s*$")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line of the text file
    page: int  # the printed page number
    text: str


@dataclass(eq=False)  # items compare by identity: two bullets may read the same
class Item:
    """One bullet (or statement) with the lines that continue it, and its children."""

    level: int
    lines: list[Line]
    children: list[Item] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The lines joined; a word hyphenated across lines ("chan‑" / "nel_end") made whole."""
        out = ""
        for line in self.lines:
            part = line.text.strip()
            out = out[:-1] + part if out.endswith("‑") else (f"{out} {part}" if out else part)
        return out

    @property
    def verbatim(self) -> str:
        return "\n".join(line.text.strip() for line in self.lines)

    @property
    def page(self) -> int:
        return self.lines[0].page

    def walk(self) -> Iterator[Item]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class Section:
    number: str  # "3.2.62"
    title: str  # "Transpose"
    page: int
    line: int
    body: list[Line]


def pages(text: str) -> list[Line]:
    """Every content line with its printed page number; headers, footers and blanks dropped."""
    out: list[Line] = []
    number = 0
    for page in text.split("\f"):
        rows = page.split("\n")
        content = [r for r in rows if r.strip()]
        page_no = 0
        if content and _PAGE_NUMBER.match(content[-1]) and content[-1].strip().isdigit():
            page_no = int(content[-1])
        for row in rows:
            number += 1
            if not row.strip() or _RUNNING_HEADER.match(row):
                continue
            if _PAGE_NUMBER.match(row):
                continue
            out.append(Line(number, page_no, row.rstrip()))
        number -= 1  # the form feed sits on the last line of the page, not a line of its own
    return out


def sections(lines: list[Line], prefix: str) -> list[Section]:
    """The sections numbered ``prefix`` plus one more part (``"3.2."``: ``3.2.1``, ...), in
    document order, each with its body up to the next heading of any level.

    Table-of-contents lines end in page numbers after dot leaders and never match."""
    found: list[Section] = []
    depth = prefix.count(".")
    collecting = False
    for line in lines:
        match = HEADING.match(line.text)
        if CHAPTER.match(line.text):
            collecting = False
            continue
        if match and ". ." not in line.text:
            number = match["number"]
            collecting = number.startswith(prefix) and number.count(".") == depth
            if collecting:
                found.append(Section(number, match["title"], line.page, line.number, []))
            continue
        if collecting:
            found[-1].body.append(line)
    return found


def items(lines: list[Line]) -> list[Item]:
    """The bullet tree of a block of lines (level-0 items are unbulleted paragraphs)."""
    roots: list[Item] = []
    stack: list[Item] = []
    for line in lines:
        level, text = _classify(line.text)
        clean = Line(line.number, line.page, text)
        previous = stack[-1] if stack else None
        if level is None:
            if previous is None:
                level = 0
            elif _ENDS_HEADER.search(previous.lines[-1].text):
                level = previous.level + 1  # the rules under "设置 pad 时注意:"
            elif _STATEMENT.match(text):
                level = previous.level  # the next of those rules
            else:
                previous.lines.append(clean)  # a wrapped line
                continue
        item = Item(level, [clean])
        while stack and stack[-1].level >= level:
            stack.pop()
        (stack[-1].children if stack else roots).append(item)
        stack.append(item)
    return roots


def _classify(raw: str) -> tuple[int | None, str]:
    match = _BULLET.match(raw)
    if match:
        return _BULLETS[match["mark"]], match["text"]
    match = _MARKDOWN_BULLET.match(raw)
    if match:
        bold = match["bold"]
        return (2, bold) if bold is not None else (3, match["text"] or "")
    return None, raw.strip()


# A block heading, also with a stray level-1 bullet before it (``• 输入列表``) or an
# asterisk after it (``输入列表 *``), leftovers of the PDF's markup that must not turn the
# block into description. A fused entry names the entry whose limits it states
# (``说明及规格限制同Convolution``, ``其余说明同 Mul``).
BLOCK = re.compile(
    r"^\s*(?:•\s+)?(?P<block>输入列表|输出列表|数据类型约束|属性列表|广播约束|其他支持|支持说明)"
    r"(?:\s+\*)?\s*$"
    r"|^(?:说明及规格限制同|其余说明同)\s*(?P<same_as>\S+)\s*$"
)


@dataclass
class Entry:
    """A section split at its block headings: description, then ``输入列表`` and the rest."""

    section: Section
    description: list[Line]
    blocks: dict[str, list[Item]]
    same_as: str | None


def entry(section: Section) -> Entry:
    description: list[Line] = []
    raw: dict[str, list[Line]] = {}
    current: list[Line] | None = None
    same_as = None
    for line in section.body:
        match = BLOCK.match(line.text)
        if match and match["same_as"]:
            same_as = match["same_as"]
            current = None
        elif match:
            current = raw.setdefault(match["block"], [])
        elif current is None:
            description.append(line)
        else:
            current.append(line)
    return Entry(section, description, {k: items(v) for k, v in raw.items()}, same_as)
