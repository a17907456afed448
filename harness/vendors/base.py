"""The ``Vendor`` record: what a vendor package hands the harness (``harness.vendors``).

The stages are vendor-neutral; a vendor fills them in. The plugin and the CLI use only what
this record holds. Its core is required: the vendor's name, its platforms, its documents and
the operators probed on a platform. Everything else is optional, and the default says the
vendor has none of it: no simulator, no board target, no SDK releases to choose from, no case
sources of its own, no caches, no commands. A vendor registers its record under the
``npu_hil.vendors`` entry-point group, so it can live in another distribution.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.boards.inventory import Board, Runtimes
from harness.cases.case import Case
from harness.diskcache import CacheFolder
from harness.documented.documents import Document
from harness.documented.operators import OperatorCatalogue
from harness.judge.checks import Judge
from harness.models import DECLARATIONS, Declarations
from harness.models.builder import OPSET
from harness.pipeline import GENERIC_JUDGE, Recipe
from harness.report.bundle import NO_RECIPE_FILES, RecipeFiles
from harness.targets.job import Job
from harness.targets.settings import BuildSettings
from harness.targets.target import BoardTarget, Target

if TYPE_CHECKING:
    from harness.terminal import Registrar

# (timeout_s, result cache folder or None, SDK or None: this environment's) -> the simulator
Simulator = Callable[[float, Path | None, str | None], AbstractContextManager[Target]]
# (board, conversion cache folder or None: the vendor's shared one, timeout_s, SDK or None)
BoardTargetFactory = Callable[
    [Board, Path | None, float, str | None], AbstractContextManager[BoardTarget]
]


def no_versions() -> dict[str, str]:
    return {}


def no_sdk_choice(spec: str | None) -> list[str]:
    """A vendor without SDK releases to choose from runs on one, unnamed."""
    if spec is None:
        return [""]
    raise ValueError(f"--sdk {spec}: this vendor has no SDK releases to choose from")


def nothing_documented(platform: str) -> dict[str, Any]:
    return {}


def not_judged_against(case: Case, sdk: str) -> dict[str, str]:
    return {}


def no_recipe(job: Job) -> Mapping[str, bytes]:
    return {}


def nothing_missing() -> str | None:
    return None


def nothing_allowed(platform: str) -> Mapping[str, str]:
    return {}


def no_platforms() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True)
class Vendor:
    """A vendor: the required core first, then what it may add."""

    name: str
    platforms: tuple[str, ...]
    # Its operator documents, every published version (as printed, "V2.3.2") -> document.
    documents: Callable[[], Mapping[str, Document]]
    # The operators probed on a platform: its documented operators, their limits read.
    operators: Callable[[str], OperatorCatalogue]
    # What a run targets without --platform when this vendor is the run's (its first platform)
    default_platform: str = ""
    # Host-side tool versions every run records
    versions: Callable[[], dict[str, str]] = no_versions
    # The ``--sdk`` value (None: the default) -> the SDK releases to run on, oldest first;
    # raises ValueError with the reason (not installed, say).
    sdks: Callable[[str | None], list[str]] = no_sdk_choice
    # Its own model declarations: its toolkit's own operators, its case sources' models, the
    # layers its compiled models name operators by (the neutral operators' are always there).
    models: Declarations = field(default_factory=lambda: Declarations({}))
    # Suite name (``pytest.mark.hil_suite``) -> the cases of a platform ("all": every one):
    # the suites it ships. A suite another vendor ships is no error in its runs.
    case_sources: Mapping[str, Callable[[str], list[Case]]] = field(default_factory=dict)
    # What the vendor's documents say for a platform, as run.json entries the report lists:
    # titled groups of documented rows (``harness.report.documented_rows.DOCUMENTED_KEY``).
    documented: Callable[[str], dict[str, Any]] = nothing_documented
    # (case, SDK) -> record ``source`` fields: the document the SDK is judged against
    # ("judged_against", "fallback" when it has none of its own, "document_changed", ...).
    judged_against: Callable[[Case, str], dict[str, str]] = not_judged_against
    judge: Judge = GENERIC_JUDGE  # the generic observers plus the vendor's
    recipe: Recipe = no_recipe  # the files that reproduce a job with the vendor's own tools
    # What that recipe writes into a case folder, as a repro bundle copies and requires it
    bundle_files: RecipeFiles = NO_RECIPE_FILES
    # The newest ONNX opset its toolkit takes: a user's newer model is lowered to it; at least
    # the opset npu-hil builds its own case models at (``harness.models.builder.OPSET``)
    max_opset: int = OPSET
    runtimes: Runtimes = field(default_factory=dict)  # the runtimes its board files may name
    # A platform -> the CPU layers a user's whole model may have without a fallback (layer
    # type -> why): those its toolkit keeps on the CPU by design where its document lets the
    # platform's CPU run them (``Case.cpu_allowed``)
    cpu_allowed: Callable[[str], Mapping[str, str]] = nothing_allowed
    # Compiled layer type -> the type it stands for (a release's renames of a layer)
    layer_aliases: Mapping[str, str] = field(default_factory=dict)
    simulator: Simulator | None = None  # None: its cases run only on its boards
    board_target: BoardTargetFactory | None = None  # None: it runs on no board
    simulator_cache: CacheFolder | None = None  # the simulator's result cache (``--hil-cache``)
    # Models converted for its boards (``--hil-conversion-cache``)
    conversion_cache: CacheFolder | None = None
    # The known issues of its default run (``--known-issues vendor``), or None: it ships none
    known_issues: Path | None = None
    # Its own subcommands by group: "hil" (``hil sdk``), "boards", "layout" (``hil layout X``)
    commands: Mapping[str, Sequence[Registrar]] = field(default_factory=dict)
    # ONNX operator type -> the entries its documents name it by, where the names differ
    # (Conv -> Convolution): what ``hil docs show Conv`` shows
    operator_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The data types of its own cases besides the operators' (each a ``-m`` mark)
    dtypes: tuple[str, ...] = ()
    # What this host lacks to run its cases (its toolkit is not installed), or None
    missing: Callable[[], str | None] = nothing_missing
    # The names of its libraries, tools and packages, which no neutral module may say
    library_names: tuple[str, ...] = ()
    # A repro bundle's "How to run" section: what reproducing a case needs and how (Markdown
    # lines), for a record's platform; none: the bundle says only what the case folder holds
    how_to_run: Callable[[str], Sequence[str]] | None = None
    # A user's own settings of its toolkit's builds, from a file (``hil run --toolkit-config``):
    # raises SettingsError naming the file, the key and the value; None: it takes none
    build_settings: Callable[[Path], BuildSettings] | None = None
    # Platform -> why its toolkit builds int8 only there: what ``hil run`` builds by default
    int8_only: Callable[[], Mapping[str, str]] = no_platforms

    def __post_init__(self) -> None:
        if not self.platforms:
            raise ValueError(f"vendor {self.name!r}: no platforms")
        if self.max_opset < OPSET:
            raise ValueError(
                f"vendor {self.name!r}: max_opset {self.max_opset} is below the opset {OPSET} "
                "npu-hil builds its case models at"
            )
        if not self.default_platform:
            object.__setattr__(self, "default_platform", self.platforms[0])
        if self.default_platform not in self.platforms:
            raise ValueError(
                f"vendor {self.name!r}: default_platform {self.default_platform!r} is not one "
                f"of its platforms {', '.join(self.platforms)}"
            )

    @functools.cached_property
    def declarations(self) -> Declarations:
        """The models of its runs: the vendor-neutral operators' and its own."""
        return DECLARATIONS | self.models

    def on_board(
        self, board: Board, conversions: Path | None, timeout_s: float, sdk: str | None
    ) -> AbstractContextManager[BoardTarget]:
        """``board_target``; a LookupError when the vendor runs cases on no board (its boards
        name its runtimes, so a vendor without a board target has none)."""
        if self.board_target is None:
            raise LookupError(self.not_runnable(on_board=True))
        return self.board_target(board, conversions, timeout_s, sdk)

    def target(
        self, board: Board | None, timeout_s: float, cache: str
    ) -> AbstractContextManager[Target]:
        """On the default SDK: ``board`` when one is given, else the simulator with its
        result cache in folder ``cache`` ("off": none). A LookupError says why there is no
        such target (``not_runnable``)."""
        if board is not None:
            return self.on_board(board, None, timeout_s, None)
        if self.simulator is None:
            raise LookupError(self.not_runnable())
        return self.simulator(timeout_s, None if cache == "off" else Path(cache), None)

    def not_runnable(self, on_board: bool = False) -> str:
        """Why this host cannot run the vendor's cases, called when it lacks the target: no
        board target (``on_board``), else no simulator."""
        if on_board:
            return f"vendor {self.name} runs cases on no board: not runnable here"
        return (
            f"vendor {self.name} has no simulator and no board of the platform is configured: "
            "not runnable on this host"
        )
